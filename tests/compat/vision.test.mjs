// Images through the real clients against a real `ggufd serve` on the shared gemma3 text model with
// its random-weight projector (ctest: Vision.Compat): the openai client (chat, streamed and not, and
// the Responses API), @anthropic-ai/sdk (messages, streamed and not), the ollama client (chat with a
// base64 string, a Uint8Array or a file path, and generate), and the Vercel AI SDK through
// @ai-sdk/openai-compatible, @ai-sdk/openai (Responses), @ai-sdk/anthropic and ollama-ai-provider-v2.
// Usage: node vision.test.mjs with GGUFD_BINARY and GGUFD_MODEL set (77: skipped when the models are
// absent; GGUFD_REQUIRE_TEST_DATA=1 fails instead).
//
// What is checked, with each client's defaults apart from temperature 0 and a small max tokens:
// - the reference: a plain fetch() to /v1/chat/completions with the image before the question. Its
//   prompt holds the image's 16 tokens between the projector's begin and end texts, counted exactly
//   from /tokenize; its greedy answer differs from the one for another picture (a black PNG built
//   here), so the pixels, not just the placeholder, reach the model.
// - every client: the same image and question give the reference's greedy text and prompt token
//   count, and the black picture gives the reference's other text;
// - a truncated PNG is a 400 that each client surfaces as its own error type, naming the part.
// The model's weights are random: its greedy answer is one token repeated. Under the ChatML
// fallback template "\n" leads by 3 logits whatever the picture, so the server is given Gemma's own
// turn format (as tests/server/vision_test.cpp and libmtmd's golden prompt use); with it and the
// image before "What is shown?", the test image's first token leads the black one's by 0.14 logits
// and the black image's leads by 0.14 the other way (checked against top_logprobs below).
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { crc32, deflateSync } from 'node:zlib';
import { startServer, importPackage, model, requireFile } from './server.mjs';

const visionModel = requireFile(join(dirname(model), 'synth', 'synth-gemma3-F32.gguf'), 'gemma3 text model');
const projector = requireFile(join(dirname(model), 'vision', 'synth-mmproj-gemma3-F32.gguf'), 'gemma3 projector');
const imageFile = requireFile(join(dirname(model), 'vision', 'test-image-1.png'), 'test image');

const { default: OpenAI } = await importPackage('openai');
const { default: Anthropic } = await importPackage('@anthropic-ai/sdk');
const { Ollama } = await importPackage('ollama');
const { generateText, streamText, APICallError } = await importPackage('ai');
const { createOpenAICompatible } = await importPackage('@ai-sdk/openai-compatible');
const { createOpenAI } = await importPackage('@ai-sdk/openai');
const { createAnthropic } = await importPackage('@ai-sdk/anthropic');
const { createOllama } = await importPackage('ollama-ai-provider-v2');

// Gemma's turns (tests/server/vision_test.cpp's template), text parts as they are.
const template = "{{ bos_token }}{% for m in messages %}{{ '<start_of_turn>' + ('model' if m.role == 'assistant' else m.role) + " +
  "'\\n' }}{% if m.content is string %}{{ m.content }}{% else %}{% for p in m.content %}{% if p.type == 'text' %}" +
  "{{ p.text }}{% endif %}{% endfor %}{% endif %}{{ '<end_of_turn>\\n' }}{% endfor %}{% if add_generation_prompt %}" +
  "{{ '<start_of_turn>model' }}{% endif %}";
const templateFile = join(mkdtempSync(join(tmpdir(), 'ggufd-vision-')), 'gemma.jinja');
writeFileSync(templateFile, template);

