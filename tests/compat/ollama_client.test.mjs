// The official `ollama` npm client (0.6.4), unmodified and with its defaults, against a real
// `ggufd serve` on Ollama's API (run by ctest as Ollama.Client, see tests/CMakeLists.txt): usage:
// node ollama_client.test.mjs with GGUFD_BINARY and GGUFD_MODEL in the environment. Exits 77
// (ctest: skipped) when the shared model is absent. The client is pointed at the server's base URL
// as OLLAMA_HOST would point it; it sends stream: false unless asked, reads NDJSON streams line by
// line and throws on an {"error"} line or a stream without done.
// Tools: Ollama has no tool_choice; the 260K model would not choose to call a tool, so the tools
// test passes ggufd's tool_choice extension through the client (it sends the request as given).
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { dirname, join } from 'node:path';
import { existsSync } from 'node:fs';
import { startServer, importPackage, model, missingData } from './server.mjs';
import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';

const { Ollama } = await importPackage('ollama');

const embeddingModel = process.env.GGUFD_EMBEDDING_MODEL ?? join(dirname(model), 'synth', 'synth-bert-Q8_0.gguf');

const weatherTool = {
  type: 'function',
  function: {
    name: 'get_weather', description: 'Current weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string', maxLength: 12 } }, required: ['city'],
                  additionalProperties: false },
  },
};

describe('ollama client on the Ollama API', () => {
  let server;
  let ollama;
  before(async () => {
    server = await startServer({ ctxSize: 1024 });
    ollama = new Ollama({ host: server.base });
  });
  after(async () => assert.equal(await server.stop(), 0));

  test('list and ps name the served model with its details', async () => {
    const { models } = await ollama.list();
    assert.equal(models.length, 1);
    assert.equal(models[0].name, 'stories');
    assert.equal(models[0].details.format, 'gguf');
    assert.equal(models[0].details.family, 'llama');
    assert.match(models[0].digest, /^[0-9a-f]{64}$/);
    assert.ok(models[0].size > 0);
    assert.ok(!Number.isNaN(new Date(models[0].modified_at).getTime()));
    const ps = await ollama.ps();
    assert.equal(ps.models.length, 1);
    assert.equal(ps.models[0].context_length, 1024);
    assert.ok(!Number.isNaN(new Date(ps.models[0].expires_at).getTime()));
  });

  test('show: capabilities, details, model_info, template', async () => {
    const s = await ollama.show({ model: 'stories' });
    assert.deepEqual(s.capabilities, ['completion', 'tools']);
    assert.equal(s.details.family, 'llama');
    assert.equal(s.model_info['general.architecture'], 'llama');
    assert.equal(typeof s.template, 'string');
    assert.match(s.modelfile, /^FROM /m);
  });

  test('chat unstreamed: one message and the final counts', async () => {
    const r = await ollama.chat({ model: 'llama3.2', messages: [{ role: 'user', content: 'Once upon a time' }],
                                  options: { num_predict: 8, temperature: 0 } });
    assert.equal(r.message.role, 'assistant');
    assert.ok(r.message.content.length > 0);
    assert.equal(r.done, true);
    assert.equal(r.done_reason, 'length');
    assert.equal(r.eval_count, 8);
    assert.ok(r.prompt_eval_count > 0);
    assert.ok(r.total_duration >= r.prompt_eval_duration);
    assert.equal(r.model, 'llama3.2');
  });

  test('chat streamed: pieces, then done; the same text as unstreamed', async () => {
    const request = { model: 'stories', messages: [{ role: 'user', content: 'Once upon a time' }],
                      options: { num_predict: 10, temperature: 0 } };
    const whole = await ollama.chat(request);
    const parts = [];
    let last;
    for await (const part of await ollama.chat({ ...request, stream: true })) {
      parts.push(part);
      last = part;
    }
    assert.ok(parts.length > 2, `${parts.length} parts`);
    assert.equal(last.done, true);
    assert.equal(parts.map((p) => p.message.content).join(''), whole.message.content);
  });

  test('generate, streamed and not, and the preload with an empty prompt', async () => {
    const r = await ollama.generate({ model: 'stories', prompt: 'Once upon a time', system: 'Tell a story.',
                                      options: { num_predict: 6, seed: 2 } });
    assert.equal(typeof r.response, 'string');
    assert.equal(r.done, true);
    let n = 0;
    for await (const part of await ollama.generate({ model: 'stories', prompt: 'Once', stream: true,
                                                      options: { num_predict: 6 } })) {
      assert.equal(typeof part.response, 'string');
      ++n;
    }
    assert.ok(n > 2);
    const load = await ollama.generate({ model: 'stories', prompt: '' });
    assert.equal(load.done, true);
    assert.equal(load.done_reason, 'load');
  });

  test('format with a JSON schema: the answer validates', async () => {
    const schema = { type: 'object', properties: { name: { type: 'string', maxLength: 8 },
                                                   age: { type: 'integer', minimum: 0, maximum: 99 } },
                     required: ['name', 'age'], additionalProperties: false };
    const r = await ollama.chat({ model: 'stories', messages: [{ role: 'user', content: 'Who?' }], format: schema,
                                  options: { num_predict: 200 } });
    assert.equal(r.done_reason, 'stop');
    const v = JSON.parse(r.message.content);
    assert.deepEqual(Object.keys(v).sort(), ['age', 'name']);
    assert.ok(Number.isInteger(v.age) && v.age >= 0 && v.age <= 99);
    assert.ok(typeof v.name === 'string' && v.name.length <= 8);
  });

  test('tools: a whole call with object arguments, and the tool result round trip', async () => {
    const messages = [{ role: 'user', content: 'Weather in Paris?' }];
    const r = await ollama.chat({ model: 'stories', messages, tools: [weatherTool], tool_choice: 'required',
                                  options: { num_predict: 200 } });
    assert.ok(Array.isArray(r.message.tool_calls) && r.message.tool_calls.length >= 1, JSON.stringify(r.message));
    const call = r.message.tool_calls[0];
    assert.equal(call.function.name, 'get_weather');
    assert.equal(typeof call.function.arguments, 'object');
    assert.equal(typeof call.function.arguments.city, 'string');
    messages.push(r.message, { role: 'tool', content: 'sunny', tool_name: 'get_weather' });
    const next = await ollama.chat({ model: 'stories', messages, tools: [weatherTool], options: { num_predict: 4 } });
    assert.equal(next.done, true);
  });

  test('errors come back as ResponseError with the message', async () => {
    await assert.rejects(ollama.chat({ model: 'stories', messages: [{ role: 'user', content: 'x', images: ['aGk='] }] }),
                         (e) => e.status_code === 400 && /images/.test(e.error));
    await assert.rejects(ollama.generate({ model: 'stories', prompt: 'x', suffix: 'y' }),
                         (e) => e.status_code === 400 && /suffix/.test(e.error));
  });
});

