// The official `openai` npm client's Responses API (client.responses) against a real `ggufd serve`
// (ctest: Responses.OpenAIClient): create, stream, function tools and their round trip, structured
// output (json_schema through zodTextFormat), previous_response_id, retrieve / delete, and
// input_tokens; the tool tests run on the generic tool format and the Qwen3 template.
// Usage: node openai_responses.test.mjs with GGUFD_BINARY and GGUFD_MODEL set (77: skipped).
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, importPackage, toolServers } from './server.mjs';

const { default: OpenAI } = await importPackage('openai');
const { z } = await importPackage('zod');
const { zodTextFormat } = await importPackage('openai/helpers/zod');

const weatherTool = {
  type: 'function', name: 'get_weather', description: 'Current weather in a city', strict: true,
  parameters: {
    type: 'object', additionalProperties: false, required: ['city', 'unit'],
    properties: { city: { type: 'string', maxLength: 12 }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
  },
};

describe('openai client responses', () => {
  let server;
  let client;

  before(async () => {
    server = await startServer({ ctxSize: 2048 });
    client = new OpenAI({ baseURL: server.url, apiKey: 'unused', maxRetries: 0, timeout: 120000 });
  });

  after(async () => {
    if (server) assert.equal(await server.stop(), 0, 'ggufd exits 0 on SIGTERM');
  });

  test('responses.create: the response object and output_text', async () => {
    const r = await client.responses.create({ model: 'stories', input: 'Tell me a story.', max_output_tokens: 16,
                                              temperature: 0 });
    assert.equal(r.object, 'response');
    assert.match(r.id, /^resp_/);
    assert.ok(['completed', 'incomplete'].includes(r.status));
    assert.equal(typeof r.output_text, 'string');  // the client joins the message items' text
    const message = r.output.find((i) => i.type === 'message');
    assert.equal(message.content[0].type, 'output_text');
    assert.equal(r.output_text, message.content[0].text);
    assert.ok(r.usage.input_tokens > 0);
    assert.ok(r.usage.output_tokens <= 16);
    assert.equal(r.usage.total_tokens, r.usage.input_tokens + r.usage.output_tokens);
    assert.equal(typeof r.usage.input_tokens_details.cached_tokens, 'number');
  });

  test('responses.stream: events and the final response equal the unstreamed text', async () => {
    const req = { model: 'stories', input: 'The little dog', max_output_tokens: 16, temperature: 0 };
    const whole = await client.responses.create(req);
    const stream = client.responses.stream(req);
    let text = '';
    const types = new Set();
    stream.on('response.output_text.delta', (e) => { text += e.delta; });
    stream.on('event', (e) => types.add(e.type));
    const final = await stream.finalResponse();
    assert.equal(text, whole.output_text);
    assert.equal(final.output.find((i) => i.type === 'message').content[0].text, whole.output_text);
    for (const t of ['response.created', 'response.in_progress', 'response.output_item.added',
                     'response.content_part.added', 'response.output_text.done', 'response.output_item.done']) {
      assert.ok(types.has(t), t);
    }
    assert.ok(types.has('response.completed'));
  });

  test('create with stream: true iterates typed events with sequence numbers', async () => {
    const events = await client.responses.create({ model: 'stories', input: 'Once', max_output_tokens: 8, stream: true });
    let last = -1;
    for await (const e of events) {
      assert.equal(e.sequence_number, last + 1);
      last = e.sequence_number;
    }
    assert.ok(last >= 4);
  });

  test('json_schema through zodTextFormat: responses.parse gives the parsed object', async () => {
    const Story = z.object({ title: z.string().max(16), pages: z.number().int().min(1).max(9) });
    const r = await client.responses.parse({
      model: 'stories', input: 'Invent a story title', max_output_tokens: 80,
      text: { format: zodTextFormat(Story, 'story') },
    });
    assert.equal(typeof r.output_parsed.title, 'string');
    assert.ok(Number.isInteger(r.output_parsed.pages));
  });

  test('previous_response_id continues a stored conversation; retrieve and delete', async () => {
    const first = await client.responses.create({ model: 'stories', input: 'Tell me a story.', max_output_tokens: 6 });
    const again = await client.responses.retrieve(first.id);
    assert.equal(again.id, first.id);
    assert.deepEqual(again.output, first.output);
    const next = await client.responses.create({ model: 'stories', input: 'And then?', previous_response_id: first.id,
                                                 max_output_tokens: 6 });
    assert.ok(next.usage.input_tokens > first.usage.input_tokens);
    await client.responses.delete(first.id);
    await assert.rejects(client.responses.retrieve(first.id), (e) => e.status === 404);
  });

  test('input_tokens counts the prompt', async () => {
    const body = { model: 'stories', input: 'Tell me a story.', instructions: 'Be brief.' };
    const count = await client.post('/responses/input_tokens', { body });
    assert.equal(count.object, 'response.input_tokens');
    const r = await client.responses.create({ ...body, max_output_tokens: 1 });
    assert.equal(count.input_tokens, r.usage.input_tokens);
  });
});

for (const variant of toolServers) {
  describe(`openai client responses tools (${variant.name})`, { skip: variant.skip }, () => {
    let server;
    let client;

    before(async () => {
      server = await startServer({ args: variant.args, ctxSize: 2048 });
      client = new OpenAI({ baseURL: server.url, apiKey: 'unused', maxRetries: 0, timeout: 120000 });
    });

    after(async () => {
      if (server) assert.equal(await server.stop(), 0, 'ggufd exits 0 on SIGTERM');
    });

    test('function tools: a forced call, then its output handed back', async () => {
      const input = [{ role: 'user', content: 'What is the weather in Paris?' }];
      const r = await client.responses.create({ model: 'stories', input, tools: [weatherTool], tool_choice: 'required',
                                                max_output_tokens: 200 });
      const calls = r.output.filter((i) => i.type === 'function_call');
      assert.equal(calls.length, 1, JSON.stringify(r.output));
      assert.equal(calls[0].name, 'get_weather');
      const args = JSON.parse(calls[0].arguments);
      assert.ok(args.city.length <= 12);
      assert.ok(['celsius', 'fahrenheit'].includes(args.unit));
      const next = await client.responses.create({
        model: 'stories', tools: [weatherTool], max_output_tokens: 8,
        input: [...input, ...r.output, { type: 'function_call_output', call_id: calls[0].call_id, output: '21 C, sunny' }],
      });
      assert.ok(['completed', 'incomplete'].includes(next.status));
      assert.ok(next.usage.input_tokens > r.usage.input_tokens);
    });

    test('a named function choice, streamed: the call arrives complete', async () => {
      const stream = client.responses.stream({
        model: 'stories', input: 'Weather?', tools: [weatherTool], max_output_tokens: 200,
        tool_choice: { type: 'function', name: 'get_weather' },
      });
      let done = null;
      stream.on('response.function_call_arguments.done', (e) => { done = e.arguments; });
      const final = await stream.finalResponse();
      const call = final.output.find((i) => i.type === 'function_call');
      assert.equal(call.arguments, done);
      assert.equal(typeof JSON.parse(done).city, 'string');
    });
  });
}
