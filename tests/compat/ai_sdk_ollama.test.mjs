// The Vercel AI SDK with ollama-ai-provider-v2 (3.6.0, the newest for ai 6 and Node 20) against a
// real `ggufd serve` on Ollama's API (run by ctest as Ollama.AISDK, see tests/CMakeLists.txt):
// usage: node ai_sdk_ollama.test.mjs with GGUFD_BINARY and GGUFD_MODEL in the environment. Exits
// 77 (ctest: skipped) when the shared model is absent. The provider with its defaults, its
// baseURL (default http://127.0.0.1:11434/api) pointed at the server.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, importPackage } from './server.mjs';

const { createOllama } = await importPackage('ollama-ai-provider-v2');
const { generateText, streamText } = await importPackage('ai');

describe('AI SDK with ollama-ai-provider-v2', () => {
  let server;
  let ollama;
  before(async () => {
    server = await startServer({ ctxSize: 1024 });
    ollama = createOllama({ baseURL: `${server.base}/api` });
  });
  after(async () => assert.equal(await server.stop(), 0));

  test('generateText: text, finish reason and usage', async () => {
    const r = await generateText({ model: ollama('stories'), prompt: 'Once upon a time', maxOutputTokens: 8,
                                   temperature: 0 });
    assert.ok(r.text.length > 0);
    assert.equal(r.finishReason, 'length');
    assert.equal(r.usage.outputTokens, 8);
    assert.ok(r.usage.inputTokens > 0);
  });

  test('streamText: deltas that join into the generateText text', async () => {
    const args = { model: ollama('stories'), prompt: 'Once upon a time', maxOutputTokens: 10, temperature: 0 };
    const whole = await generateText(args);
    const s = streamText(args);
    let deltas = 0;
    let text = '';
    for await (const delta of s.textStream) {
      text += delta;
      ++deltas;
    }
    assert.ok(deltas > 2, `${deltas} deltas`);
    assert.equal(text, whole.text);
    assert.equal(await s.finishReason, 'length');
  });
});