// An 8-bit RGB PNG of width x height whose pixel (x, y) is rgb(x, y) = [r, g, b].
function png(width, height, rgb) {
  const chunk = (type, data) => {
    const out = Buffer.alloc(12 + data.length);
    out.writeUInt32BE(data.length, 0);
    out.write(type, 4, 'latin1');
    data.copy(out, 8);
    out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length);
    return out;
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8;  // bits per channel
  header[9] = 2;  // RGB
  const rows = Buffer.alloc(height * (1 + 3 * width));  // each row: filter 0, then its pixels
  for (let y = 0; y < height; ++y) {
    for (let x = 0; x < width; ++x) rows.set(rgb(x, y), y * (1 + 3 * width) + 1 + 3 * x);
  }
  return Buffer.concat([Buffer.from('\x89PNG\r\n\x1a\n', 'latin1'), chunk('IHDR', header), chunk('IDAT', deflateSync(rows)),
                        chunk('IEND', Buffer.alloc(0))]);
}

const picture = readFileSync(imageFile);              // 96 x 72 RGB
const black = png(16, 16, () => [0, 0, 0]);
const truncated = picture.subarray(0, picture.length >> 1);
const question = 'What is shown?';
const maxTokens = 8;
const imageTokens = 16;  // per image, from the synth projector (64 x 64 input; the server logs it at load)
const b64 = (bytes) => Buffer.from(bytes).toString('base64');
const dataUri = (bytes) => `data:image/png;base64,${b64(bytes)}`;
const broken = /truncated or corrupt/;

