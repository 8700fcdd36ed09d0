// The Vercel AI SDK (ai + @ai-sdk/openai-compatible, its provider for OpenAI-compatible servers)
// against a real `ggufd serve` (run by ctest as AISDK.Compat, see tests/CMakeLists.txt): usage:
// node ai_sdk.test.mjs with GGUFD_BINARY and GGUFD_MODEL in the environment. Exits 77 (ctest:
// skipped) when the shared model is absent. Runs against the model's generic tool-call format
// and the Qwen3 chat template.
// Without parallel_tool_calls the server allows one call under a forced toolChoice (the 260K model
// would never choose to stop calling); most tool tests also send parallel_tool_calls: false through
// the provider's pass-through options (providerOptions.ggufd), and the last test checks the SDK's
// defaults.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, importPackage, toolServers } from './server.mjs';

const { createOpenAICompatible } = await importPackage('@ai-sdk/openai-compatible');
const { generateText, streamText, tool, stepCountIs } = await importPackage('ai');
const { z } = await importPackage('zod');

const Weather = z.object({
  city: z.string().max(12).describe('the city'),
  unit: z.enum(['celsius', 'fahrenheit']),
});
const Time = z.object({ zone: z.enum(['UTC', 'CET', 'PST']) });
const schemas = { weather: Weather, time: Time };

const executed = [];
const tools = {
  weather: tool({
    description: 'Current weather in a city',
    inputSchema: Weather,
    execute: async ({ city, unit }) => {
      executed.push({ tool: 'weather', city, unit });
      return { city, temperature: unit === 'celsius' ? 21 : 70 };
    },
  }),
  time: tool({
    description: 'Current time in a time zone',
    inputSchema: Time,
    execute: async ({ zone }) => {
      executed.push({ tool: 'time', zone });
      return { time: '12:00', zone };
    },
  }),
};

// Asserts the SDK's tool calls (validated by the SDK against inputSchema: `invalid` marks one
// that was not) and that each has its executed result; returns [{ toolName, input }].
function checkToolCalls(toolCalls, toolResults, allowed) {
  assert.ok(toolCalls.length >= 1, 'at least one tool call');
  const ids = new Set();
  for (const call of toolCalls) {
    assert.equal(call.type, 'tool-call');
    assert.ok(!call.invalid, `a valid call: ${JSON.stringify(call)}`);
    assert.ok(!call.dynamic, `a call of a declared tool: ${JSON.stringify(call)}`);
    assert.ok(allowed.includes(call.toolName), `${call.toolName} is one of ${allowed}`);
    assert.match(call.toolCallId, /^call_/);
    assert.ok(!ids.has(call.toolCallId), 'unique call ids');
    ids.add(call.toolCallId);
    assert.deepEqual(schemas[call.toolName].parse(call.input), call.input);
  }
  assert.equal(toolResults.length, toolCalls.length);
  for (const [i, res] of toolResults.entries()) {
    assert.equal(res.type, 'tool-result');
    assert.equal(res.toolCallId, toolCalls[i].toolCallId);
    assert.equal(res.toolName, toolCalls[i].toolName);
    assert.deepEqual(res.input, toolCalls[i].input);
    if (res.toolName === 'weather') assert.deepEqual(res.output, { city: res.input.city, temperature: res.input.unit === 'celsius' ? 21 : 70 });
    else assert.deepEqual(res.output, { time: '12:00', zone: res.input.zone });
  }
  return toolCalls.map(({ toolName, input }) => ({ toolName, input }));
}

// Runs streamText to the end; fails on an error part (streamText reports errors in the stream
// rather than by throwing). Returns the result with its awaited fields and the parts.
async function runStream(options) {
  const result = streamText({ ...options, onError: () => {} });
  const parts = [];
  for await (const part of result.fullStream) parts.push(part);
  const errors = parts.filter((p) => p.type === 'error' || p.type === 'tool-error');
  assert.deepEqual(errors.map((p) => String(p.error)), [], 'no error parts');
  return {
    parts,
    toolCalls: await result.toolCalls,
    toolResults: await result.toolResults,
    finishReason: await result.finishReason,
    text: await result.text,
    steps: await result.steps,
  };
}

