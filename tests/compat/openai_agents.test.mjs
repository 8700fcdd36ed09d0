// OpenAI's Agents SDK (@openai/agents, which speaks the Responses API by default) against a real
// `ggufd serve` (ctest: Agents.OpenAIAgents): a run whose agent calls a tool, the tool executes with
// the parsed arguments, and the run ends with its output; and a plain run to a text answer.
// Usage: node openai_agents.test.mjs with GGUFD_BINARY and GGUFD_MODEL set (77: skipped).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, importPackage } from './server.mjs';

const { default: OpenAI } = await importPackage('openai');
const { z } = await importPackage('zod');
const agents = await importPackage('@openai/agents');
const { Agent, run, tool, setDefaultOpenAIClient, setTracingDisabled, setOpenAIAPI } = agents;

let server;
const requests = [];

before(async () => {
  server = await startServer({ ctxSize: 2048 });
  const client = new OpenAI({
    baseURL: server.url, apiKey: 'unused', maxRetries: 0, timeout: 120000,
    // what the SDK sends, for the assertions below
    fetch: async (url, init) => {
      requests.push({ url: String(url), body: init?.body ? JSON.parse(init.body) : null });
      return fetch(url, init);
    },
  });
  setDefaultOpenAIClient(client);
  setOpenAIAPI('responses');  // the default; said for clarity
  setTracingDisabled(true);   // no traces to OpenAI's servers
});

after(async () => {
  if (server) assert.equal(await server.stop(), 0, 'ggufd exits 0 on SIGTERM');
});

test('a run with a tool: the tool executes with parsed arguments and ends the run', async () => {
  const calls = [];
  const getWeather = tool({
    name: 'get_weather',
    description: 'Current weather in a city',
    parameters: z.object({ city: z.string().max(12) }),
    execute: async ({ city }) => {
      calls.push(city);
      return `sunny in ${city}`;
    },
  });
  const agent = new Agent({
    name: 'Weather', instructions: 'Answer with the weather tool.', model: 'stories', tools: [getWeather],
    modelSettings: { toolChoice: 'required', maxTokens: 200 }, toolUseBehavior: 'stop_on_first_tool',
  });
  const result = await run(agent, 'What is the weather in Paris?');
  assert.equal(calls.length, 1);
  assert.equal(typeof calls[0], 'string');
  assert.equal(result.finalOutput, `sunny in ${calls[0]}`);
  const sent = requests.filter((r) => r.url.endsWith('/responses'));
  assert.ok(sent.length >= 1, JSON.stringify(requests.map((r) => r.url)));
  assert.equal(sent[0].body.tools[0].type, 'function');
});

test('a run to a text answer (streamed)', async () => {
  const agent = new Agent({ name: 'Teller', instructions: 'Tell stories.', model: 'stories',
                            modelSettings: { maxTokens: 12 } });
  const result = await run(agent, 'Tell me a story.', { stream: true });
  let text = '';
  for await (const event of result.toTextStream()) text += event;
  await result.completed;
  assert.equal(typeof result.finalOutput, 'string');
  assert.equal(text, result.finalOutput);
});