// DeepSeek-R1's template opens the think block in the prompt, so with think on what the model
// writes is thinking: the client reads it as message.thinking (chat) and thinking (generate).
const r1Template = join(dirname(model), '..', 'templates', 'deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja');
describe('ollama client thinking', { skip: existsSync(r1Template) ? false : missingData(`no template: ${r1Template}`) }, () => {
  let server;
  let ollama;
  before(async () => {
    server = await startServer({ ctxSize: 1024, args: ['--chat-template-file', r1Template] });
    ollama = new Ollama({ host: server.base });
  });
  after(async () => assert.equal(await server.stop(), 0));

  test('think: true gives thinking, streamed and not, the same text', async () => {
    const messages = [{ role: 'user', content: 'Once upon a time' }];
    const options = { num_predict: 8, temperature: 0 };
    assert.ok((await ollama.show({ model: 'stories' })).capabilities.includes('thinking'));
    const whole = await ollama.chat({ model: 'stories', messages, think: true, options });
    assert.ok(whole.message.thinking.length > 0, JSON.stringify(whole));
    assert.equal(whole.message.content, '');
    let thinking = '';
    let parts = 0;
    for await (const part of await ollama.chat({ model: 'stories', messages, think: true, options, stream: true })) {
      thinking += part.message.thinking ?? '';
      parts += part.message.thinking ? 1 : 0;
    }
    assert.equal(thinking, whole.message.thinking);
    assert.ok(parts > 1, `${parts} parts`);
    const generated = await ollama.generate({ model: 'stories', prompt: 'Once upon a time', think: true, options });
    assert.equal(generated.thinking, whole.message.thinking);
    assert.equal(generated.response, '');
    const off = await ollama.chat({ model: 'stories', messages, think: false, options });
    assert.equal(off.message.thinking, undefined);
    assert.ok(off.message.content.length > 0);
  });
});

