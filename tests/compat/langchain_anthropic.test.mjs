// LangChain JS's Anthropic chat model (@langchain/anthropic ChatAnthropic, on @anthropic-ai/sdk)
// against a real `ggufd serve`'s /v1/messages (ctest: LangChain.Anthropic): invoke, stream, and a
// bound tool forced by tool_choice, with its result handed back.
// Usage: node langchain_anthropic.test.mjs with GGUFD_BINARY and GGUFD_MODEL set (77: skipped).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, importPackage } from './server.mjs';

const { ChatAnthropic } = await importPackage('@langchain/anthropic');
const { tool } = await importPackage('@langchain/core/tools');
const { HumanMessage, SystemMessage, ToolMessage } = await importPackage('@langchain/core/messages');
const { z } = await importPackage('zod');

let server;
let model;

before(async () => {
  server = await startServer({ ctxSize: 2048 });
  model = new ChatAnthropic({ model: 'claude-sonnet-4-5', anthropicApiUrl: server.base, apiKey: 'unused',
                              maxTokens: 16, temperature: 0, maxRetries: 0 });
});

after(async () => {
  if (server) assert.equal(await server.stop(), 0, 'ggufd exits 0 on SIGTERM');
});

test('invoke and stream give the same text', async () => {
  const messages = [new SystemMessage('Be brief.'), new HumanMessage('Tell me a story.')];
  const whole = await model.invoke(messages);
  assert.equal(typeof whole.content, 'string');
  assert.ok(whole.usage_metadata.output_tokens <= 16);
  let text = '';
  for await (const chunk of await model.stream(messages)) {
    if (typeof chunk.content === 'string') text += chunk.content;
  }
  assert.equal(text, whole.content);
});

test('a forced tool call and its result', async () => {
  const getWeather = tool(async ({ city }) => `sunny in ${city}`, {
    name: 'get_weather', description: 'Current weather in a city', schema: z.object({ city: z.string().max(12) }),
  });
  const withTools = model.bindTools([getWeather]);  // auto: the model answers or calls again
  const question = new HumanMessage('Weather in Paris?');
  const ai = await new ChatAnthropic({ model: 'x', anthropicApiUrl: server.base, apiKey: 'unused', maxTokens: 200,
                                       maxRetries: 0 })
    .bindTools([getWeather], { tool_choice: { type: 'tool', name: 'get_weather' } }).invoke([question]);
  assert.equal(ai.tool_calls.length, 1, JSON.stringify(ai));
  const call = ai.tool_calls[0];
  assert.equal(call.name, 'get_weather');
  assert.equal(typeof call.args.city, 'string');
  const result = await getWeather.invoke(call);
  assert.ok(result instanceof ToolMessage);
  const next = await withTools.invoke([question, ai, result]);
  assert.ok(next.content !== undefined);
});
