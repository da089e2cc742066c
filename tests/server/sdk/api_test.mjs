// The official SDKs against a running `ember serve` (tests/server/serve_test.sh
// starts it with the tiny preset): usage: node api_test.mjs URL API_KEY.
// Each check prints its name; the first failure exits 1.
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { url, key, openai, anthropic, MODEL, user, check, runChecks } from './harness.mjs';

async function chat(messages, extra = {}) {
  return openai.chat.completions.create({ model: MODEL, messages, max_tokens: 16, temperature: 0, ...extra });
}
async function chatStreamed(messages, extra = {}) {
  const stream = await openai.chat.completions.create({
    model: MODEL, messages, max_tokens: 16, temperature: 0, stream: true, stream_options: { include_usage: true }, ...extra });
  let text = '', finish = null, usage = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      text += c.delta.content ?? '';
      finish = c.finish_reason ?? finish;
    }
  }
  return { text, finish, usage };
}
async function message(messages, extra = {}) {
  return anthropic.messages.create({ model: MODEL, max_tokens: 16, temperature: 0, messages, ...extra });
}
const textOf = m => m.content.filter(b => b.type === 'text').map(b => b.text).join('');

check('GET /v1/models lists the model', async () => {
  const models = await openai.models.list();
  assert.deepEqual(models.data.map(m => m.id), [MODEL]);
});

check('chat completion: text, finish reason and usage', async () => {
  const r = await chat(user('Hello there'));
  assert.equal(r.object, 'chat.completion');
  assert.equal(typeof r.choices[0].message.content, 'string');
  assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
  assert.ok(r.usage.prompt_tokens > 5);
  assert.ok(r.usage.completion_tokens >= 1 && r.usage.completion_tokens <= 16);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
});

check('chat stream text equals the whole answer at temperature 0; include_usage gives usage', async () => {
  const whole = await chat(user('Tell me a story'), { max_tokens: 24 });
  const streamed = await chatStreamed(user('Tell me a story'), { max_tokens: 24 });
  assert.equal(streamed.text, whole.choices[0].message.content);
  assert.equal(streamed.finish, whole.choices[0].finish_reason);
  assert.equal(streamed.usage.completion_tokens, whole.usage.completion_tokens);
});

check('completions: whole and streamed agree', async () => {
  const whole = await openai.completions.create({ model: MODEL, prompt: 'The quick brown fox', max_tokens: 12, temperature: 0 });
  const stream = await openai.completions.create({ model: MODEL, prompt: 'The quick brown fox', max_tokens: 12, temperature: 0, stream: true });
  let text = '';
  for await (const c of stream) text += c.choices[0]?.text ?? '';
  assert.equal(text, whole.choices[0].text);
  assert.equal(whole.object, 'text_completion');
});

check('a repeated conversation: turn 2 reuses all of turn 1 from the prefix cache', async () => {
  const turn1 = user('Remember the number forty-two, then tell me about rivers.');
  const r1 = await chat(turn1, { max_tokens: 8 });
  const turn2 = [...turn1, { role: 'assistant', content: r1.choices[0].message.content }, { role: 'user', content: 'And mountains?' }];
  const r2 = await chat(turn2, { max_tokens: 8 });
  // All of turn 1 but possibly its last token: the generation prompt ends in a newline that the
  // re-tokenized conversation may merge with the answer's first characters.
  assert.ok(r2.usage.prompt_tokens_details.cached_tokens >= r1.usage.prompt_tokens - 1,
    `cached ${r2.usage.prompt_tokens_details.cached_tokens} < turn 1 prompt ${r1.usage.prompt_tokens} - 1`);
  const again = await chat(turn1, { max_tokens: 8 });  // the same prompt again: all but its last token
  assert.equal(again.usage.prompt_tokens_details.cached_tokens, r1.usage.prompt_tokens - 1);
  const m1 = await message(user('Anthropic turn one about lakes.'), { max_tokens: 8 });
  const m2 = await message([...user('Anthropic turn one about lakes.'), { role: 'assistant', content: textOf(m1) },
                            { role: 'user', content: 'Turn two.' }], { max_tokens: 8 });
  assert.ok(m2.usage.cache_read_input_tokens >= m1.usage.input_tokens + m1.usage.cache_read_input_tokens - 1);
});

