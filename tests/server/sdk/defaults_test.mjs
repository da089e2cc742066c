// A model's own default sampling through the SDKs: usage: node defaults_test.mjs URL API_KEY,
// against a server whose model file carries general.sampling.temp 0.9 (serve_test.sh
// writes it from a generation_config.json). A request that sets no temperature
// samples at 0.9; a request's own temperature wins.
import assert from 'node:assert/strict';
import { openai, anthropic, MODEL, user, check, runChecks } from './harness.mjs';

const chat = async extra => (await openai.chat.completions.create({
  model: MODEL, messages: user('Tell me something'), max_tokens: 16, ...extra })).choices[0].message.content;
const message = async extra => (await anthropic.messages.create({
  model: MODEL, max_tokens: 16, messages: user('Tell me something'), ...extra })).content.map(b => b.text ?? '').join('');

check('/v1/models shows the model\'s defaults', async () => {
  const models = await openai.models.list();
  assert.equal(models.data[0].sampling_defaults.temperature.toFixed(3), '0.900');
  assert.equal(models.data[0].sampling_defaults.source, 'general.sampling.*');
});

check('OpenAI: no temperature samples at the model\'s; the request\'s own wins', async () => {
  const greedy = await chat({ temperature: 0, seed: 1 });
  assert.equal(await chat({ temperature: 0, seed: 2 }), greedy, 'temperature 0 must be greedy whatever the seed');
  const sampled = [];
  for (const seed of [1, 2, 3]) {
    const text = await chat({ seed });
    assert.equal(text, await chat({ seed, temperature: 0.9 }), `seed ${seed}: not sampled at the model's 0.9`);
    sampled.push(text);
  }
  assert.ok(sampled.some(t => t !== greedy), 'no sampled answer differs from the greedy one');
  assert.ok(new Set(sampled).size > 1, 'the seeds gave one answer: not sampling');
});

check('Anthropic: no temperature samples at the model\'s; the request\'s own wins', async () => {
  const sampled = await message({});
  assert.equal(sampled, await message({ temperature: 0.9 }));
  assert.notEqual(sampled, await message({ temperature: 0 }));
});

await runChecks('defaults_test.mjs');