let server;
const post = async (path, body) => {
  const r = await fetch(`${server.base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' },
                                                   body: JSON.stringify(body) });
  return { status: r.status, body: await r.json() };
};
const tokens = async (content, addSpecial = false) =>
  (await post('/tokenize', { content, add_special: addSpecial })).body.tokens.length;

// The reference: the image (or none) and the question as a plain chat request.
async function direct(image) {
  const content = [...(image ? [{ type: 'image_url', image_url: { url: dataUri(image) } }] : []),
                   { type: 'text', text: question }];
  const r = await post('/v1/chat/completions', { messages: [{ role: 'user', content }], max_tokens: maxTokens,
                                                 temperature: 0, logprobs: true, top_logprobs: 2 });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const choice = r.body.choices[0];
  return { text: choice.message.content, promptTokens: r.body.usage.prompt_tokens,
           first: choice.logprobs.content[0].top_logprobs };
}

let ref;       // the test image
let refBlack;  // the black image
let textOnly;  // no image

before(async () => {
  server = await startServer({ model: visionModel, alias: 'gemma3', ctxSize: 1024,
                               args: ['--mmproj', projector, '--chat-template-file', templateFile] });
  ref = await direct(picture);
  refBlack = await direct(black);
  textOnly = await direct(null);
});

after(async () => {
  if (server) assert.equal(await server.stop(), 0, 'ggufd exits 0 on SIGTERM');
});

test('reference: the image is 16 tokens between the begin and end texts, and its pixels change the answer', async () => {
  // The template renders "<bos><start_of_turn>user\n" IMAGE "What is shown?<end_of_turn>\n<start_of_turn>model";
  // the server tokenizes the text on each side of the image as a piece of its own, with the
  // projector's "<start_of_image>" and "<end_of_image>" (tokenized alone too) around the image.
  const head = '<start_of_turn>user\n';
  const tail = `${question}<end_of_turn>\n<start_of_turn>model`;
  assert.equal(textOnly.promptTokens, await tokens(head + tail, true));
  const expected = await tokens(head, true) + await tokens('<start_of_image>') + imageTokens +
                   await tokens('<end_of_image>') + await tokens(tail);
  assert.equal(ref.promptTokens, expected);
  assert.equal(refBlack.promptTokens, expected);
  assert.ok(ref.promptTokens - textOnly.promptTokens > imageTokens);
  // A different picture, a different greedy answer: the first token's top two swap places.
  assert.ok(ref.text.length > 0);
  assert.notEqual(ref.text, refBlack.text);
  assert.equal(ref.first[0].token, refBlack.first[1].token);
  assert.equal(ref.first[1].token, refBlack.first[0].token);
  const margin = (first) => first[0].logprob - first[1].logprob;
  assert.ok(margin(ref.first) > 0.05 && margin(refBlack.first) > 0.05,
            `margins too thin for a stable test: ${margin(ref.first)}, ${margin(refBlack.first)}`);
});

// Asserts that `ask(image)` (a client's request: { text, promptTokens }) gives the reference's answers
// for the test image and the black one, and that a truncated PNG is rejected as `isError` says.
async function sameAsReference(ask, isError) {
  const a = await ask(picture);
  assert.equal(a.text, ref.text);
  assert.equal(a.promptTokens, ref.promptTokens);
  const b = await ask(black);
  assert.equal(b.text, refBlack.text);
  assert.equal(b.promptTokens, ref.promptTokens);
  if (isError) await assert.rejects(ask(truncated), isError);
}

describe('openai client', () => {
  let client;
  before(() => {
    client = new OpenAI({ baseURL: server.url, apiKey: 'unused', maxRetries: 0, timeout: 60000 });
  });
  const isError = (param) => (e) => {
    assert.ok(e instanceof OpenAI.BadRequestError, String(e));
    assert.equal(e.status, 400);
    assert.equal(e.param, param);
    assert.match(e.message, new RegExp(`${param.replace(/[[\]]/g, '\\$&')}: .*truncated or corrupt`));
    return true;
  };

  test('models.list: the model takes images', async () => {
    const { data } = await client.models.list();
    assert.deepEqual(data[0].input_modalities, ['text', 'image']);
  });

  const messages = (image) => [{ role: 'user', content: [{ type: 'image_url', image_url: { url: dataUri(image) } },
                                                         { type: 'text', text: question }] }];

  test('chat.completions.create with an image_url data URI', async () => {
    await sameAsReference(async (image) => {
      const r = await client.chat.completions.create({ model: 'gemma3', messages: messages(image), temperature: 0,
                                                       max_tokens: maxTokens });
      assert.equal(r.choices[0].finish_reason, 'length');
      return { text: r.choices[0].message.content, promptTokens: r.usage.prompt_tokens };
    }, isError('messages[0].content[0]'));
  });

  test('chat.completions.create streamed', async () => {
    await sameAsReference(async (image) => {
      const stream = await client.chat.completions.create({ model: 'gemma3', messages: messages(image), temperature: 0,
                                                            max_completion_tokens: maxTokens, stream: true,
                                                            stream_options: { include_usage: true } });
      let text = '';
      let usage;
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta?.content ?? '';
        usage = chunk.usage ?? usage;
      }
      return { text, promptTokens: usage.prompt_tokens };
    }, isError('messages[0].content[0]'));
  });

  const input = (image) => [{ role: 'user', content: [{ type: 'input_image', image_url: dataUri(image), detail: 'auto' },
                                                      { type: 'input_text', text: question }] }];

  test('responses.create with an input_image', async () => {
    await sameAsReference(async (image) => {
      const r = await client.responses.create({ model: 'gemma3', input: input(image), temperature: 0,
                                                max_output_tokens: maxTokens });
      assert.equal(r.status, 'incomplete');
      return { text: r.output_text, promptTokens: r.usage.input_tokens };
    }, isError('input[0].content[0]'));
  });

  test('responses.stream with an input_image', async () => {
    await sameAsReference(async (image) => {
      const stream = client.responses.stream({ model: 'gemma3', input: input(image), temperature: 0,
                                               max_output_tokens: maxTokens });
      let text = '';
      stream.on('response.output_text.delta', (e) => { text += e.delta; });
      const r = await stream.finalResponse();
      assert.equal(r.status, 'incomplete');
      assert.equal(r.output.find((i) => i.type === 'message').content[0].text, text);
      return { text, promptTokens: r.usage.input_tokens };
    }, isError('input[0].content[0]'));
  });
});

describe('anthropic client', () => {
  let client;
  before(() => {
    client = new Anthropic({ baseURL: server.base, apiKey: 'unused', maxRetries: 0, timeout: 60000 });
  });
  const isError = (e) => {
    assert.ok(e instanceof Anthropic.BadRequestError, String(e));
    assert.equal(e.error?.error?.type, 'invalid_request_error');
    assert.match(e.error.error.message, /^messages\[0\]\.content\[0\]: .*truncated or corrupt/);
    return true;
  };
  const request = (image) => ({
    model: 'claude-sonnet-4-5', max_tokens: maxTokens, temperature: 0,
    messages: [{ role: 'user', content: [
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: b64(image) } },
      { type: 'text', text: question }] }],
  });
  // The prompt's tokens: those computed plus those the slot had cached.
  const inputTokens = (u) => u.input_tokens + (u.cache_read_input_tokens ?? 0) + (u.cache_creation_input_tokens ?? 0);

  test('messages.create with a base64 image block', async () => {
    await sameAsReference(async (image) => {
      const m = await client.messages.create(request(image));
      assert.equal(m.stop_reason, 'max_tokens');
      assert.equal(m.content[0].type, 'text');
      return { text: m.content[0].text, promptTokens: inputTokens(m.usage) };
    }, isError);
  });

  test('messages.stream with a base64 image block', async () => {
    await sameAsReference(async (image) => {
      const stream = client.messages.stream(request(image));
      let text = '';
      stream.on('text', (t) => { text += t; });
      const m = await stream.finalMessage();
      assert.equal(m.content[0].text, text);
      return { text, promptTokens: inputTokens(m.usage) };
    }, isError);
  });
});

describe('ollama client', () => {
  let ollama;
  before(() => {
    ollama = new Ollama({ host: server.base });
  });
  const isError = (part) => (e) => {
    assert.equal(e.name, 'ResponseError', String(e));
    assert.equal(e.status_code, 400);
    assert.ok(e.error.startsWith(`${part}: `), e.error);
    assert.match(e.error, broken);
    return true;
  };
  const options = { temperature: 0, num_predict: maxTokens };

  test('show: the model has vision', async () => {
    const s = await ollama.show({ model: 'gemma3' });
    assert.ok(s.capabilities.includes('vision'), JSON.stringify(s.capabilities));
  });

  // The client takes an image as a base64 string, as bytes (a Uint8Array) or, in Node, as a file
  // path that it reads; it sends base64 strings.
  for (const [form, encode] of [['base64', b64], ['Uint8Array', (bytes) => new Uint8Array(bytes)]]) {
    test(`chat with images as ${form}`, async () => {
      await sameAsReference(async (image) => {
        const r = await ollama.chat({ model: 'gemma3', messages: [{ role: 'user', content: question, images: [encode(image)] }],
                                      options });
        assert.equal(r.done_reason, 'length');
        return { text: r.message.content, promptTokens: r.prompt_eval_count };
      }, isError('messages[0].images[0]'));
    });
  }

  test('chat with an image file path, streamed', async () => {
    const stream = await ollama.chat({ model: 'gemma3', messages: [{ role: 'user', content: question, images: [imageFile] }],
                                       options, stream: true });
    let text = '';
    let last;
    for await (const part of stream) {
      text += part.message.content;
      last = part;
    }
    assert.equal(last.done, true);
    assert.equal(text, ref.text);
    assert.equal(last.prompt_eval_count, ref.promptTokens);
  });

  test('generate with images', async () => {
    await sameAsReference(async (image) => {
      const r = await ollama.generate({ model: 'gemma3', prompt: question, images: [new Uint8Array(image)], options });
      return { text: r.response, promptTokens: r.prompt_eval_count };
    }, isError('images[0]'));
  });
});

describe('AI SDK', () => {
  const seen = [];  // the paths the providers posted to
  const logging = async (url, init) => {
    seen.push(new URL(String(url)).pathname);
    return fetch(url, init);
  };
  const providers = {
    'openai-compatible': [() => createOpenAICompatible({ name: 'ggufd', baseURL: server.url, fetch: logging })('gemma3'),
                          '/v1/chat/completions', 'messages[0].content[0]'],
    'openai (responses)': [() => createOpenAI({ baseURL: server.url, apiKey: 'unused', fetch: logging })('gemma3'),
                           '/v1/responses', 'input[0].content[0]'],
    anthropic: [() => createAnthropic({ baseURL: server.url, apiKey: 'unused', fetch: logging })('claude-sonnet-4-5'),
                '/v1/messages', 'messages[0].content[0]'],
    'ollama-ai-provider-v2': [() => createOllama({ baseURL: `${server.base}/api`, fetch: logging })('gemma3'),
                              '/api/chat', 'messages[0].images[0]'],
  };
  // The SDK's image part takes bytes (its media type sniffed), a base64 string or a data URL.
  const forms = {
    Uint8Array: (bytes) => ({ type: 'image', image: new Uint8Array(bytes) }),
    'base64 string': (bytes) => ({ type: 'image', image: b64(bytes), mediaType: 'image/png' }),
    'data URL': (bytes) => ({ type: 'image', image: new URL(dataUri(bytes)) }),
  };
  const call = (model, image, form) => ({
    model, maxRetries: 0, temperature: 0, maxOutputTokens: maxTokens,
    messages: [{ role: 'user', content: [forms[form](image), { type: 'text', text: question }] }],
  });
  // ollama-ai-provider-v2 reads an error as OpenAI's {"error": {"message"}}, not Ollama's {"error": "..."},
  // and so says only the status text; the server's message is in the response body it keeps.
  const isApiError = (name, status, message) => (e) => {
    assert.ok(APICallError.isInstance(e), String(e));
    assert.equal(e.statusCode, status);
    if (name === 'ollama-ai-provider-v2') {
      assert.equal(e.message, 'Bad Request');
      assert.match(JSON.parse(e.responseBody).error, message);
    } else {
      assert.match(e.message, message);
    }
    return true;
  };

  for (const [name, [model, path, part]] of Object.entries(providers)) {
    const escaped = part.replace(/[[\]]/g, '\\$&');
    describe(name, () => {
      for (const form of Object.keys(forms)) {
        // ollama-ai-provider-v2 3.6.0 puts the SDK's bytes into "images" as they are, and JSON makes
        // a Uint8Array {"0":137,"1":80,...}: Ollama (and ggufd) take base64 strings only.
        if (name === 'ollama-ai-provider-v2' && form === 'Uint8Array') {
          test(`generateText with an image as ${form}: the provider sends an object, a 400 naming the part`, async () => {
            await assert.rejects(generateText(call(model(), picture, form)),
                                 isApiError(name, 400, new RegExp(`^${escaped} must be a base64 string`)));
          });
          continue;
        }
        test(`generateText with an image as ${form}`, async () => {
          seen.length = 0;
          await sameAsReference(async (image) => {
            const r = await generateText(call(model(), image, form));
            assert.equal(r.finishReason, 'length');
            return { text: r.text, promptTokens: r.usage.inputTokens };
          });
          assert.deepEqual(seen, [path, path]);
        });
      }

      test('streamText with an image', async () => {
        const s = streamText(call(model(), picture, 'base64 string'));
        let text = '';
        for await (const delta of s.textStream) text += delta;
        assert.equal(text, ref.text);
        // (@ai-sdk/openai-compatible asks for a stream's usage only with its includeUsage setting)
        if (name !== 'openai-compatible') assert.equal((await s.usage).inputTokens, ref.promptTokens);
      });

      test('a truncated PNG: APICallError 400 naming the part', async () => {
        await assert.rejects(generateText(call(model(), truncated, 'base64 string')),
                             isApiError(name, 400, new RegExp(`^${escaped}: .*truncated or corrupt`)));
      });
    });
  }
});