check('stop sequences end the text before them (both APIs)', async () => {
  const full = (await chat(user('Write anything at all'), { max_tokens: 32 })).choices[0].message.content;
  const chars = Array.from(full);
  assert.ok(chars.length >= 6, `answer too short to pick a stop string: ${JSON.stringify(full)}`);
  const stop = chars.slice(3, 5).join('');
  const expected = full.slice(0, full.indexOf(stop));
  const r = await chat(user('Write anything at all'), { max_tokens: 32, stop: [stop] });
  assert.equal(r.choices[0].message.content, expected);
  assert.equal(r.choices[0].finish_reason, 'stop');
  const m = await message(user('Write anything at all'), { max_tokens: 32, stop_sequences: [stop] });
  assert.equal(textOf(m), (await message(user('Write anything at all'), { max_tokens: 32 })).content[0].text.split(stop)[0]);
  assert.equal(m.stop_reason, 'stop_sequence');
  assert.equal(m.stop_sequence, stop);
});

check('seed: the same seed gives the same sample, others differ', async () => {
  const sample = async seed => (await chat(user('Surprise me'), { temperature: 1, seed, max_tokens: 12 })).choices[0].message.content;
  const a = await sample(7), b = await sample(7);
  assert.equal(a, b);
  const others = [await sample(8), await sample(9)];
  assert.ok(others.some(o => o !== a), 'seeds 7, 8 and 9 gave the same text');
});

check('16 concurrent greedy requests equal the same requests one by one', async () => {
  const prompts = Array.from({ length: 16 }, (_, i) => user(`Request number ${i}: ${'word '.repeat(i)}`));
  const alone = [];
  for (const p of prompts) alone.push((await chat(p, { max_tokens: 10 })).choices[0].message.content);
  const together = await Promise.all(prompts.map(p => chat(p, { max_tokens: 10 })));
  assert.deepEqual(together.map(r => r.choices[0].message.content), alone);
});

check('n = 2 at temperature 0 gives two equal choices; logprobs come per token', async () => {
  const r = await chat(user('Two of them'), { n: 2, max_tokens: 6, logprobs: true, top_logprobs: 3 });
  assert.equal(r.choices.length, 2);
  assert.equal(r.choices[0].message.content, r.choices[1].message.content);
  const lp = r.choices[0].logprobs.content;
  assert.equal(lp.length, r.usage.completion_tokens / 2);
  for (const t of lp) {
    assert.ok(t.logprob <= 0 && t.top_logprobs.length === 3);
    assert.equal(t.top_logprobs[0].logprob, t.logprob);  // greedy picks the most likely token
  }
});

check('predicted outputs: the same answer, usage tells how much of the prediction it took', async () => {
  const plain = await chat(user('Write something long'), { max_tokens: 40 });
  const text = plain.choices[0].message.content;
  assert.ok(text.length > 0);
  for (const stream of [false, true]) {
    const extra = { max_tokens: 40, prediction: { type: 'content', content: text } };
    const r = stream ? await chatStreamed(user('Write something long'), extra) : await chat(user('Write something long'), extra);
    assert.equal(stream ? r.text : r.choices[0].message.content, text);
    const details = r.usage.completion_tokens_details;
    assert.ok(details.accepted_prediction_tokens > 0, JSON.stringify(details));
  }
  // An edited prediction: the answer is still the model's own.
  const edited = text.slice(0, Math.floor(text.length / 2)) + ' something else entirely ' + text.slice(Math.floor(text.length / 2));
  const r = await chat(user('Write something long'), { max_tokens: 40, prediction: { type: 'content', content: [{ type: 'text', text: edited }] } });
  assert.equal(r.choices[0].message.content, text);
  const edits = r.usage.completion_tokens_details;
  assert.ok(edits.accepted_prediction_tokens > 0 && edits.rejected_prediction_tokens > 0, JSON.stringify(edits));
  await assert.rejects(chat(user('x'), { prediction: { type: 'content' } }),
    e => e instanceof OpenAI.BadRequestError && e.param === 'prediction');
});

