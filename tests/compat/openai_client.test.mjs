// The official `openai` npm client against a real `ggufd serve` (run by ctest, see
// tests/CMakeLists.txt): usage: node --test openai_client.test.mjs  with GGUFD_BINARY and
// GGUFD_MODEL in the environment. Exits 77 (ctest: skipped) when the shared model is absent.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';

const binary = process.env.GGUFD_BINARY;
const model = process.env.GGUFD_MODEL;
if (!existsSync(model ?? '')) {
  console.log(`skipped: shared test model not found: ${model}`);
  process.exit(77);
}
let OpenAI;
try {
  ({ default: OpenAI } = await import('openai'));
} catch (e) {
  console.error('the openai npm package is not installed: run scripts/install-deps --test (npm install in tests/compat)');
  throw e;
}

let server;
let client;

// Starts the server on a free port; resolves with its base URL once /health says ready.
async function startServer() {
  server = spawn(binary, ['serve', '-m', model, '--alias', 'stories', '--host', '127.0.0.1', '--port', '0',
                          '--threads', '1', '--parallel', '2', '--ctx-size', '256'],
                 { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  let timer;
  const port = await new Promise((resolve, reject) => {
    const onData = (chunk) => {
      log += chunk;
      const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(log);
      if (m) resolve(Number(m[1]));
    };
    server.stdout.on('data', onData);
    server.stderr.on('data', onData);
    server.on('exit', (code) => reject(new Error(`ggufd exited with ${code} before listening:\n${log}`)));
    timer = setTimeout(() => reject(new Error(`ggufd did not listen within 30 s:\n${log}`)), 30000);
  }).finally(() => clearTimeout(timer));
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; ++i) {
    const r = await fetch(`${base}/health`).catch(() => null);
    if (r?.status === 200) return base;
    await new Promise((ok) => setTimeout(ok, 100));
  }
  throw new Error(`ggufd never became ready:\n${log}`);
}

before(async () => {
  const base = await startServer();
  client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60000 });
});

after(async () => {
  if (!server) return;
  const exited = new Promise((ok) => server.on('exit', ok));
  server.kill('SIGTERM');
  assert.equal(await exited, 0, 'ggufd exits 0 on SIGTERM');
});

test('models.list and models.retrieve', async () => {
  const page = await client.models.list();
  const ids = page.data.map((m) => m.id);
  assert.deepEqual(ids, ['stories']);
  assert.equal(page.data[0].object, 'model');
  const m = await client.models.retrieve('stories');
  assert.equal(m.id, 'stories');
  assert.equal(typeof m.created, 'number');
  assert.equal(typeof m.owned_by, 'string');
});

test('completions.create', async () => {
  const r = await client.completions.create({
    model: 'stories', prompt: 'Once upon a time', max_tokens: 12, temperature: 0, logprobs: 2,
  });
  assert.equal(r.object, 'text_completion');
  assert.equal(r.model, 'stories');
  assert.equal(r.choices.length, 1);
  assert.ok(r.choices[0].text.length > 0);
  assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
  assert.equal(r.choices[0].logprobs.tokens.length, r.usage.completion_tokens);
  assert.ok(r.usage.prompt_tokens > 0);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
});

test('completions stream equals the non-streamed text', async () => {
  const req = { model: 'stories', prompt: 'The little dog', max_tokens: 16, temperature: 0 };
  const whole = await client.completions.create(req);
  const stream = await client.completions.create({ ...req, stream: true });
  let text = '';
  for await (const chunk of stream) {
    assert.equal(chunk.object, 'text_completion');
    text += chunk.choices[0]?.text ?? '';
  }
  assert.equal(text, whole.choices[0].text);
});

test('chat.completions.create', async () => {
  const r = await client.chat.completions.create({
    model: 'stories', messages: [{ role: 'user', content: 'Tell me a story.' }], max_tokens: 10, seed: 7,
  });
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.equal(typeof r.choices[0].message.content, 'string');
  assert.ok(r.usage.completion_tokens <= 10);
});

test('chat stream with usage', async () => {
  const req = {
    model: 'stories', messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hello' }],
    max_completion_tokens: 12, temperature: 0,
  };
  const whole = await client.chat.completions.create(req);
  const stream = await client.chat.completions.create({ ...req, stream: true, stream_options: { include_usage: true } });
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  assert.ok(chunks.length >= 3);
  const ids = new Set(chunks.map((c) => c.id));
  assert.equal(ids.size, 1, 'one id on every chunk');
  assert.equal(chunks[0].choices[0].delta.role, 'assistant');
  const usage = chunks.at(-1);
  assert.deepEqual(usage.choices, []);
  assert.equal(usage.usage.completion_tokens, whole.usage.completion_tokens);
  const content = chunks.flatMap((c) => c.choices).map((c) => c.delta.content ?? '').join('');
  assert.equal(content, whole.choices[0].message.content);
  const finishes = chunks.flatMap((c) => c.choices).filter((c) => c.finish_reason);
  assert.equal(finishes.length, 1);
  assert.equal(finishes[0].finish_reason, whole.choices[0].finish_reason);
});

test('errors come back as typed API errors', async () => {
  await assert.rejects(
    client.chat.completions.create({ model: 'no-such-model', messages: [{ role: 'user', content: 'hi' }] }),
    (e) => e instanceof OpenAI.NotFoundError && e.status === 404 && /no-such-model/.test(e.message));
  await assert.rejects(
    client.completions.create({ model: 'stories', prompt: 'x', temperature: 'hot' }),
    (e) => e instanceof OpenAI.BadRequestError && e.status === 400 && /temperature/.test(e.message));
  await assert.rejects(
    client.completions.create({ model: 'stories', prompt: 'x '.repeat(2000), max_tokens: 4 }),
    (e) => e instanceof OpenAI.BadRequestError && e.code === 'context_length_exceeded');
});