describe('ollama client embed', { skip: existsSync(embeddingModel) ? false : missingData(`no embedding model: ${embeddingModel}`) }, () => {
  let server;
  let ollama;
  before(async () => {
    server = await startServer({ model: embeddingModel, alias: 'bert' });
    ollama = new Ollama({ host: server.base });
  });
  after(async () => assert.equal(await server.stop(), 0));

  test('embed a string and a list; legacy embeddings', async () => {
    const one = await ollama.embed({ model: 'bert', input: 'The cat sat.' });
    assert.equal(one.embeddings.length, 1);
    const norm = Math.sqrt(one.embeddings[0].reduce((s, x) => s + x * x, 0));
    assert.ok(Math.abs(norm - 1) < 1e-4, `norm ${norm}`);
    const two = await ollama.embed({ model: 'bert', input: ['The cat sat.', 'hello'] });
    assert.equal(two.embeddings.length, 2);
    assert.ok(two.embeddings[0].every((x, i) => Math.abs(x - one.embeddings[0][i]) < 1e-4));
    const legacy = await ollama.embeddings({ model: 'bert', prompt: 'The cat sat.' });
    assert.equal(legacy.embedding.length, one.embeddings[0].length);
  });
});

// pull, list, chat, delete through a router whose Hub is the local HTTPS stand-in
// (tests/support/fake_hub.py, the download tests' hub), holding a copy of the shared model.
describe('ollama client pull from the Hub', () => {
  let dir;
  let hub;
  let server;
  let ollama;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ggufd-ollama-pull-'));
    mkdirSync(join(dir, 'repos', 'org', 'stories'), { recursive: true });
    mkdirSync(join(dir, 'models'));
    mkdirSync(join(dir, 'certs'));
    copyFileSync(model, join(dir, 'repos', 'org', 'stories', 'stories-Q8_0.gguf'));
    writeFileSync(join(dir, 'config.json'), '{}');
    const script = join(dirname(fileURLToPath(import.meta.url)), '..', 'support', 'fake_hub.py');
    hub = spawn('python3', [script, '--root', join(dir, 'repos'), '--certs', join(dir, 'certs'), '--config',
                            join(dir, 'config.json')], { stdio: ['ignore', 'pipe', 'inherit'] });
    const port = await new Promise((resolve, reject) => {
      let out = '';
      hub.stdout.on('data', (c) => {
        out += c;
        const m = /READY (\d+)/.exec(out);
        if (m) resolve(Number(m[1]));
      });
      hub.on('exit', (code) => reject(new Error(`fake_hub.py exited with ${code}: ${out}`)));
    });
    process.env.HF_ENDPOINT = `https://127.0.0.1:${port}`;
    process.env.NO_PROXY = '*';
    server = await startServer({ args: ['--models-dir', join(dir, 'models'), '--hub-cache', join(dir, 'cache'),
                                        '--ca-file', join(dir, 'certs', 'ca.pem')] });
    ollama = new Ollama({ host: server.base });
  });
  after(async () => {
    if (server) assert.equal(await server.stop(), 0);
    hub?.kill();
    rmSync(dir, { recursive: true, force: true });
  });

  test('pull streams progress to success; the model is listed, answers and is deleted', async () => {
    const statuses = [];
    let sawBytes = false;
    for await (const p of await ollama.pull({ model: 'hf.co/org/stories:Q8_0', stream: true })) {
      statuses.push(p.status);
      if (p.digest?.startsWith('sha256:') && p.total > 0 && p.completed >= 0) sawBytes = true;
    }
    assert.equal(statuses[0], 'pulling manifest');
    assert.equal(statuses.at(-1), 'success');
    assert.ok(sawBytes, statuses.join(' | '));
    assert.equal((await ollama.pull({ model: 'hf.co/org/stories:Q8_0' })).status, 'success');  // cached
    const { models } = await ollama.list();
    assert.ok(models.some((m) => m.name === 'org/stories:Q8_0'), JSON.stringify(models));
    const r = await ollama.chat({ model: 'hf.co/org/stories:Q8_0', messages: [{ role: 'user', content: 'Hi' }],
                                  options: { num_predict: 3 } });
    assert.equal(r.done, true);
    assert.equal((await ollama.show({ model: 'hf.co/org/stories:Q8_0' })).details.family, 'llama');
    // Ollama's unload request: an empty prompt with keep_alive 0
    const unloaded = await ollama.generate({ model: 'hf.co/org/stories:Q8_0', prompt: '', keep_alive: 0 });
    assert.equal(unloaded.done_reason, 'unload', JSON.stringify(unloaded));
    assert.equal(unloaded.done, true);
    await ollama.delete({ model: 'org/stories:Q8_0' });
    assert.ok(!(await ollama.list()).models.some((m) => m.name === 'org/stories:Q8_0'));
    await assert.rejects(ollama.pull({ model: 'llama3.2' }), /hf\.co\/org\/repo/);
  });
});
