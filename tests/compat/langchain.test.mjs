// LangChain JS (@langchain/openai ChatOpenAI) against a real `ggufd serve` (run by ctest as
// LangChain.Compat, see tests/CMakeLists.txt): usage: node langchain.test.mjs with GGUFD_BINARY
// and GGUFD_MODEL in the environment. Exits 77 (ctest: skipped) when the shared model is absent.
// Runs against the model's generic tool-call format and the Qwen3 chat template.
// Without parallel_tool_calls the server allows one call under a forced tool_choice (the 260K
// model would never choose to stop calling); most tests also bind parallel_tool_calls: false, and
// the last test checks LangChain's defaults.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, importPackage, toolServers } from './server.mjs';

const { ChatOpenAI } = await importPackage('@langchain/openai');
const { tool } = await importPackage('@langchain/core/tools');
const { AIMessage, AIMessageChunk, HumanMessage, SystemMessage, ToolMessage } = await importPackage('@langchain/core/messages');
const { z } = await importPackage('zod');

const Weather = z.object({
  city: z.string().max(12).describe('the city'),
  unit: z.enum(['celsius', 'fahrenheit']),
});
const Time = z.object({ zone: z.enum(['UTC', 'CET', 'PST']) });

const toolRuns = [];
const getWeather = tool(async ({ city, unit }) => {
  toolRuns.push({ city, unit });
  return JSON.stringify({ city, temperature: unit === 'celsius' ? 21 : 70 });
}, { name: 'get_weather', description: 'Current weather in a city', schema: Weather });
const getTime = tool(async ({ zone }) => `12:00 ${zone}`,
                     { name: 'get_time', description: 'Current time in a time zone', schema: Time });
const schemas = { get_weather: Weather, get_time: Time };

// Asserts LangChain's parsed tool calls: an id, an offered name, args an object that validates.
function checkToolCalls(message, allowed) {
  assert.ok(message.tool_calls.length >= 1, `tool calls: ${JSON.stringify(message)}`);
  assert.deepEqual(message.invalid_tool_calls ?? [], [], 'every call parsed');
  for (const call of message.tool_calls) {
    assert.ok(allowed.includes(call.name), `${call.name} is one of ${allowed}`);
    assert.equal(typeof call.id, 'string');
    assert.match(call.id, /^call_/);
    assert.equal(call.type, 'tool_call');
    assert.equal(typeof call.args, 'object');
    assert.deepEqual(schemas[call.name].parse(call.args), call.args);
  }
  return message.tool_calls;
}

// Character for withStructuredOutput: bounded strings, an integer range, an enum, a nested array.
const Character = z.object({
  name: z.string().max(16),
  age: z.number().int().min(1).max(120),
  mood: z.enum(['happy', 'sad', 'calm']),
  friends: z.array(z.object({ name: z.string().max(8), kind: z.enum(['cat', 'dog', 'bird']) })).min(1).max(2),
}).describe('A story character');

