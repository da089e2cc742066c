// Structured output and tool calls through the official SDKs against a
// running `ember serve` with the tiny preset (random weights): usage: node
// structured_test.mjs URL API_KEY. A random model writes JSON or a tool call
// only because the server constrains its tokens: response_format json_schema,
// and tool_choice "required" / a named tool (Anthropic "any" / "tool"), which
// force the call's arguments to match the tool's parameter schema.
import assert from 'node:assert/strict';
import { openai, anthropic, MODEL, user, check, runChecks } from './harness.mjs';

const weatherSchema = {
  type: 'object',
  properties: {
    city: { type: 'string', maxLength: 10 },
    temp: { type: 'integer', minimum: -40, maximum: 50 },
    unit: { enum: ['C', 'F'] },
    alerts: { type: 'array', items: { type: 'string', maxLength: 5 }, maxItems: 2 },
  },
  required: ['city', 'temp', 'unit'],
  additionalProperties: false,
};

// The schema above, checked by hand: every key known, every bound kept.
function assertWeather(v) {
  assert.equal(typeof v, 'object');
  assert.deepEqual(Object.keys(v).filter(k => !['city', 'temp', 'unit', 'alerts'].includes(k)), []);
  assert.ok(typeof v.city === 'string' && [...v.city].length <= 10, `city ${JSON.stringify(v.city)}`);
  assert.ok(Number.isInteger(v.temp) && v.temp >= -40 && v.temp <= 50, `temp ${v.temp}`);
  assert.ok(['C', 'F'].includes(v.unit), `unit ${v.unit}`);
  if ('alerts' in v) assert.ok(Array.isArray(v.alerts) && v.alerts.length <= 2 && v.alerts.every(a => [...a].length <= 5));
}

const weatherTool = { type: 'function', function: { name: 'weather', description: 'The weather now', parameters: weatherSchema } };
const timeTool = { type: 'function', function: { name: 'time', description: 'The time now', parameters: { type: 'object', properties: {} } } };

check('response_format json_schema: every sample parses and validates', async () => {
  for (const seed of [1, 2, 3, 4]) {
    const r = await openai.chat.completions.create({
      model: MODEL, messages: user('Weather in JSON'), max_tokens: 200, temperature: 1, seed,
      response_format: { type: 'json_schema', json_schema: { name: 'weather', schema: weatherSchema, strict: true } } });
    assert.equal(r.choices[0].finish_reason, 'stop', r.choices[0].message.content);
    assertWeather(JSON.parse(r.choices[0].message.content));
  }
  const obj = await openai.chat.completions.create({
    model: MODEL, messages: user('Any JSON object'), max_tokens: 200, temperature: 0, response_format: { type: 'json_object' } });
  assert.ok(obj.choices[0].message.content.startsWith('{'));
  await assert.rejects(openai.chat.completions.create({ model: MODEL, messages: user('x'), max_tokens: 4,
    response_format: { type: 'json_schema', json_schema: { name: 'bad', schema: { type: 'string', pattern: 'a+' } } } }),
    e => e.status === 400 && /pattern/.test(e.message));
});

check('OpenAI tool call: required call, its result, and the answer after it', async () => {
  const messages = user('What is the weather in Oslo?');
  const r = await openai.chat.completions.create({
    model: MODEL, messages, max_tokens: 200, temperature: 0, tools: [weatherTool, timeTool], tool_choice: 'required' });
  const choice = r.choices[0];
  assert.equal(choice.finish_reason, 'tool_calls');
  assert.equal(choice.message.tool_calls.length, 1);
  const call = choice.message.tool_calls[0];
  assert.ok(['weather', 'time'].includes(call.function.name));
  if (call.function.name === 'weather') assertWeather(JSON.parse(call.function.arguments));
  else assert.deepEqual(JSON.parse(call.function.arguments), {});
  const named = await openai.chat.completions.create({
    model: MODEL, messages, max_tokens: 200, temperature: 0, tools: [weatherTool, timeTool],
    tool_choice: { type: 'function', function: { name: 'weather' } } });
  const weatherCall = named.choices[0].message.tool_calls[0];
  assert.equal(weatherCall.function.name, 'weather');
  assertWeather(JSON.parse(weatherCall.function.arguments));
  // The result goes back as a tool message; the template shows the model its call and the result.
  const after = await openai.chat.completions.create({
    model: MODEL, max_tokens: 8, temperature: 0, tools: [weatherTool, timeTool],
    messages: [...messages, named.choices[0].message, { role: 'tool', tool_call_id: weatherCall.id, content: '{"temp": -3}' }] });
  assert.ok(after.usage.prompt_tokens > named.usage.prompt_tokens + 10);
  assert.equal(typeof after.choices[0].message.content, 'string');
});

check('OpenAI tool call streamed as tool-call deltas rebuilds the same call', async () => {
  const body = { model: MODEL, messages: user('Weather?'), max_tokens: 200, temperature: 0, tools: [weatherTool],
                 tool_choice: { type: 'function', function: { name: 'weather' } } };
  const whole = await openai.chat.completions.create(body);
  const stream = openai.chat.completions.stream(body);
  const final = await stream.finalChatCompletion();
  assert.equal(final.choices[0].finish_reason, 'tool_calls');
  const [a, b] = [whole.choices[0].message.tool_calls[0], final.choices[0].message.tool_calls[0]];
  assert.equal(b.function.name, a.function.name);
  assert.deepEqual(JSON.parse(b.function.arguments), JSON.parse(a.function.arguments));
});

check('Anthropic tool_use: forced call, tool_result round trip, streamed input_json_delta', async () => {
  const tools = [{ name: 'weather', description: 'The weather now', input_schema: weatherSchema }];
  const messages = user('Weather in Oslo?');
  const m = await anthropic.messages.create({ model: MODEL, max_tokens: 200, temperature: 0, messages, tools,
                                              tool_choice: { type: 'tool', name: 'weather' } });
  assert.equal(m.stop_reason, 'tool_use');
  const use = m.content.find(b => b.type === 'tool_use');
  assert.equal(use.name, 'weather');
  assert.ok(use.id.startsWith('toolu_'));
  assertWeather(use.input);
  const any = await anthropic.messages.create({ model: MODEL, max_tokens: 200, temperature: 0, messages, tools, tool_choice: { type: 'any' } });
  assert.equal(any.stop_reason, 'tool_use');
  const after = await anthropic.messages.create({ model: MODEL, max_tokens: 8, temperature: 0, tools, messages: [
    ...messages, { role: 'assistant', content: m.content },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'snow, -3 C' }] }] });
  assert.ok(['end_turn', 'max_tokens', 'tool_use'].includes(after.stop_reason));
  assert.ok(after.usage.input_tokens + after.usage.cache_read_input_tokens > m.usage.input_tokens + m.usage.cache_read_input_tokens);
  const streamed = await anthropic.messages.stream({ model: MODEL, max_tokens: 200, temperature: 0, messages, tools,
                                                     tool_choice: { type: 'tool', name: 'weather' } }).finalMessage();
  assert.equal(streamed.stop_reason, 'tool_use');
  assert.deepEqual(streamed.content.find(b => b.type === 'tool_use').input, use.input);
});

await runChecks('structured');
