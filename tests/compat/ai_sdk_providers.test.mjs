// The Vercel AI SDK with its first-party providers against a real `ggufd serve` (ctest:
// AISDK.Providers): @ai-sdk/openai, whose default language model speaks the Responses API, and
// @ai-sdk/anthropic (the Messages API): generateText, streamText, and a forced tool call that the
// SDK validates and executes.
// Usage: node ai_sdk_providers.test.mjs with GGUFD_BINARY and GGUFD_MODEL set (77: skipped).
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, importPackage } from './server.mjs';

const { createOpenAI } = await importPackage('@ai-sdk/openai');
const { createAnthropic } = await importPackage('@ai-sdk/anthropic');
const { generateText, streamText, tool } = await importPackage('ai');
const { z } = await importPackage('zod');

const Weather = z.object({ city: z.string().max(12).describe('the city') });

let server;
const seen = [];  // the paths the providers posted to
const logging = async (url, init) => {
  seen.push(new URL(String(url)).pathname);
  return fetch(url, init);
};

before(async () => {
  server = await startServer({ ctxSize: 2048 });
});

after(async () => {
  if (server) assert.equal(await server.stop(), 0, 'ggufd exits 0 on SIGTERM');
});

const providers = {
  'openai (responses)': () => createOpenAI({ baseURL: server.url, apiKey: 'unused', fetch: logging })('stories'),
  anthropic: () => createAnthropic({ baseURL: server.url, apiKey: 'unused', fetch: logging })('claude-sonnet-4-5'),
};
const path = { 'openai (responses)': '/v1/responses', anthropic: '/v1/messages' };

for (const [name, model] of Object.entries(providers)) {
  describe(`ai sdk ${name}`, () => {
    test('generateText', async () => {
      seen.length = 0;
      const r = await generateText({ model: model(), prompt: 'Tell me a story.', maxOutputTokens: 12, maxRetries: 0 });
      assert.equal(typeof r.text, 'string');
      assert.ok(['stop', 'length'].includes(r.finishReason), r.finishReason);
      assert.ok(r.usage.outputTokens <= 12);
      assert.ok(r.usage.inputTokens > 0);
      assert.deepEqual(seen, [path[name]]);
    });

    test('streamText equals generateText at temperature 0', async () => {
      const req = { model: model(), system: 'Be brief.', prompt: 'The little dog', maxOutputTokens: 16, temperature: 0,
                    maxRetries: 0 };
      const whole = await generateText(req);
      const s = streamText(req);
      let text = '';
      for await (const part of s.textStream) text += part;
      assert.equal(text, whole.text);
      assert.equal(await s.finishReason, whole.finishReason);
    });

    test('a forced tool call, validated and executed', async () => {
      const runs = [];
      const r = await generateText({
        model: model(), prompt: 'Weather in Paris?', maxOutputTokens: 200, maxRetries: 0, toolChoice: 'required',
        tools: { weather: tool({ description: 'Current weather', inputSchema: Weather,
                                 execute: async ({ city }) => { runs.push(city); return `sunny in ${city}`; } }) },
      });
      assert.equal(r.toolCalls.length, 1, JSON.stringify(r.content));
      assert.ok(!r.toolCalls[0].invalid, JSON.stringify(r.toolCalls[0]));
      assert.equal(r.toolCalls[0].toolName, 'weather');
      assert.deepEqual(runs, [r.toolCalls[0].input.city]);
      assert.equal(r.toolResults[0].output, `sunny in ${runs[0]}`);
      assert.equal(r.finishReason, 'tool-calls');
    });
  });
}