for (const variant of toolServers) {
  describe(`LangChain ChatOpenAI (${variant.name})`, { skip: variant.skip }, () => {
    let server;
    let llm;    // room for calls and objects
    let brief;  // short text answers

    before(async () => {
      server = await startServer({ args: variant.args, ctxSize: 2048 });
      const options = { configuration: { baseURL: server.url }, apiKey: 'unused', model: 'stories',
                        temperature: 0, maxRetries: 0, timeout: 120000 };
      llm = new ChatOpenAI({ ...options, maxTokens: 200 });
      brief = new ChatOpenAI({ ...options, maxTokens: 24 });
    });

    after(async () => {
      if (server) assert.equal(await server.stop(), 0, 'ggufd exits 0 on SIGTERM');
    });

    test('plain invoke', async () => {
      const m = await brief.invoke([new SystemMessage('Be brief.'), new HumanMessage('Tell me a story.')]);
      assert.ok(m instanceof AIMessage);
      assert.equal(typeof m.content, 'string');
      assert.ok(m.content.length > 0);
      assert.deepEqual(m.tool_calls, []);
      assert.ok(m.usage_metadata.output_tokens > 0 && m.usage_metadata.output_tokens <= 24);
    });

    test("bindTools with tool_choice 'any' → AIMessage.tool_calls with args objects", async () => {
      const bound = llm.bindTools([getWeather, getTime], { tool_choice: 'any', parallel_tool_calls: false });
      const m = await bound.invoke('What is the weather in Paris?');
      assert.ok(m instanceof AIMessage);
      checkToolCalls(m, ['get_weather', 'get_time']);
      assert.equal(m.response_metadata.finish_reason, 'tool_calls');
    });

    test('bindTools with a named tool_choice calls that tool', async () => {
      for (const name of ['get_time', 'get_weather']) {
        const bound = llm.bindTools([getWeather, getTime], { tool_choice: name, parallel_tool_calls: false });
        const m = await bound.invoke('What is the weather in Paris?');
        const calls = checkToolCalls(m, [name]);
        assert.equal(calls.length, 1);
      }
    });

    test('streamed chunks concatenate to the same tool calls as invoke', async () => {
      const bound = llm.bindTools([getWeather, getTime], { tool_choice: 'any', parallel_tool_calls: false });
      const input = 'Time in Berlin and the weather there?';
      const whole = await bound.invoke(input);
      checkToolCalls(whole, ['get_weather', 'get_time']);
      let merged;
      let n = 0;
      for await (const chunk of await bound.stream(input)) {
        assert.ok(chunk instanceof AIMessageChunk);
        merged = merged ? merged.concat(chunk) : chunk;
        ++n;
      }
      assert.ok(n >= 2);
      checkToolCalls(merged, ['get_weather', 'get_time']);
      const strip = (calls) => calls.map(({ name, args }) => ({ name, args }));
      assert.deepEqual(strip(merged.tool_calls), strip(whole.tool_calls));
      // The raw chunks: names and ids came once per call, arguments joined to JSON.
      for (const [i, c] of merged.tool_call_chunks.entries()) {
        assert.equal(c.name, whole.tool_calls[i].name);
        assert.deepEqual(JSON.parse(c.args), whole.tool_calls[i].args);
        assert.match(c.id, /^call_/);
      }
      assert.equal(merged.response_metadata.finish_reason, 'tool_calls');
    });

    test('tool round trip with ToolMessage → a text answer', async () => {
      toolRuns.length = 0;
      const bound = llm.bindTools([getWeather], { tool_choice: 'get_weather', parallel_tool_calls: false });
      const messages = [new HumanMessage('What is the weather in Paris?')];
      const ai = await bound.invoke(messages);
      const calls = checkToolCalls(ai, ['get_weather']);
      messages.push(ai);
      for (const call of calls) {
        const result = await getWeather.invoke(call);  // a ToolCall in → a ToolMessage out
        assert.ok(result instanceof ToolMessage);
        assert.equal(result.tool_call_id, call.id);
        messages.push(result);
      }
      assert.equal(toolRuns.length, calls.length);
      assert.deepEqual(toolRuns, calls.map((c) => c.args));
      // Next turn with the tools still bound (auto): the tiny model answers in text.
      const answer = await brief.bindTools([getWeather]).invoke(messages);
      assert.equal(typeof answer.content, 'string');
      assert.ok(answer.content.length > 0);
      assert.deepEqual(answer.tool_calls, []);
      assert.ok(['stop', 'length'].includes(answer.response_metadata.finish_reason));
      // Hand-written ToolMessages (plain string content) for the same calls work too.
      const manual = await brief.invoke([
        messages[0], ai, ...calls.map((c) => new ToolMessage({ tool_call_id: c.id, content: 'sunny, 21 C' })),
      ]);
      assert.equal(typeof manual.content, 'string');
      assert.ok(manual.content.length > 0);
    });

    test("withStructuredOutput(zod, { method: 'functionCalling' }) → a parsed object", async () => {
      const structured = llm.withStructuredOutput(Character, { method: 'functionCalling', name: 'character' });
      for (const prompt of ['Describe a character.', 'Who is the hero of the story?']) {
        const c = await structured.invoke(prompt, { parallel_tool_calls: false });
        assert.deepEqual(Character.parse(c), c);
        assert.deepEqual(Object.keys(c), ['name', 'age', 'mood', 'friends']);
      }
      const raw = await llm.withStructuredOutput(Character, { method: 'functionCalling', name: 'character', includeRaw: true })
        .invoke('Describe a character.', { parallel_tool_calls: false });
      assert.ok(raw.raw instanceof AIMessage);
      assert.ok(raw.raw.tool_calls.length >= 1);
      for (const call of raw.raw.tool_calls) assert.equal(call.name, 'character');
      assert.deepEqual(raw.parsed, Character.parse(raw.raw.tool_calls[0].args));
    });

    // LangChain's defaults send no parallel_tool_calls (neither bindTools nor withStructuredOutput).
    test("defaults (no parallel_tool_calls): bindTools 'any' and withStructuredOutput",
         async () => {
           checkToolCalls(await llm.bindTools([getWeather, getTime], { tool_choice: 'any' }).invoke('Time in Paris?'),
                          ['get_weather', 'get_time']);
           const c = await llm.withStructuredOutput(Character, { method: 'functionCalling', name: 'character' })
             .invoke('Describe a character.');
           assert.deepEqual(Character.parse(c), c);
         });
  });
}
