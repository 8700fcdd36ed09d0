// The chat page (webui/) in a real headless Chromium (Debian's chromium, driven by the pinned
// puppeteer-core of tests/compat) against a real `ggufd serve` in router mode: the page loads
// without console errors, an answer streams in, Stop stops it, a conversation survives a reload,
// the model picker lists the router's chat models (not its embedding model) and switches, model
// output holding <script> and event handlers stays text, an image reaches a vision model, and
// the API-key prompt works.
// GGUFD_WEBUI_SCREENSHOTS=DIR saves the main views there (docs/ holds the README's).
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test, after } from 'node:test';
import { importPackage, missingData, model, requireFile, startServer } from '../compat/server.mjs';

const chromium = process.env.GGUFD_CHROMIUM ?? '/usr/bin/chromium';
if (!existsSync(chromium)) {
  missingData(`chromium not found at ${chromium} (scripts/install-deps --test installs it)`);
  console.log(`skipped: chromium not found at ${chromium}`);
  process.exit(77);
}
const { default: puppeteer } = await importPackage('puppeteer-core');
const shots = process.env.GGUFD_WEBUI_SCREENSHOTS;

// The router's models: stories260K (-m, alias "stories"), a second chat model and a BERT
// embedding model in --models-dir; one loaded at a time, so the picker's switch loads and unloads.
const dir = mkdtempSync(join(tmpdir(), 'ggufd-webui-'));
mkdirSync(join(dir, 'models'));
const second = requireFile(join(dirname(model), 'llama-2-tiny-random.gguf'), 'second chat model');
const bert = requireFile(join(dirname(model), 'synth', 'synth-bert-Q8_0.gguf'), 'embedding model');
symlinkSync(second, join(dir, 'models', 'tiny-llama.gguf'));
symlinkSync(bert, join(dir, 'models', 'bert.gguf'));
// An image model: the gemma3 text model with its projector beside it (found there by --mmproj-auto).
const visionModel = requireFile(join(dirname(model), 'synth', 'synth-gemma3-F32.gguf'), 'gemma3 text model');
const projector = requireFile(join(dirname(model), 'vision', 'synth-mmproj-gemma3-F32.gguf'), 'gemma3 projector');
const testImage = requireFile(join(dirname(model), 'vision', 'test-image-1.png'), 'test image');
mkdirSync(join(dir, 'models', 'vision'));
symlinkSync(visionModel, join(dir, 'models', 'vision', 'gemma3.gguf'));
symlinkSync(projector, join(dir, 'models', 'vision', 'mmproj-gemma3.gguf'));
const server = await startServer({ ctxSize: 2048, args: ['--models-dir', join(dir, 'models'), '--models-max', '1'] });
const browser = await puppeteer.launch({ executablePath: chromium, headless: true,
                                         args: ['--no-sandbox', '--disable-gpu', '--no-first-run'] });
after(async () => {
  await browser.close();
  assert.equal(await server.stop(), 0);
});

// A fresh browser context (its own storage) with a page that records console errors.
async function openPage(base = server.base, viewport = { width: 1100, height: 760 }) {
  const context = await browser.createBrowserContext();
  const page = await context.newPage();
  await page.setViewport(viewport);
  page.problems = [];
  page.on('console', (m) => { if (['error', 'warn'].includes(m.type())) page.problems.push(m.text()); });
  page.on('pageerror', (e) => page.problems.push(`page error: ${e.message}`));
  await page.goto(`${base}/`, { waitUntil: 'networkidle0' });
  return page;
}

const options = (page) => page.$$eval('#model option', (os) => os.map((o) => o.value));
const lastAnswer = (page) => page.$eval('.message.assistant:last-of-type', (e) => ({
  text: e.querySelector('.content').textContent, figures: e.querySelector('.figures')?.textContent ?? '',
  stopped: !!e.querySelector('.note'), role: e.querySelector('.role').textContent }));

