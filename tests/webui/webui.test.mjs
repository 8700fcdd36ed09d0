// The chat page (webui/) in a real headless Chromium (Debian's chromium, driven by the pinned
// puppeteer-core of tests/compat) against a real `ggufd serve` in router mode: the page loads
// without console errors, an answer streams in, Stop stops it, a conversation survives a reload,
// the model picker lists the router's chat models (not its embedding model) and switches, model
// output holding <script> and event handlers stays text, and the API-key prompt works.
// GGUFD_WEBUI_SCREENSHOTS=DIR saves the main views there (docs/ holds the README's).
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, symlinkSync, mkdirSync } from 'node:fs';
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
  assert.deepEqual([...ids].sort(), ['stories', 'tiny-llama'], 'chat models only, not the embedding model');
  assert.deepEqual(page.problems, []);
  if (shots) await page.screenshot({ path: join(shots, 'webui-empty.png') });
});

test('an answer streams in with its figures, and the conversation survives a reload', async () => {
  const page = await openPage();
  await page.select('#model', 'stories');
  await ask(page, 'Once upon a time');
  const answer = await lastAnswer(page);
  assert.ok(answer.text.length > 20, answer.text);
  assert.match(answer.figures, /tokens\/s · first token \d+ ms · \d+ tokens · context \d+ \/ 2048/);
  await page.reload({ waitUntil: 'networkidle0' });
  await page.waitForSelector('.message.assistant');
  assert.equal((await lastAnswer(page)).text, answer.text);
  assert.equal(await page.$eval('#conversations li.current .open', (e) => e.textContent), 'Once upon a time');
  assert.equal(await page.$eval('.message.user .content', (e) => e.textContent), 'Once upon a time');
  assert.deepEqual(page.problems, []);
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
  if (shots) await page.screenshot({ path: join(shots, 'webui-chat.png') });
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

test('dark theme and a phone-sized layout', async () => {
  const page = await openPage(server.base, { width: 390, height: 800, isMobile: true, hasTouch: true });
  await page.click('#theme');
  const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  assert.notEqual(bg, 'rgb(255, 255, 255)');
  assert.equal(await page.$eval('#sidebar', (e) => e.getBoundingClientRect().right <= 0), true, 'the list is hidden');
  await page.click('#open-sidebar');
  await page.waitForFunction(() => document.querySelector('#sidebar').getBoundingClientRect().left >= 0);
  assert.deepEqual(page.problems, []);
  if (shots) await page.screenshot({ path: join(shots, 'webui-phone-dark.png') });
});
