// Anthropic's official client (@anthropic-ai/sdk) against a real `ggufd serve`'s /v1/messages
// (ctest: Anthropic.SDK): create, stream, forced and round-trip tool use, stop sequences,
// count_tokens, an API key sent as x-api-key, and errors as the client's typed exceptions.
// Usage: node anthropic_sdk.test.mjs with GGUFD_BINARY and GGUFD_MODEL set (77: skipped).
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, importPackage, toolServers } from './server.mjs';

const { default: Anthropic } = await importPackage('@anthropic-ai/sdk');

const weatherTool = {
  name: 'get_weather', description: 'Current weather in a city',
  input_schema: {
    type: 'object', additionalProperties: false, required: ['city'],
    properties: { city: { type: 'string', maxLength: 12 } },
  },
};
const user = (content) => ({ role: 'user', content });

describe('anthropic client messages', () => {
  let server;
  let client;

  before(async () => {
    server = await startServer({ ctxSize: 2048, args: ['--api-key', 'sk-ant-test'] });
    // the client sends its key as x-api-key
    client = new Anthropic({ baseURL: server.base, apiKey: 'sk-ant-test', maxRetries: 0, timeout: 120000 });
  });

  after(async () => {
    if (server) assert.equal(await server.stop(), 0, 'ggufd exits 0 on SIGTERM');
  });

  test('messages.create', async () => {
    const m = await client.messages.create({ model: 'claude-sonnet-4-5', max_tokens: 12,
                                             messages: [user('Tell me a story.')] });
    assert.equal(m.type, 'message');
    assert.equal(m.role, 'assistant');
    assert.match(m.id, /^msg_/);
    assert.equal(m.content[0].type, 'text');
    assert.ok(['end_turn', 'max_tokens'].includes(m.stop_reason));
    assert.ok(m.usage.output_tokens <= 12);
    assert.ok(m.usage.input_tokens + m.usage.cache_read_input_tokens > 0);
  });

  test('messages.stream: text events and finalMessage equal the unstreamed message', async () => {
    const req = { model: 'x', max_tokens: 16, temperature: 0, system: 'Be brief.', messages: [user('The little dog')] };
    const whole = await client.messages.create(req);
    const stream = client.messages.stream(req);
    let text = '';
    stream.on('text', (t) => { text += t; });
    const final = await stream.finalMessage();
    assert.equal(text, whole.content[0].text);
    assert.equal(final.content[0].text, whole.content[0].text);
    assert.equal(final.stop_reason, whole.stop_reason);
  });

  test('stop_sequences: stop_reason stop_sequence names the one that matched', async () => {
    const m = await client.messages.create({ model: 'x', max_tokens: 60, temperature: 0, stop_sequences: [' ', 'e', 'a'],
                                             messages: [user('Once upon a time there was')] });
    assert.equal(m.stop_reason, 'stop_sequence');
    assert.ok([' ', 'e', 'a'].includes(m.stop_sequence));
  });

  test('count_tokens', async () => {
    const body = { model: 'x', system: 'Be brief.', messages: [user('Tell me a story.')], tools: [weatherTool] };
    const count = await client.messages.countTokens(body);
    const m = await client.messages.create({ ...body, max_tokens: 1 });
    assert.equal(count.input_tokens, m.usage.input_tokens + m.usage.cache_read_input_tokens);
  });

  test('errors are the client\'s typed errors', async () => {
    await assert.rejects(client.messages.create({ model: 'x', max_tokens: 5, messages: [{ role: 'user', content: [
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } }] }] }),
    (e) => e instanceof Anthropic.BadRequestError && e.error?.error?.type === 'invalid_request_error');
    const wrong = new Anthropic({ baseURL: server.base, apiKey: 'nope', maxRetries: 0 });
    await assert.rejects(wrong.messages.create({ model: 'x', max_tokens: 5, messages: [user('x')] }),
                         (e) => e instanceof Anthropic.AuthenticationError);
  });
});

for (const variant of toolServers) {
  describe(`anthropic client tools (${variant.name})`, { skip: variant.skip }, () => {
    let server;
    let client;

    before(async () => {
      server = await startServer({ args: variant.args, ctxSize: 2048 });
      client = new Anthropic({ baseURL: server.base, apiKey: 'unused', maxRetries: 0, timeout: 120000 });
    });

    after(async () => {
      if (server) assert.equal(await server.stop(), 0, 'ggufd exits 0 on SIGTERM');
    });

    test('forced tool use, then its result handed back', async () => {
      const messages = [user('Weather in Paris?')];
      const m = await client.messages.create({ model: 'x', max_tokens: 200, tools: [weatherTool],
                                               tool_choice: { type: 'tool', name: 'get_weather' }, messages });
      assert.equal(m.stop_reason, 'tool_use');
      const use = m.content.find((b) => b.type === 'tool_use');
      assert.equal(use.name, 'get_weather');
      assert.equal(typeof use.input.city, 'string');
      const next = await client.messages.create({
        model: 'x', max_tokens: 8, tools: [weatherTool],
        messages: [...messages, { role: 'assistant', content: m.content },
                   { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'sunny' }] }],
      });
      assert.equal(next.type, 'message');
    });

    test('tool_choice any, streamed: the input arrives as input_json_delta', async () => {
      const stream = client.messages.stream({ model: 'x', max_tokens: 200, tools: [weatherTool],
                                              tool_choice: { type: 'any', disable_parallel_tool_use: true },
                                              messages: [user('Weather?')] });
      const final = await stream.finalMessage();
      const use = final.content.find((b) => b.type === 'tool_use');
      assert.equal(use.name, 'get_weather');
      assert.equal(typeof use.input.city, 'string');
      assert.equal(final.stop_reason, 'tool_use');
    });
  });
}
