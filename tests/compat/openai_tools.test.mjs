// Tool calling through the official `openai` npm client against a real `ggufd serve` (run by
// ctest as OpenAIClient.Tools, see tests/CMakeLists.txt): usage: node openai_tools.test.mjs with
// GGUFD_BINARY and GGUFD_MODEL in the environment. Exits 77 (ctest: skipped) when the shared model
// is absent. Every test runs against two servers: the model's generic tool-call format
// (stories260K has no chat template) and the Qwen3 chat template (<tool_call> tags).
// With tool_choice "required" or a named function the server constrains the output to a valid
// call, so even the 260K-parameter model writes calls whose arguments match the schema.
// Without parallel_tool_calls the server allows one call under "required" or a named function (the
// 260K model would never choose to stop calling); most tests also say parallel_tool_calls: false,
// and the last test checks what the client sends by default.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, importPackage, toolServers } from './server.mjs';

const { default: OpenAI } = await importPackage('openai');
const { z } = await importPackage('zod');
const { zodFunction } = await importPackage('openai/helpers/zod');

// Bounded strings keep the tiny model's arguments short; enums and an integer range are what
// real tools use.
const Weather = z.object({
  city: z.string().max(12),
  unit: z.enum(['celsius', 'fahrenheit']),
});
const Time = z.object({
  zone: z.enum(['UTC', 'CET', 'PST']),
  hour24: z.boolean(),
});
const Search = z.object({
  query: z.string().max(16),
  limit: z.number().int().min(1).max(5),
});
const schemas = { get_weather: Weather, get_time: Time };

// zodFunction: the openai helper's strict function tools (additionalProperties false, every
// property required), parsed back by chat.completions.parse / runTools.
const weatherTool = zodFunction({ name: 'get_weather', description: 'Current weather in a city', parameters: Weather });
const timeTool = zodFunction({ name: 'get_time', description: 'Current time in a time zone', parameters: Time });
// A plain, non-strict tool as most clients write it by hand.
const searchTool = {
  type: 'function',
  function: {
    name: 'search',
    description: 'Search the stories',
    parameters: {
      type: 'object',
      properties: {
        query: { type: 'string', maxLength: 16 },
        limit: { type: 'integer', minimum: 1, maximum: 5 },
      },
      required: ['query', 'limit'],
    },
  },
};
const allSchemas = { ...schemas, search: Search };

const user = (content) => ({ role: 'user', content });

// Asserts the OpenAI shape of the tool calls of an unstreamed choice and that every call names
// an offered function whose arguments (a JSON string) validate against its schema; returns
// [{ name, args }].
function checkCalls(choice, allowed) {
  assert.equal(choice.finish_reason, 'tool_calls', JSON.stringify(choice));
  const { message } = choice;
  assert.equal(message.role, 'assistant');
  assert.ok(message.content === null || message.content === '', `content with only calls: ${JSON.stringify(message.content)}`);
  assert.ok(Array.isArray(message.tool_calls) && message.tool_calls.length >= 1, JSON.stringify(message));
  const ids = new Set();
  return message.tool_calls.map((call) => {
    assert.match(call.id, /^call_/);
    assert.ok(!ids.has(call.id), `unique ids: ${call.id}`);
    ids.add(call.id);
    assert.equal(call.type, 'function');
    assert.ok(allowed.includes(call.function.name), `${call.function.name} is one of ${allowed}`);
    assert.equal(typeof call.function.arguments, 'string');
    const args = JSON.parse(call.function.arguments);
    assert.deepEqual(allSchemas[call.function.name].parse(args), args, call.function.arguments);
    return { name: call.function.name, args };
  });
}

// Reassembles streamed chat chunks the way OpenAI's delta protocol defines them (and the
// client's ChatCompletionStream does): the first delta of a call carries index, id, type and
// function.name; later ones only index and function.arguments fragments. Returns
// { content, calls: [{ id, type, function: { name, arguments } }], finishes }.
function assembleStream(chunks) {
  const calls = [];
  let content = '';
  const finishes = [];
  assert.equal(new Set(chunks.map((c) => c.id)).size, 1, 'one id on every chunk');
  for (const chunk of chunks) {
    assert.equal(chunk.object, 'chat.completion.chunk');
    for (const choice of chunk.choices) {
      assert.equal(choice.index, 0);
      content += choice.delta?.content ?? '';
      for (const d of choice.delta?.tool_calls ?? []) {
        assert.equal(typeof d.index, 'number', JSON.stringify(d));
        const call = calls[d.index];
        if (!call) {
          assert.equal(d.index, calls.length, 'calls are opened in index order');
          assert.match(d.id, /^call_/, JSON.stringify(d));
          assert.equal(d.type, 'function', JSON.stringify(d));
          assert.equal(typeof d.function?.name, 'string', JSON.stringify(d));
          assert.ok(d.function.name.length > 0);
          calls[d.index] = { id: d.id, type: d.type, function: { name: d.function.name, arguments: d.function.arguments ?? '' } };
        } else {
          // Clients that concatenate every string field of a delta (LangChain's chunk merge)
          // need the id and name to come once.
          assert.ok(d.id === undefined || d.id === null || d.id === '', `id only in the first delta: ${JSON.stringify(d)}`);
          assert.ok(!d.function?.name, `name only in the first delta: ${JSON.stringify(d)}`);
          call.function.arguments += d.function?.arguments ?? '';
        }
      }
      if (choice.finish_reason) finishes.push(choice.finish_reason);
    }
  }
  return { content, calls, finishes };
}

