// A bounded load test against a running `ember serve`: usage: node load_test.mjs URL API_KEY.
// Many concurrent streaming clients of both APIs, mixed with malformed
// requests and clients that hang up mid-stream, for at most ~30 s. Every
// valid request must complete; afterwards the engine must be idle (and the
// shutdown in serve_test.sh checks that every KV block is free or cached).
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';

const [url, key] = process.argv.slice(2);
const openai = new OpenAI({ baseURL: `${url}/v1`, apiKey: key, maxRetries: 0, timeout: 60_000 });
const anthropic = new Anthropic({ baseURL: url, apiKey: key, maxRetries: 0, timeout: 60_000 });
const started = Date.now();
let seed = 12345;
const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);

async function openaiStream(i) {
  const stream = await openai.chat.completions.create({
    model: 'tiny', messages: [{ role: 'user', content: `client ${i} ${'text '.repeat(i % 7)}` }],
    max_tokens: 8 + (i % 24), temperature: i % 2 ? 0.8 : 0, seed: i, stream: true });
  let finish = null;
  for await (const c of stream) finish = c.choices[0]?.finish_reason ?? finish;
  assert.ok(finish === 'stop' || finish === 'length', `client ${i}: no finish reason`);
}

async function anthropicStream(i) {
  const stream = anthropic.messages.stream({
    model: 'tiny', max_tokens: 8 + (i % 24), messages: [{ role: 'user', content: `anthropic client ${i}` }] });
  const m = await stream.finalMessage();
  assert.ok(['end_turn', 'max_tokens', 'stop_sequence'].includes(m.stop_reason), `client ${i}: ${m.stop_reason}`);
}

// Opens a stream and hangs up after the first bytes (or at once).
async function disconnect(i) {
  const abort = new AbortController();
  const r = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST', signal: abort.signal, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'tiny', messages: [{ role: 'user', content: `leaver ${i}` }], max_tokens: 400, stream: true }) });
  if (random() < 0.5) await r.body.getReader().read();
  abort.abort();
}

const malformed = ['{', '[]', '{"messages": 5}', '{"model": "tiny", "max_tokens": -1, "messages": []}', '\u0000\u0001',
                   '{"messages": [{"role": "user", "content": [{"type": "image"}]}], "max_tokens": 3}', 'null',
                   '{"messages": [{"role": "user", "content": "x"}], "temperature": 1e999}'];
async function bad(i) {
  const path = i % 2 ? '/v1/messages' : '/v1/chat/completions';
  const r = await fetch(`${url}${path}`, {
    method: 'POST', headers: { authorization: `Bearer ${key}`, 'x-api-key': key }, body: malformed[i % malformed.length] });
  assert.ok(r.status >= 400 && r.status < 500, `malformed ${i}: status ${r.status}`);
  await r.json();  // an error body in the API's JSON shape
}

const valid = [], other = [];
for (let i = 0; i < 40; ++i) valid.push(i % 3 === 2 ? anthropicStream(i) : openaiStream(i));
for (let i = 0; i < 16; ++i) other.push(disconnect(i).catch(() => {}));
for (let i = 0; i < 24; ++i) other.push(bad(i));
const results = await Promise.allSettled([...valid, ...other]);
const failed = results.filter(r => r.status === 'rejected');
if (failed.length) {
  console.log(`FAIL ${failed.length} requests failed; first: ${failed[0].reason?.stack ?? failed[0].reason}`);
  process.exit(1);
}

// The engine drains: nothing running or waiting once every client is done.
let metrics = '';
for (let t = 0; t < 100; ++t) {
  metrics = await (await fetch(`${url}/metrics`)).text();
  if (/ember_requests_running 0\n/.test(metrics) && /ember_requests_waiting 0\n/.test(metrics)) break;
  await new Promise(r => setTimeout(r, 100));
}
assert.match(metrics, /ember_requests_running 0\n/);
assert.match(metrics, /ember_requests_waiting 0\n/);
const seconds = (Date.now() - started) / 1000;
assert.ok(seconds < 30, `load test took ${seconds} s`);
console.log(`load: 40 streams completed, 16 disconnects, 24 malformed requests refused, in ${seconds.toFixed(1)} s`);