// Types `text`, sends it with Enter and waits for the answer to finish.
async function ask(page, text) {
  const before = await page.$$eval('.message.assistant', (l) => l.length);
  await page.click('#input');
  await page.keyboard.type(text);
  await page.keyboard.press('Enter');
  await page.waitForFunction((n) => {
    const answers = document.querySelectorAll('.message.assistant');
    const last = answers[answers.length - 1];
    return answers.length > n && !last.classList.contains('streaming') && last.querySelector('.actions');
  }, { timeout: 60000 }, before);
}

test('the page loads without console errors and lists the chat models only', async () => {
  const page = await openPage();
  assert.equal(await page.title(), 'ggufd');
  await page.waitForFunction(() => document.querySelectorAll('#model option').length > 0);
  const ids = await options(page);
  assert.deepEqual([...ids].sort(), ['stories', 'tiny-llama', 'vision/gemma3'], 'chat models only, not the embedding model');
  assert.deepEqual(page.problems, []);
  if (shots) await page.screenshot({ path: join(shots, 'webui-empty.png') });
});

test('an answer streams in with its figures, and the conversation survives a reload', async () => {
  const page = await openPage();
  await page.select('#model', 'stories');
  await page.click('#settings-button');
  await page.type('input[name="max_tokens"]', '60');
  await page.click('#settings-save');
  await ask(page, 'Once upon a time');
  const answer = await lastAnswer(page);
  assert.ok(answer.text.length > 20, answer.text);
  const figures = /tokens\/s · first token \d+ ms · (\d+) tokens · context (\d+) \/ 2048/.exec(answer.figures);
  assert.ok(figures, answer.figures);
  assert.ok(Number(figures[1]) <= 60 && Number(figures[2]) > Number(figures[1]), answer.figures);
  await page.reload({ waitUntil: 'networkidle0' });
  await page.waitForSelector('.message.assistant');
  assert.equal((await lastAnswer(page)).text, answer.text);
  assert.equal(await page.$eval('#conversations li.current .open', (e) => e.textContent), 'Once upon a time');
  assert.equal(await page.$eval('.message.user .content', (e) => e.textContent), 'Once upon a time');
  assert.deepEqual(page.problems, []);
  if (shots) await page.screenshot({ path: join(shots, 'webui-chat.png') });
});

test('Stop ends a streaming answer', async () => {
  const page = await openPage();
  await page.select('#model', 'stories');
  // A slow network, so that the answer is still streaming when Stop is pressed.
  const cdp = await page.createCDPSession();
  await cdp.send('Network.enable');
  await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: 1500,
                                                       uploadThroughput: -1 });
  await page.click('#input');
  await page.keyboard.type('The little dog');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => document.querySelector('.message.assistant.streaming .content')?.textContent.length > 0,
                             { timeout: 20000 });
  assert.equal(await page.$eval('#stop', (e) => e.hidden), false);
  await page.keyboard.press('Escape');
  await page.waitForSelector('.message.assistant:not(.streaming) .actions', { timeout: 10000 });
  assert.deepEqual(await page.$$eval('.message.assistant', (l) => l.length), 1);
  const answer = await lastAnswer(page);
  assert.ok(answer.stopped, 'the answer says it was stopped');
  assert.equal(await page.$eval('#stop', (e) => e.hidden), true);
  await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1,
                                                       uploadThroughput: -1 });
  // The server is free again: a new answer completes.
  await ask(page, 'Then');
  assert.ok(!(await lastAnswer(page)).stopped);
  assert.deepEqual(page.problems, []);
});