const nameAndArgs = (calls) => calls.map((c) => ({ name: c.function.name, arguments: c.function.arguments }));

for (const variant of toolServers) {
  describe(`openai client tools (${variant.name})`, { skip: variant.skip }, () => {
    let server;
    let client;

    before(async () => {
      server = await startServer({ args: variant.args, ctxSize: 2048 });
      client = new OpenAI({ baseURL: server.url, apiKey: 'unused', maxRetries: 0, timeout: 120000 });
    });

    after(async () => {
      if (server) assert.equal(await server.stop(), 0, 'ggufd exits 0 on SIGTERM');
    });

    test('tool_choice required: calls of offered functions with schema-valid arguments', async () => {
      const names = new Set();
      for (const seed of [1, 2, 3]) {
        const r = await client.chat.completions.create({
          model: 'stories', messages: [user('What is the weather in Paris, and the time?')],
          tools: [weatherTool, timeTool, searchTool], tool_choice: 'required', parallel_tool_calls: false,
          max_tokens: 300, seed,
        });
        assert.equal(r.object, 'chat.completion');
        const calls = checkCalls(r.choices[0], ['get_weather', 'get_time', 'search']);
        assert.equal(calls.length, 1, JSON.stringify(r.choices[0].message));
        names.add(calls[0].name);
        assert.ok(r.usage.completion_tokens > 0);
      }
      assert.ok(names.size >= 1);
    });

    test('a named tool_choice forces that function; parallel_tool_calls false: one call', async () => {
      for (const [name, seed] of [['get_time', 1], ['search', 2], ['get_weather', 3]]) {
        const r = await client.chat.completions.create({
          model: 'stories', messages: [user('What is the weather in Paris?')],
          tools: [weatherTool, timeTool, searchTool], tool_choice: { type: 'function', function: { name } },
          parallel_tool_calls: false, max_tokens: 200, seed,
        });
        const calls = checkCalls(r.choices[0], [name]);
        assert.equal(calls.length, 1, JSON.stringify(r.choices[0].message));
      }
    });

    test('chat.completions.parse fills parsed_arguments of strict zodFunction tools', async () => {
      const r = await client.chat.completions.parse({
        model: 'stories', messages: [user('Weather in Rome?')],
        tools: [weatherTool], tool_choice: 'required', parallel_tool_calls: false, max_tokens: 200, seed: 4,
      });
      checkCalls(r.choices[0], ['get_weather']);
      const [call] = r.choices[0].message.tool_calls;
      assert.deepEqual(call.function.parsed_arguments, Weather.parse(JSON.parse(call.function.arguments)));
      assert.equal(typeof call.function.parsed_arguments.city, 'string');
    });

    test('streamed and unstreamed give the same calls (temperature 0)', async () => {
      for (const tool_choice of ['required', { type: 'function', function: { name: 'get_time' } }]) {
        const req = {
          model: 'stories', messages: [user('What time is it in Berlin? And the weather?')],
          tools: [weatherTool, timeTool, searchTool], tool_choice, parallel_tool_calls: false,
          max_tokens: 300, temperature: 0,
        };
        const whole = await client.chat.completions.create(req);
        checkCalls(whole.choices[0], tool_choice === 'required' ? ['get_weather', 'get_time', 'search'] : ['get_time']);

        const stream = await client.chat.completions.create({ ...req, stream: true, stream_options: { include_usage: true } });
        const chunks = [];
        for await (const chunk of stream) chunks.push(chunk);
        assert.equal(chunks[0].choices[0].delta.role, 'assistant');
        const usage = chunks.at(-1);
        assert.deepEqual(usage.choices, []);
        assert.equal(usage.usage.completion_tokens, whole.usage.completion_tokens);
        const { content, calls, finishes } = assembleStream(chunks);
        assert.deepEqual(finishes, ['tool_calls']);
        assert.equal(content, whole.choices[0].message.content ?? '');
        assert.deepEqual(nameAndArgs(calls), nameAndArgs(whole.choices[0].message.tool_calls));
        assert.notDeepEqual(calls.map((c) => c.id), whole.choices[0].message.tool_calls.map((c) => c.id),
                            'every response has its own call ids');

        // The client's streaming helper reassembles the same message (it throws on a call
        // without id, type, name or arguments) and parses strict tools' arguments.
        const runner = client.chat.completions.stream(req);
        const argsDone = [];
        runner.on('tool_calls.function.arguments.done', (e) => argsDone.push(e));
        const final = await runner.finalChatCompletion();
        assert.equal(final.choices[0].finish_reason, 'tool_calls');
        const finalCalls = final.choices[0].message.tool_calls;
        assert.deepEqual(nameAndArgs(finalCalls), nameAndArgs(whole.choices[0].message.tool_calls));
        assert.deepEqual(argsDone.map((e) => e.name), finalCalls.map((c) => c.function.name));
        for (const [i, e] of argsDone.entries()) {
          assert.equal(e.arguments, finalCalls[i].function.arguments);
          if (e.name !== 'search') assert.deepEqual(e.parsed_arguments, JSON.parse(e.arguments), 'strict tools are parsed');
        }
      }
    });

    test('round trip: the assistant tool_calls message and tool results back → a text answer', async () => {
      const messages = [user('What is the weather in Paris?')];
      const first = await client.chat.completions.create({
        model: 'stories', messages, tools: [weatherTool, timeTool], tool_choice: 'required', parallel_tool_calls: false,
        max_tokens: 300, seed: 5,
      });
      const calls = checkCalls(first.choices[0], ['get_weather', 'get_time']);
      // The response message as the client returned it (content null, refusal etc.), as
      // applications append it.
      messages.push(first.choices[0].message);
      for (const [i, call] of first.choices[0].message.tool_calls.entries()) {
        messages.push({ role: 'tool', tool_call_id: call.id,
                        content: JSON.stringify(calls[i].name === 'get_weather' ? { temperature: 21, sky: 'sunny' } : { time: '12:00' }) });
      }
      for (const tool_choice of ['none', 'auto']) {
        const r = await client.chat.completions.create({
          model: 'stories', messages, tools: [weatherTool, timeTool], tool_choice, max_tokens: 24, temperature: 0,
        });
        const { message, finish_reason } = r.choices[0];
        assert.ok(['stop', 'length'].includes(finish_reason), `${tool_choice}: ${JSON.stringify(r.choices[0])}`);
        assert.equal(typeof message.content, 'string');
        assert.ok(message.content.length > 0);
        assert.ok(!message.tool_calls?.length, JSON.stringify(message));
        assert.ok(r.usage.prompt_tokens > first.usage.prompt_tokens, 'the calls and results are in the prompt');
      }
      // The history without `tools` in the request is fine too (a final answer turn).
      const r = await client.chat.completions.create({ model: 'stories', messages, max_tokens: 8, temperature: 0 });
      assert.equal(typeof r.choices[0].message.content, 'string');
    });

    test('runTools: the named function runs once with parsed arguments (also streamed)', async () => {
      for (const stream of [false, true]) {
        const seen = [];
        const tool = zodFunction({
          name: 'get_weather', description: 'Current weather in a city', parameters: Weather,
          function: (args) => { seen.push(args); return { temperature: 21 }; },
        });
        const runner = client.chat.completions.runTools({
          model: 'stories', messages: [user('Weather in Oslo?')], tools: [tool],
          tool_choice: { type: 'function', function: { name: 'get_weather' } }, parallel_tool_calls: false,
          max_tokens: 200, seed: 6,
          ...(stream ? { stream: true } : {}),
        }, { maxChatCompletions: 1 });
        await runner.done();
        assert.equal(seen.length, 1, `stream ${stream}`);
        assert.deepEqual(Weather.parse(seen[0]), seen[0]);
        const toolMessages = runner.messages.filter((m) => m.role === 'tool');
        assert.equal(toolMessages.length, 1);
        assert.equal(toolMessages[0].content, '{"temperature":21}');
        const assistant = runner.messages.find((m) => m.role === 'assistant');
        assert.equal(toolMessages[0].tool_call_id, assistant.tool_calls[0].id);
      }
    });

    test('tool_choice none: a text answer, no calls', async () => {
      const r = await client.chat.completions.create({
        model: 'stories', messages: [user('What is the weather in Paris?')],
        tools: [weatherTool, timeTool], tool_choice: 'none', max_tokens: 16, temperature: 0,
      });
      const { message, finish_reason } = r.choices[0];
      assert.ok(['stop', 'length'].includes(finish_reason));
      assert.equal(typeof message.content, 'string');
      assert.ok(!message.tool_calls?.length, JSON.stringify(message));
    });

    test('a tool_choice naming no offered function is a 400', async () => {
      await assert.rejects(
        client.chat.completions.create({
          model: 'stories', messages: [user('hi')], tools: [weatherTool],
          tool_choice: { type: 'function', function: { name: 'no_such_tool' } }, max_tokens: 8,
        }),
        (e) => e instanceof OpenAI.BadRequestError && e.status === 400 && e.type === 'invalid_request_error' &&
               /no_such_tool/.test(e.message));
    });

    // What clients send by default: no parallel_tool_calls. OpenAI's default is parallel calls,
    // but llama.cpp's server defaults to false, and with a named function OpenAI writes one call.
    test('client defaults (no parallel_tool_calls): required and named give finished calls',
         async () => {
           for (const tool_choice of ['required', { type: 'function', function: { name: 'get_time' } }]) {
             const r = await client.chat.completions.create({
               model: 'stories', messages: [user('What time is it?')], tools: [weatherTool, timeTool],
               tool_choice, max_tokens: 300, seed: 7,
             });
             checkCalls(r.choices[0], tool_choice === 'required' ? ['get_weather', 'get_time'] : ['get_time']);
           }
         });
  });
}