check('anthropic message: content, stop reason, usage; stream events rebuild the same message', async () => {
  const m = await message(user('Hello Claude-style'), { system: 'Be nice.', max_tokens: 20 });
  assert.equal(m.type, 'message');
  assert.equal(m.role, 'assistant');
  assert.ok(['end_turn', 'max_tokens'].includes(m.stop_reason));
  assert.ok(m.usage.input_tokens + m.usage.cache_read_input_tokens > 5 && m.usage.output_tokens >= 1);
  const stream = anthropic.messages.stream({ model: MODEL, max_tokens: 20, temperature: 0, system: 'Be nice.', messages: user('Hello Claude-style') });
  const final = await stream.finalMessage();
  assert.equal(textOf(final), textOf(m));
  assert.equal(final.stop_reason, m.stop_reason);
  assert.equal(final.usage.output_tokens, m.usage.output_tokens);
});

check('anthropic tool_use and tool_result go through the template', async () => {
  const m = await message([
    { role: 'user', content: 'Weather?' },
    { role: 'assistant', content: [{ type: 'tool_use', id: 'tu1', name: 'weather', input: { city: 'Oslo' } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'tu1', content: 'snow' }] }],
    { tools: [{ name: 'weather', description: 'Weather now', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }] });
  assert.ok(m.usage.input_tokens + m.usage.cache_read_input_tokens > 40);
});

check('count_tokens equals the prompt a message is given', async () => {
  const msgs = user('How many tokens is this?');
  const counted = await anthropic.messages.countTokens({ model: MODEL, messages: msgs, system: 'sys' });
  const m = await message(msgs, { system: 'sys', max_tokens: 2 });
  assert.equal(counted.input_tokens, m.usage.input_tokens + m.usage.cache_read_input_tokens);
});

check('API keys: a wrong key is refused with 401 in each API', async () => {
  const badOpenai = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'wrong', maxRetries: 0 });
  await assert.rejects(badOpenai.models.list(), e => e instanceof OpenAI.AuthenticationError && e.status === 401);
  const badAnthropic = new Anthropic({ baseURL: url, apiKey: 'wrong', maxRetries: 0 });
  await assert.rejects(badAnthropic.messages.create({ model: MODEL, max_tokens: 2, messages: user('x') }),
    e => e instanceof Anthropic.AuthenticationError && e.error.error.type === 'authentication_error');
  const raw = await fetch(`${url}/v1/chat/completions`, { method: 'POST', body: '{}' });
  assert.equal(raw.status, 401);
  assert.equal((await raw.json()).error.code, 'invalid_api_key');
});

check('errors as the SDKs surface them', async () => {
  await assert.rejects(chat(user('x'), { temperature: 5 }), e => e instanceof OpenAI.BadRequestError && e.param === 'temperature');
  await assert.rejects(chat(user('x'), { model: 'gpt-nothing' }), e => e instanceof OpenAI.NotFoundError);
  await assert.rejects(chat(user('x'), { max_tokens: 100000 }), e => e instanceof OpenAI.BadRequestError && /context/.test(e.message));
  await assert.rejects(chat([{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:,' } }] }]),
    e => e instanceof OpenAI.BadRequestError);
  await assert.rejects(anthropic.messages.create({ model: MODEL, messages: user('x') }),
    e => e instanceof Anthropic.BadRequestError && e.error.error.type === 'invalid_request_error' && /max_tokens/.test(e.message));
  await assert.rejects(message([{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } }] }]),
    e => e instanceof Anthropic.BadRequestError && /image/.test(e.message));
  await assert.rejects(message(user('x'), { model: 'claude-nothing' }), e => e instanceof Anthropic.NotFoundError);
  const post = (path, body, headers = {}) =>
    fetch(`${url}${path}`, { method: 'POST', body, headers: { authorization: `Bearer ${key}`, 'x-api-key': key, ...headers } });
  let r = await post('/v1/chat/completions', '{"messages": [');
  assert.equal(r.status, 400);
  assert.equal((await r.json()).error.type, 'invalid_request_error');
  r = await post('/v1/messages', '{"model": 5}');
  assert.equal(r.status, 400);
  assert.equal((await r.json()).type, 'error');
  r = await post('/v1/messages', 'x'.repeat(9 << 20));
  assert.equal(r.status, 413);
  assert.equal((await r.json()).error.type, 'request_too_large');
});