test('the picker switches models, loading the one chosen', async () => {
  const page = await openPage();
  await page.select('#model', 'tiny-llama');
  await page.waitForFunction(() => /tiny-llama is loaded/.test(document.querySelector('#model-status').textContent),
                             { timeout: 60000 });
  await ask(page, 'Hello');
  assert.equal((await lastAnswer(page)).role, 'tiny-llama');
  const listed = await (await fetch(`${server.base}/v1/models`)).json();
  const status = Object.fromEntries(listed.data.map((m) => [m.id, m.status]));
  assert.equal(status['tiny-llama'], 'loaded');
  assert.notEqual(status.stories, 'loaded', '--models-max 1: the other model was unloaded');
  assert.deepEqual(page.problems, []);
});

test('model output with <script>, event handlers and javascript: links stays text', async () => {
  const page = await openPage();
  await page.select('#model', 'stories');
  const payload = 'Look: <script>window.__xss = 1</script> and <img src=x onerror="window.__xss = 2"> ' +
                  '[click](javascript:window.__xss=3) <a href="javascript:window.__xss=4">a</a>\n\n' +
                  '<div onmouseover="window.__xss=5">hover</div>\n\n```js\nconst x = "<script>";\n```\n\n$x^2$';
  await page.setRequestInterception(true);
  page.on('request', (req) => {
    if (!req.url().endsWith('/v1/chat/completions')) return req.continue();
    const chunk = (delta) => `data: ${JSON.stringify({ choices: [{ index: 0, delta }] })}\n\n`;
    const body = chunk({ role: 'assistant' }) + [...payload.matchAll(/.{1,7}/gs)].map((m) => chunk({ content: m[0] })).join('') +
                 'data: [DONE]\n\n';
    return req.respond({ status: 200, contentType: 'text/event-stream', body });
  });
  await ask(page, 'Say something dangerous');
  const shown = await page.$eval('.message.assistant:last-of-type .content', (e) => ({
    text: e.textContent, scripts: e.querySelectorAll('script').length,
    handlers: [...e.querySelectorAll('*')].filter((n) => [...n.attributes].some((a) => a.name.startsWith('on'))).length,
    jsLinks: [...e.querySelectorAll('a')].filter((a) => /^\s*javascript:/i.test(a.getAttribute('href') ?? '')).length,
    images: e.querySelectorAll('img').length, math: e.querySelectorAll('.katex').length,
    code: e.querySelector('pre code')?.textContent }));
  await page.hover('.message.assistant:last-of-type .content');
  assert.equal(await page.evaluate(() => window.__xss), undefined, 'no payload ran');
  assert.equal(shown.scripts, 0);
  assert.equal(shown.handlers, 0);
  assert.equal(shown.jsLinks, 0);
  assert.equal(shown.images, 0);
  assert.ok(shown.text.includes('<script>window.__xss = 1</script>'), shown.text);
  assert.ok(shown.text.includes('<img src=x onerror="window.__xss = 2">'), shown.text);
  assert.equal(shown.code.trim(), 'const x = "<script>";');
  assert.equal(shown.math, 1, 'math is typeset');
  assert.deepEqual(page.problems, []);
});

test('a server with --api-key: the page asks for the key once and keeps it', async () => {
  const keyed = await startServer({ args: ['--api-key', 'sekrit'] });
  try {
    const page = await openPage(keyed.base);
    await page.waitForSelector('#key-dialog[open]');
    await page.type('#key-input', 'wrong');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => document.querySelector('#key-dialog').open &&
                                     /invalid API key/.test(document.querySelector('#key-error').textContent));
    await page.$eval('#key-input', (e) => { e.value = ''; });
    await page.type('#key-input', 'sekrit');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => document.querySelectorAll('#model option').length === 1);
    await ask(page, 'Once');
    await page.reload({ waitUntil: 'networkidle0' });
    await page.waitForFunction(() => document.querySelectorAll('#model option').length === 1);
    assert.equal(await page.$eval('#key-dialog', (e) => e.open), false, 'the key was kept');
    // 401s of the failed attempt are the browser's network log, not the page's errors
    assert.deepEqual(page.problems.filter((p) => !/401/.test(p)), []);
  } finally {
    assert.equal(await keyed.stop(), 0);
  }
});

