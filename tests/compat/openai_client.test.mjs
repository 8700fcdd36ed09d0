// The official `openai` npm client against a real `ggufd serve` (run by ctest, see
// tests/CMakeLists.txt): usage: node --test openai_client.test.mjs  with GGUFD_BINARY and
// GGUFD_MODEL in the environment. Exits 77 (ctest: skipped) when the shared model is absent.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, importPackage } from './server.mjs';

const { default: OpenAI } = await importPackage('openai');
const { z } = await importPackage('zod');
const { zodResponseFormat } = await importPackage('openai/helpers/zod');

let server;
let client;

before(async () => {
  server = await startServer();
  client = new OpenAI({ baseURL: server.url, apiKey: 'unused', maxRetries: 0, timeout: 60000 });
});

after(async () => {
  if (server) assert.equal(await server.stop(), 0, 'ggufd exits 0 on SIGTERM');
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
    client.models.retrieve('no-such-model'),
    (e) => e instanceof OpenAI.NotFoundError && e.status === 404 && /no-such-model/.test(e.message));
  await assert.rejects(
    client.completions.create({ model: 'stories', prompt: 'x', temperature: 'hot' }),
    (e) => e instanceof OpenAI.BadRequestError && e.status === 400 && /temperature/.test(e.message));
  await assert.rejects(
    client.completions.create({ model: 'stories', prompt: 'x '.repeat(2000), max_tokens: 4 }),
    (e) => e instanceof OpenAI.BadRequestError && e.code === 'context_length_exceeded');
});

test('another model id is served under the real one (without --strict-api)', async () => {
  const r = await client.chat.completions.create({
    model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4,
  });
  assert.equal(r.model, 'stories');
  assert.equal(r.object, 'chat.completion');
});

// True when `s` is a prefix of some JSON text: what a json_object / json_schema reply cut by
// max_tokens (finish_reason "length") must be. Throws nothing; false on the first byte no JSON
// text could have there.
function isJsonPrefix(s) {
  const END = Symbol('end');
  let i = 0;
  const ws = () => { while (i < s.length && ' \t\n\r'.includes(s[i])) ++i; };
  const next = () => { if (i >= s.length) throw END; return s[i++]; };
  const bad = () => { throw new SyntaxError(`not JSON at ${i - 1}: ${JSON.stringify(s)}`); };
  const word = (w) => { for (const ch of w) if (next() !== ch) bad(); };
  function string() {
    for (;;) {
      const c = next();
      if (c === '"') return;
      if (c < ' ') bad();
      if (c !== '\\') continue;
      const e = next();
      if (e === 'u') { for (let k = 0; k < 4; ++k) if (!/[0-9a-fA-F]/.test(next())) bad(); }
      else if (!'"\\/bfnrt'.includes(e)) bad();
    }
  }
  function number() {
    const start = --i;
    while (i < s.length && /[-+.eE0-9]/.test(s[i])) ++i;
    const t = s.slice(start, i);
    if (i >= s.length) {  // may still grow: a prefix of a number
      if (!/^-?((0|[1-9]\d*)(\.\d*)?)?$|^-?(0|[1-9]\d*)(\.\d+)?[eE][+-]?\d*$/.test(t)) bad();
      throw END;
    }
    if (!/^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/.test(t)) bad();
  }
  function value() {
    ws();
    const c = next();
    if (c === '{') {
      ws();
      if (s[i] === '}') { ++i; return; }
      for (;;) {
        ws(); if (next() !== '"') bad(); string();
        ws(); if (next() !== ':') bad();
        value();
        ws(); const d = next();
        if (d === '}') return;
        if (d !== ',') bad();
      }
    }
    if (c === '[') {
      ws();
      if (s[i] === ']') { ++i; return; }
      for (;;) {
        value();
        ws(); const d = next();
        if (d === ']') return;
        if (d !== ',') bad();
      }
    }
    if (c === '"') return string();
    if (c === 't') return word('rue');
    if (c === 'f') return word('alse');
    if (c === 'n') return word('ull');
    if (c === '-' || (c >= '0' && c <= '9')) return number();
    bad();
  }
  try {
    value();
    ws();
    return i === s.length;
  } catch (e) {
    if (e === END) return true;
    if (e instanceof SyntaxError) return false;
    throw e;
  }
}

test('isJsonPrefix (the helper below)', () => {
  for (const ok of ['', '{', '{"a', '{"a":', '{"a":-', '{"a":1.', '{"a":1e', '{"a":[tr', '{"a":"\\u00', '{"a":{}}', ' [1, 2]'])
    assert.ok(isJsonPrefix(ok), ok);
  for (const no of ['}', '{a', '{"a"}', '{"a":01', '{"a":1.e', '{"a":tx', '{"a":"\\x', '{}x', '{"a":1}}'])
    assert.ok(!isJsonPrefix(no), no);
});

// A realistic schema for openai/helpers/zod: bounded strings (the 260K-parameter test model
// rambles; maxLength keeps the object short enough to finish), an integer range, an enum, an
// optional field (strict mode wants .nullable() with it: the helper lists it in `required`
// as anyOf [string, null]) and a nested array of objects. .min(1) makes the model write at
// least one nested object (it would choose [] otherwise).
const Character = z.object({
  name: z.string().max(16),
  age: z.number().int().min(1).max(120),
  mood: z.enum(['happy', 'sad', 'calm']),
  nickname: z.string().max(10).nullable().optional(),
  friends: z.array(z.object({
    name: z.string().max(8),
    kind: z.enum(['cat', 'dog', 'bird']),
  })).min(1).max(3),
});