check('SSE bytes of an OpenAI stream: data lines, blank lines, [DONE] last', async () => {
  const r = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, messages: user('SSE please'), max_tokens: 6, stream: true, stream_options: { include_usage: true } }) });
  assert.equal(r.status, 200);
  assert.match(r.headers.get('content-type'), /^text\/event-stream/);
  const body = await r.text();
  assert.match(body, /^(data: [^\n]+\n\n)+data: \[DONE\]\n\n$/);
  const events = body.split('\n\n').filter(Boolean).map(e => e.slice(6));
  const chunks = events.slice(0, -1).map(e => JSON.parse(e));
  assert.ok(chunks.every(c => c.object === 'chat.completion.chunk'));
  assert.equal(chunks[0].choices[0].delta.role, 'assistant');
  assert.ok(chunks.at(-2).choices[0].finish_reason);
  assert.deepEqual(chunks.at(-1).choices, []);
  assert.ok(chunks.at(-1).usage.completion_tokens >= 1);
});

check('SSE bytes of an Anthropic stream: named events in the documented order', async () => {
  const r = await fetch(`${url}/v1/messages`, {
    method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model: MODEL, messages: user('SSE please'), max_tokens: 6, stream: true }) });
  assert.match(r.headers.get('content-type'), /^text\/event-stream/);
  const body = await r.text();
  assert.match(body, /^(event: [a-z_]+\ndata: [^\n]+\n\n)+$/);
  const events = body.split('\n\n').filter(Boolean).map(e => {
    const [, name, data] = e.match(/^event: (.*)\ndata: (.*)$/);
    const parsed = JSON.parse(data);
    assert.equal(parsed.type, name);
    return name;
  }).filter(n => n !== 'ping');
  const squeezed = events.filter((n, i) => n !== 'content_block_delta' || events[i - 1] !== 'content_block_delta');
  assert.deepEqual(squeezed, ['message_start', 'content_block_start', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop']);
});

check('a client that hangs up mid-stream cancels its generation at once', async () => {
  const metric = async name => Number((await (await fetch(`${url}/metrics`)).text()).match(new RegExp(`^${name} (\\S+)$`, 'm'))[1]);
  const abort = new AbortController();
  const r = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST', signal: abort.signal, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, messages: user('Go on forever'), max_tokens: 480, stream: true, stream_options: { include_usage: true } }) });
  await r.body.getReader().read();
  // The first chunk comes before the engine admits the request (slow builds such as AddressSanitizer's show it).
  for (const t = Date.now(); await metric('ember_requests_running') !== 1;) {
    assert.ok(Date.now() - t < 10000, 'the request never started running');
    await new Promise(res => setTimeout(res, 10));
  }
  const before = await metric('ember_generated_tokens_total');
  const t0 = Date.now();
  abort.abort();
  while (await metric('ember_requests_running') !== 0) {
    assert.ok(Date.now() - t0 < 1000, 'still running 1 s after the client left');
    await new Promise(res => setTimeout(res, 10));
  }
  const generated = (await metric('ember_generated_tokens_total')) - before;
  assert.ok(generated < 480, `the abandoned request generated all ${generated} tokens`);
  console.log(`     (cancelled ${Date.now() - t0} ms after the hang-up, ${generated} of 480 tokens generated)`);
});

check('/health and /metrics', async () => {
  assert.equal((await fetch(`${url}/health`)).status, 200);
  const text = await (await fetch(`${url}/metrics`)).text();
  for (const name of ['ember_requests_total{route="/v1/chat/completions",status="200"}', 'ember_time_to_first_token_seconds_bucket',
                      'ember_inter_token_latency_seconds_count', 'ember_kv_blocks_free', 'ember_requests_waiting',
                      'ember_cached_prompt_tokens_total'])
    assert.ok(text.includes(name), `no ${name}`);
});

await runChecks('api');