// Answers POST v1/chat/completions in the page with `deltas` as a stream, and records the request
// bodies it was sent.
async function fakeAnswers(page, deltas) {
  const sent = [];
  await page.setRequestInterception(true);
  page.on('request', (req) => {
    if (!req.url().endsWith('/v1/chat/completions')) return req.continue();
    sent.push(JSON.parse(req.postData()));
    const chunk = (delta) => `data: ${JSON.stringify({ choices: [{ index: 0, delta }] })}\n\n`;
    const usage = { prompt_tokens: 30, completion_tokens: 5, total_tokens: 35, prompt_tokens_details: { cached_tokens: 12 } };
    const body = deltas.map(chunk).join('') + `data: ${JSON.stringify({ choices: [], usage })}\n\n` + 'data: [DONE]\n\n';
    return req.respond({ status: 200, contentType: 'text/event-stream', body });
  });
  return sent;
}

test('settings and attached files reach the request; reasoning and tool calls are shown as such', async () => {
  const page = await openPage();
  await page.select('#model', 'stories');
  const sent = await fakeAnswers(page, [
    { role: 'assistant', reasoning_content: 'The user wants ' }, { reasoning_content: 'the weather.' },
    { content: 'Let me look.' },
    { tool_calls: [{ index: 0, id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{"city":' } }] },
    { tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }]);
  await page.click('#settings-button');
  await page.waitForSelector('#settings[open]');
  await page.type('#system-prompt', 'You are terse.');
  await page.type('input[name="temperature"]', '0.3');
  await page.type('input[name="max_tokens"]', '7');
  await page.click('#settings-save');
  const file = join(dir, 'notes.txt');
  writeFileSync(file, 'line one\nline two\n');
  await (await page.$('#attach-file')).uploadFile(file);
  await page.waitForFunction(() => document.querySelector('#attachments').textContent.includes('notes.txt'));
  await ask(page, 'Weather?');
  const body = sent.at(-1);
  assert.deepEqual(body.messages[0], { role: 'system', content: 'You are terse.' });
  assert.equal(body.messages[1].role, 'user');
  assert.ok(body.messages[1].content.startsWith('Weather?'), body.messages[1].content);
  assert.ok(body.messages[1].content.includes('notes.txt') && body.messages[1].content.includes('line one\nline two'));
  assert.equal(body.temperature, 0.3);
  assert.equal(body.max_tokens, 7);
  assert.equal(body.stream, true);
  assert.equal(body.model, 'stories');
  const shown = await page.$eval('.message.assistant:last-of-type', (e) => ({
    reasoning: e.querySelector('details.reasoning .reasoning-text')?.textContent,
    open: e.querySelector('details.reasoning')?.open,
    content: e.querySelector('.content').textContent,
    tool: e.querySelector('.tool-call')?.textContent, figures: e.querySelector('.figures')?.textContent }));
  assert.equal(shown.reasoning, 'The user wants the weather.');
  assert.equal(shown.open, false, 'reasoning is collapsed once the answer is done');
  assert.equal(shown.content.trim(), 'Let me look.');
  assert.equal(shown.tool, 'Tool call: get_weather{"city":"Paris"}');
  assert.match(shown.figures, /5 tokens · context 35 \/ 2048 · 12 prompt tokens cached/);
  assert.equal(await page.$eval('.message.user ul.attached', (e) => e.textContent), '📎 notes.txt');
  // The settings stay with the conversation: the next request carries them too.
  await ask(page, 'And tomorrow?');
  assert.equal(sent.at(-1).temperature, 0.3);
  assert.equal(sent.at(-1).messages.length, 4);
  assert.deepEqual(page.problems, []);
});

test('an attached image goes to a vision model as an image part, and is shown', async () => {
  const page = await openPage();
  await page.select('#model', 'vision/gemma3');
  await page.waitForFunction(() => /vision\/gemma3 is loaded/.test(document.querySelector('#model-status').textContent),
                             { timeout: 60000 });
  const sent = [];
  page.on('request', (req) => { if (req.url().endsWith('/v1/chat/completions')) sent.push(JSON.parse(req.postData())); });
  await (await page.$('#attach-file')).uploadFile(testImage);
  await page.waitForFunction(() => document.querySelector('#attachments').textContent.includes('test-image-1.png'));
  await ask(page, 'What is in this picture?');
  const content = sent.at(-1).messages.at(-1).content;
  assert.equal(content[0].type, 'text');
  assert.equal(content[0].text, 'What is in this picture?');
  assert.equal(content[1].type, 'image_url');
  assert.equal(content[1].image_url.url, `data:image/png;base64,${readFileSync(testImage).toString('base64')}`);
  const answer = await lastAnswer(page);
  assert.equal(answer.role, 'vision/gemma3');
  assert.ok(!(await page.$('.message.assistant:last-of-type .error')), 'the server answered the image');
  assert.match(answer.figures, /tokens/);
  const thumb = await page.$eval('.message.user img.thumb', (i) => ({ ok: i.complete && i.naturalWidth, alt: i.alt }));
  assert.deepEqual(thumb, { ok: 96, alt: 'test-image-1.png' });
  if (shots) await page.screenshot({ path: join(shots, 'webui-image.png') });
  await page.reload({ waitUntil: 'networkidle0' });  // kept with the conversation
  await page.waitForSelector('.message.user img.thumb');
  assert.deepEqual(page.problems, []);
});

test('Markdown: highlighted code with a copy button, tables, math', async () => {
  const page = await openPage();
  await page.select('#model', 'stories');
  const answer = 'Here is **Euler**: $e^{i\\pi} + 1 = 0$, and the sum\n\n$$\\sum_{k=1}^{n} k = \\frac{n(n+1)}{2}$$\n\n' +
                 '| n | sum |\n|---|---|\n| 3 | 6 |\n| 4 | 10 |\n\n```python\ndef total(n):\n    return n * (n + 1) // 2\n```\n';
  await fakeAnswers(page, [{ role: 'assistant', reasoning_content: 'Gauss summed 1..100 as 50 pairs of 101.' },
                           ...[...answer.matchAll(/.{1,9}/gs)].map((m) => ({ content: m[0] }))]);
  await page.evaluate(() => { window.copied = []; navigator.clipboard.writeText = async (t) => { window.copied.push(t); }; });
  await ask(page, 'What is the sum of 1..n?');
  const shown = await page.$eval('.message.assistant:last-of-type .content', (e) => ({
    cells: [...e.querySelectorAll('td')].map((c) => c.textContent), math: e.querySelectorAll('.katex').length,
    display: e.querySelectorAll('.katex-display').length, keywords: e.querySelectorAll('pre code .hljs-keyword').length,
    strong: e.querySelector('strong')?.textContent }));
  assert.deepEqual(shown.cells, ['3', '6', '4', '10']);
  assert.equal(shown.math, 2);
  assert.equal(shown.display, 1);
  assert.ok(shown.keywords >= 2, 'python is highlighted');
  assert.equal(shown.strong, 'Euler');
  await page.click('.message.assistant:last-of-type pre .copy-code');
  assert.deepEqual(await page.evaluate(() => window.copied), ['def total(n):\n    return n * (n + 1) // 2\n']);
  assert.deepEqual(page.problems, []);
  if (shots) await page.screenshot({ path: join(shots, 'webui-markdown.png') });
});

test('regenerate, edit and resend, branch', async () => {
  const page = await openPage();
  await page.select('#model', 'stories');
  const sent = await fakeAnswers(page, [{ role: 'assistant', content: 'An answer.' }]);
  await ask(page, 'First question');
  await ask(page, 'Second question');
  const count = () => page.$$eval('.message', (l) => l.length);
  assert.equal(await count(), 4);
  // Regenerate the last answer: the same request again, the conversation no longer.
  await page.click('.message.assistant:last-of-type .actions button:last-child');
  await page.waitForFunction(() => !document.querySelector('.message.streaming'));
  assert.equal(sent.length, 3);
  assert.deepEqual(sent[2].messages, sent[1].messages);
  assert.equal(await count(), 4);
  // Edit the first question and send it: what followed it is replaced.
  const edit = await page.$$('.message.user .actions button');
  await edit[1].click();
  await page.waitForSelector('.message.user textarea.edit');
  await page.$eval('.message.user textarea.edit', (e) => { e.value = 'First question, edited'; });
  await page.click('.message.user .editing .actions button:last-child');
  await page.waitForFunction(() => document.querySelectorAll('.message').length === 2 &&
                                   !document.querySelector('.message.streaming'));
  assert.deepEqual(sent.at(-1).messages.map((m) => m.content), ['First question, edited']);
  // Branch from the answer: a new conversation with the same two messages.
  await page.click('.message.assistant .actions button:nth-child(3)');
  await page.waitForFunction(() => document.querySelectorAll('#conversations li').length === 2);
  assert.match(await page.$eval('#conversations li.current', (e) => e.textContent), /\(branch\)/);
  assert.equal(await count(), 2);
  assert.deepEqual(page.problems, []);
});

test('conversations: search, rename, delete, export and import', async () => {
  const page = await openPage();
  const conversations = ['apples', 'pears', 'plums'].map((fruit, i) => ({
    id: `c${i}`, title: '', created: i, updated: i, model: 'stories', system: '', params: {},
    messages: [{ id: `m${i}`, role: 'user', content: `About ${fruit}` }, { id: `a${i}`, role: 'assistant', content: `${fruit} are fruit` }] }));
  await page.evaluate((list) => {
    for (const c of list) localStorage.setItem(`ggufd.conversation.${c.id}`, JSON.stringify(c));
  }, conversations);
  await page.reload({ waitUntil: 'networkidle0' });
  const titles = () => page.$$eval('#conversations li .open', (l) => l.map((e) => e.textContent));
  assert.deepEqual(await titles(), ['About plums', 'About pears', 'About apples']);
  await page.type('#search', 'PEAR');
  assert.deepEqual(await titles(), ['About pears']);
  await page.$eval('#search', (e) => { e.value = ''; e.dispatchEvent(new Event('input')); });
  // rename the first
  await page.click('#conversations li:first-child button[title="Rename"]');
  await page.$eval('#conversations li:first-child input', (e) => { e.value = 'Plum notes'; });
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => document.querySelector('#conversations li .open')?.textContent === 'Plum notes');
  // delete the last (confirm answered yes)
  page.once('dialog', (d) => d.accept());
  await page.click('#conversations li:last-child button[title="Delete"]');
  await page.waitForFunction(() => document.querySelectorAll('#conversations li').length === 2);
  assert.deepEqual(await titles(), ['Plum notes', 'About pears']);
  // export: what the download link holds (its click is caught: headless Chromium has no save dialog)
  await page.evaluate(() => {
    window.downloads = [];
    const createObjectURL = URL.createObjectURL;
    URL.createObjectURL = (blob) => { window.downloads.push({ blob }); return createObjectURL(blob); };
    HTMLAnchorElement.prototype.click = function click() { window.downloads.at(-1).name = this.download; };
  });
  await page.click('#export');
  const download = await page.evaluate(async () => ({ name: window.downloads[0]?.name,
                                                      text: await window.downloads[0]?.blob.text() }));
  assert.match(download.name ?? '', /^ggufd-conversations-\d{4}-\d\d-\d\d\.json$/);
  const exported = JSON.parse(download.text);
  const downloads = mkdtempSync(join(tmpdir(), 'ggufd-webui-dl-'));
  assert.ok(exported, 'an export was downloaded');
  assert.deepEqual(exported.conversations.map((c) => c.title || c.messages[0].content).sort(), ['About pears', 'Plum notes']);
  // import into an empty browser: both come back, and a crafted file cannot plant fields
  const fresh = await openPage();
  exported.conversations[0].messages[1].onload = 'x';
  exported.conversations[0].evil = '<img src=x onerror=alert(1)>';
  const file = join(downloads, 'import.json');
  writeFileSync(file, JSON.stringify(exported));
  await (await fresh.$('#import-file')).uploadFile(file);
  await fresh.waitForFunction(() => document.querySelectorAll('#conversations li').length === 2);
  const stored = await fresh.evaluate(() => Object.keys(localStorage).filter((k) => k.startsWith('ggufd.conversation.'))
    .map((k) => JSON.parse(localStorage.getItem(k))));
  assert.equal(stored.length, 2);
  for (const c of stored) {
    assert.equal(c.evil, undefined);
    for (const m of c.messages) assert.equal(m.onload, undefined);
  }
  // a file that is not an export is refused with a message
  writeFileSync(file, '{"nope": 1}');
  await (await fresh.$('#import-file')).uploadFile(file);
  await fresh.waitForFunction(() => /Import failed/.test(document.querySelector('#model-status').textContent));
  assert.deepEqual(page.problems, []);
  assert.deepEqual(fresh.problems, []);
});

test('behind a path prefix (a proxy that maps /ggufd/ to the server)', async () => {
  const upstream = new URL(server.base);
  const proxy = createServer((req, res) => {
    if (!req.url.startsWith('/ggufd/')) {
      res.writeHead(404).end('not under /ggufd/');
      return;
    }
    const forward = httpRequest({ host: upstream.hostname, port: upstream.port, method: req.method,
                                  path: req.url.slice('/ggufd'.length), headers: req.headers }, (up) => {
      res.writeHead(up.statusCode, up.headers);
      up.pipe(res);
    });
    req.pipe(forward);
  });
  await new Promise((ok) => proxy.listen(0, '127.0.0.1', ok));
  try {
    const page = await openPage(`http://127.0.0.1:${proxy.address().port}/ggufd`);
    await page.waitForFunction(() => document.querySelectorAll('#model option').length === 3);
    await page.select('#model', 'stories');
    await ask(page, 'Once upon a time');
    assert.ok((await lastAnswer(page)).text.length > 10);
    assert.deepEqual(page.problems, []);
  } finally {
    proxy.closeAllConnections();
    proxy.close();
  }
});

test('dark theme and a phone-sized layout', async () => {
  const page = await openPage(server.base, { width: 390, height: 800, isMobile: true, hasTouch: true });
  await page.evaluate(() => localStorage.setItem('ggufd.conversation.p1', JSON.stringify({
    id: 'p1', title: '', created: 1, updated: 1, model: 'stories', system: '', params: {},
    messages: [{ id: 'u', role: 'user', content: 'Sum 1..n in Python?' },
               { id: 'a', role: 'assistant', model: 'stories', content: 'Use Gauss: $n(n+1)/2$.\n\n```python\ndef total(n):\n    return n * (n + 1) // 2\n```' }] })));
  await page.reload({ waitUntil: 'networkidle0' });
  await page.waitForSelector('.message.assistant pre');
  await page.click('#theme');
  const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  assert.notEqual(bg, 'rgb(255, 255, 255)');
  assert.equal(await page.$eval('#sidebar', (e) => e.getBoundingClientRect().right <= 0), true, 'the list is hidden');
  assert.equal(await page.evaluate(() => document.documentElement.scrollWidth), 390, 'nothing wider than the phone');
  if (shots) await page.screenshot({ path: join(shots, 'webui-phone-dark.png') });
  await page.click('#open-sidebar');
  await page.waitForFunction(() => document.querySelector('#sidebar').getBoundingClientRect().left >= 0);
  assert.deepEqual(page.problems, []);
});