for (const variant of toolServers) {
  describe(`AI SDK openai-compatible provider (${variant.name})`, { skip: variant.skip }, () => {
    let server;
    let model;

    before(async () => {
      server = await startServer({ args: variant.args, ctxSize: 2048 });
      const provider = createOpenAICompatible({ baseURL: server.url, name: 'ggufd', apiKey: 'unused' });
      model = provider('stories');
    });

    after(async () => {
      if (server) assert.equal(await server.stop(), 0, 'ggufd exits 0 on SIGTERM');
    });

    const common = () => ({ model, maxRetries: 0, maxOutputTokens: 200, temperature: 0 });
    // Passed into the request body by @ai-sdk/openai-compatible (providerOptions[name]).
    const oneCall = { providerOptions: { ggufd: { parallel_tool_calls: false } } };

    test('generateText: plain text', async () => {
      const r = await generateText({ ...common(), prompt: 'Tell me a story.', maxOutputTokens: 8 });
      assert.equal(typeof r.text, 'string');
      assert.ok(r.text.length > 0);
      assert.ok(['stop', 'length'].includes(r.finishReason));
      assert.ok(r.usage.outputTokens > 0 && r.usage.outputTokens <= 8, JSON.stringify(r.usage));
      assert.deepEqual(r.toolCalls, []);
    });

    test("generateText with tools and toolChoice 'required' → a valid tool call and its result", async () => {
      executed.length = 0;
      const r = await generateText({ ...common(), ...oneCall, tools, toolChoice: 'required', prompt: 'What is the weather in Paris?' });
      assert.equal(r.finishReason, 'tool-calls');
      const calls = checkToolCalls(r.toolCalls, r.toolResults, ['weather', 'time']);
      assert.equal(executed.length, calls.length, 'execute ran once per call');
      assert.equal(r.steps.length, 1, 'one step: the default stopWhen stops after the tool results');
      // The request the provider sent: OpenAI's tool_choice and function tools with JSON schemas.
      const body = typeof r.request.body === 'string' ? JSON.parse(r.request.body) : r.request.body;
      assert.equal(body.tool_choice, 'required');
      assert.deepEqual(body.tools.map((t) => t.function.name), ['weather', 'time']);
      assert.equal(body.parallel_tool_calls, false);
    });

    test('a named toolChoice calls that tool', async () => {
      for (const toolName of ['time', 'weather']) {
        const r = await generateText({ ...common(), ...oneCall, tools, toolChoice: { type: 'tool', toolName }, prompt: 'What is the weather in Paris?' });
        assert.equal(r.finishReason, 'tool-calls');
        checkToolCalls(r.toolCalls, r.toolResults, [toolName]);
      }
    });

    test('streamText gives the same tool calls as generateText', async () => {
      for (const toolChoice of ['required', { type: 'tool', toolName: 'time' }]) {
        const options = { ...common(), ...oneCall, tools, toolChoice, prompt: 'Time in Berlin, and the weather there?' };
        const whole = await generateText(options);
        const wholeCalls = checkToolCalls(whole.toolCalls, whole.toolResults, ['weather', 'time']);
        const streamed = await runStream(options);
        assert.equal(streamed.finishReason, 'tool-calls');
        assert.deepEqual(checkToolCalls(streamed.toolCalls, streamed.toolResults, ['weather', 'time']), wholeCalls);
        // The provider turned the argument deltas into tool-input-* parts, one start and end per call.
        const starts = streamed.parts.filter((p) => p.type === 'tool-input-start');
        const ends = streamed.parts.filter((p) => p.type === 'tool-input-end');
        assert.deepEqual(starts.map((p) => p.toolName), wholeCalls.map((c) => c.toolName));
        assert.equal(ends.length, starts.length);
        const deltas = streamed.parts.filter((p) => p.type === 'tool-input-delta');
        for (const [i, s] of starts.entries()) {
          const json = deltas.filter((d) => d.id === s.id).map((d) => d.delta).join('');
          assert.deepEqual(JSON.parse(json), wholeCalls[i].input);
        }
      }
    });

    test('a round trip: the tool result goes back and the model answers in text', async () => {
      for (const run of [generateText, runStream]) {
        executed.length = 0;
        const r = await run({
          ...common(), ...oneCall, tools, prompt: 'What is the weather in Paris?',
          stopWhen: stepCountIs(2),
          prepareStep: ({ stepNumber }) => (stepNumber === 0 ? { toolChoice: 'required' } : { toolChoice: 'auto' }),
        });
        assert.equal(r.steps.length, 2, `${run.name}: a tool step and an answer step`);
        const [first, second] = r.steps;
        assert.equal(first.finishReason, 'tool-calls');
        checkToolCalls(first.toolCalls, first.toolResults, ['weather', 'time']);
        assert.equal(executed.length, first.toolCalls.length);
        assert.deepEqual(second.toolCalls, []);
        assert.ok(['stop', 'length'].includes(second.finishReason));
        assert.equal(typeof second.text, 'string');
        assert.ok(second.text.length > 0);
        assert.equal(r.text, second.text);
        // The second request carried the assistant's tool_calls and the tool results.
        const body = typeof second.request.body === 'string' ? JSON.parse(second.request.body) : second.request.body;
        const assistant = body.messages.find((m) => m.role === 'assistant');
        assert.deepEqual(assistant.tool_calls.map((c) => c.id), first.toolCalls.map((c) => c.toolCallId));
        const toolMessages = body.messages.filter((m) => m.role === 'tool');
        assert.deepEqual(toolMessages.map((m) => m.tool_call_id), first.toolCalls.map((c) => c.toolCallId));
      }
    });

    test("SDK defaults (no parallel_tool_calls): toolChoice 'required' gives a finished call",
         async () => {
           const r = await generateText({ ...common(), tools, toolChoice: 'required', prompt: 'What is the weather in Paris?' });
           assert.equal(r.finishReason, 'tool-calls');
           checkToolCalls(r.toolCalls, r.toolResults, ['weather', 'time']);
         });
  });
}
