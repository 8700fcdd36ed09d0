// LangChain JS's Ollama integration (@langchain/ollama 1.3.0: ChatOllama and OllamaEmbeddings,
// over the ollama client) against a real `ggufd serve` on Ollama's API (run by ctest as
// Ollama.LangChain, see tests/CMakeLists.txt): usage: node langchain_ollama.test.mjs with
// GGUFD_BINARY and GGUFD_MODEL in the environment. Exits 77 (ctest: skipped) when the shared model
// is absent. Each class with its defaults, only baseUrl pointed at the server.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { dirname, join } from 'node:path';
import { existsSync } from 'node:fs';
import { startServer, importPackage, model } from './server.mjs';

const { ChatOllama, OllamaEmbeddings } = await importPackage('@langchain/ollama');

const embeddingModel = process.env.GGUFD_EMBEDDING_MODEL ?? join(dirname(model), 'synth', 'synth-bert-Q8_0.gguf');

describe('ChatOllama', () => {
  let server;
  before(async () => { server = await startServer({ ctxSize: 1024 }); });
  after(async () => assert.equal(await server.stop(), 0));

  test('invoke: an AIMessage with text and usage', async () => {
    const llm = new ChatOllama({ baseUrl: server.base, model: 'stories', numPredict: 8, temperature: 0 });
    const m = await llm.invoke('Once upon a time');
    assert.equal(typeof m.content, 'string');
    assert.ok(m.content.length > 0);
    assert.equal(m.usage_metadata.output_tokens, 8);
    assert.ok(m.usage_metadata.input_tokens > 0);
    assert.equal(m.response_metadata.done_reason, 'length');
  });

  test('stream: chunks that join into the invoke text', async () => {
    const llm = new ChatOllama({ baseUrl: server.base, model: 'stories', numPredict: 10, temperature: 0 });
    const whole = await llm.invoke('Once upon a time');
    let text = '';
    let chunks = 0;
    for await (const chunk of await llm.stream('Once upon a time')) {
      text += chunk.content;
      ++chunks;
    }
    assert.ok(chunks > 2, `${chunks} chunks`);
    assert.equal(text, whole.content);
  });

  test('withStructuredOutput (a JSON schema through format)', async () => {
    const llm = new ChatOllama({ baseUrl: server.base, model: 'stories', numPredict: 200 });
    const schema = { type: 'object', title: 'person', properties: { name: { type: 'string', maxLength: 8 } },
                     required: ['name'], additionalProperties: false };
    const v = await llm.withStructuredOutput(schema).invoke('Who?');
    assert.deepEqual(Object.keys(v), ['name']);
    assert.ok(typeof v.name === 'string' && v.name.length <= 8);
  });
});

describe('OllamaEmbeddings', { skip: existsSync(embeddingModel) ? false : `no embedding model: ${embeddingModel}` }, () => {
  let server;
  before(async () => { server = await startServer({ model: embeddingModel, alias: 'bert' }); });
  after(async () => assert.equal(await server.stop(), 0));

  test('embedQuery and embedDocuments agree', async () => {
    const e = new OllamaEmbeddings({ baseUrl: server.base, model: 'bert' });
    const q = await e.embedQuery('The cat sat.');
    assert.ok(q.length > 0);
    const docs = await e.embedDocuments(['The cat sat.', 'hello']);
    assert.equal(docs.length, 2);
    assert.ok(docs[0].every((x, i) => Math.abs(x - q[i]) < 1e-4));
    assert.ok(docs[1].some((x, i) => Math.abs(x - q[i]) > 1e-3));
  });
});