test('chat.completions.parse with zodResponseFormat', async () => {
  const response_format = zodResponseFormat(Character, 'character');
  assert.equal(response_format.type, 'json_schema');
  assert.equal(response_format.json_schema.strict, true);
  for (const seed of [1, 2]) {
    const r = await client.chat.completions.parse({
      model: 'stories', messages: [{ role: 'user', content: 'Describe a character.' }],
      response_format, max_tokens: 190, seed,  // 142..166 tokens over seeds 0..59; context 256
    });
    const choice = r.choices[0];
    assert.equal(choice.finish_reason, 'stop', `the grammar completes: ${choice.message.content}`);
    assert.ok(r.usage.completion_tokens < 190);
    const { content, parsed } = choice.message;
    assert.ok(!/\s/.test(content.replace(/"(?:[^"\\]|\\.)*"/g, '')), `compact JSON: ${content}`);
    assert.deepEqual(Object.keys(JSON.parse(content)), ['name', 'age', 'mood', 'nickname', 'friends'],
                     'properties in declared order');
    assert.equal(typeof parsed, 'object');
    assert.deepEqual(parsed, Character.parse(JSON.parse(content)));
    assert.ok(parsed.friends.length >= 1 && parsed.friends.length <= 3);
    for (const f of parsed.friends) assert.deepEqual(Object.keys(f), ['name', 'kind']);
  }
});

test('json_schema cut by max_tokens: finish_reason length, a JSON prefix', async () => {
  const r = await client.chat.completions.create({
    model: 'stories', messages: [{ role: 'user', content: 'Describe a character.' }],
    response_format: zodResponseFormat(Character, 'character'), max_tokens: 12, seed: 3,
  });
  const { finish_reason, message } = r.choices[0];
  assert.equal(finish_reason, 'length');
  assert.equal(r.usage.completion_tokens, 12);
  assert.ok(message.content.startsWith('{"name":"'), message.content);
  assert.ok(isJsonPrefix(message.content), message.content);
  assert.throws(() => JSON.parse(message.content));
});

test('response_format json_object', async () => {
  for (const seed of [1, 2, 3]) {
    const r = await client.chat.completions.create({
      model: 'stories', messages: [{ role: 'user', content: 'Answer in JSON.' }],
      response_format: { type: 'json_object' }, max_tokens: 150, seed,
    });
    const { finish_reason, message } = r.choices[0];
    assert.ok(message.content.startsWith('{'), message.content);
    if (finish_reason === 'stop') {  // the object closed: the whole text is one JSON object
      const v = JSON.parse(message.content);
      assert.ok(v !== null && typeof v === 'object' && !Array.isArray(v));
    } else {  // free-form keys and strings can outrun max_tokens: then a valid prefix
      assert.equal(finish_reason, 'length');
      assert.equal(r.usage.completion_tokens, 150);
      assert.ok(isJsonPrefix(message.content), message.content);
    }
  }
});

test('streamed json_schema: the deltas join to the non-streamed object', async () => {
  const Review = z.object({
    title: z.string().max(16),
    stars: z.number().int().min(1).max(5),
    tags: z.array(z.enum(['fun', 'sad', 'long'])).min(1).max(2),
  });
  const req = {
    model: 'stories', messages: [{ role: 'user', content: 'Review the story.' }],
    response_format: zodResponseFormat(Review, 'review'), max_tokens: 120, temperature: 0,
  };
  const whole = await client.chat.completions.create(req);
  const stream = await client.chat.completions.create({ ...req, stream: true });
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  assert.ok(chunks.length >= 3);
  const content = chunks.flatMap((c) => c.choices).map((c) => c.delta.content ?? '').join('');
  const finishes = chunks.flatMap((c) => c.choices).filter((c) => c.finish_reason);
  assert.deepEqual(finishes.map((c) => c.finish_reason), ['stop']);
  const review = Review.parse(JSON.parse(content));
  assert.deepEqual(Object.keys(review), ['title', 'stars', 'tags']);
  assert.equal(content, whole.choices[0].message.content);

  // The SDK's streaming helper parses the final message with the zod schema too.
  const runner = client.chat.completions.stream(req);
  const final = await runner.finalChatCompletion();
  assert.deepEqual(final.choices[0].message.parsed, review);
});

test('completions.create with response_format json_schema', async () => {
  const Review = z.object({ title: z.string().max(16), stars: z.number().int().min(1).max(5) });
  const r = await client.completions.create({
    model: 'stories', prompt: 'Once upon a time', max_tokens: 60, temperature: 0,
    response_format: zodResponseFormat(Review, 'review'),
  });
  assert.equal(r.choices[0].finish_reason, 'stop', r.choices[0].text);
  Review.parse(JSON.parse(r.choices[0].text));
});

test('an unsupported schema is a 400 on param response_format', async () => {
  const bad = { type: 'json_schema', json_schema: { name: 'bad', schema: { type: 'object', properties: { a: { not: {} } } } } };
  for (const call of [
    () => client.chat.completions.create({ model: 'stories', messages: [{ role: 'user', content: 'hi' }], response_format: bad }),
    () => client.completions.create({ model: 'stories', prompt: 'hi', response_format: bad }),
  ]) {
    await assert.rejects(call(), (e) => e instanceof OpenAI.BadRequestError && e.status === 400 &&
                                        e.param === 'response_format' && e.type === 'invalid_request_error' &&
                                        /schema/i.test(e.message));
  }
  await assert.rejects(
    client.chat.completions.create({ model: 'stories', messages: [{ role: 'user', content: 'hi' }],
                                     response_format: { type: 'xml' } }),
    (e) => e instanceof OpenAI.BadRequestError && e.param === 'response_format');
});
