// Shared by the client-compatibility tests (tests/compat/*.test.mjs): starts a real `ggufd serve`
// on GGUFD_MODEL (the shared stories260K model) or a test's own model, and stops it again.
// Importing this module exits the process with 77 (ctest: skipped) when the shared model is absent.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

// GGUFD_REQUIRE_TEST_DATA=1 (.ci/run sets it): missing test data fails the test instead of
// skipping it, so that a CI run that lost its data is not green.
export const testDataRequired = !['', '0'].includes(process.env.GGUFD_REQUIRE_TEST_DATA ?? '');

export const binary = process.env.GGUFD_BINARY;
export const model = process.env.GGUFD_MODEL;
requireFile(model, 'shared test model');
if (!existsSync(binary ?? '')) throw new Error(`GGUFD_BINARY is not a file: ${binary}`);

// The Qwen3 chat template (Hermes-style <tool_call> tags) from the shared templates next to the
// models; GGUFD_QWEN3_TEMPLATE overrides. null when absent (the tests that need it skip).
const qwen3Template = process.env.GGUFD_QWEN3_TEMPLATE ??
                      join(dirname(model), '..', 'templates', 'Qwen-Qwen3-0.6B.jinja');
export const qwen3TemplateFile = existsSync(qwen3Template) ? qwen3Template : null;

// The two ways the tool tests serve the model: stories260K has no chat template, so the server
// uses its generic tool-call format; with the Qwen3 template the same model goes through the
// Hermes/Qwen <tool_call> format. `args` are extra `serve` arguments; `skip` says why a variant
// cannot run here (false when it can).
export const toolServers = [
  { name: 'generic tool format', args: [], skip: false },
  { name: 'Qwen3 template', args: qwen3TemplateFile ? ['--chat-template-file', qwen3TemplateFile] : [],
    skip: qwen3TemplateFile ? false : missingData(`chat template not found: ${qwen3Template}`) },
];

// A reason to skip for missing test data, returned as the skip reason; under
// GGUFD_REQUIRE_TEST_DATA=1 the process fails (exit 1) saying what is missing instead.
export function missingData(reason) {
  if (testDataRequired) {
    console.error(`FAILED: test data missing: ${reason} (GGUFD_REQUIRE_TEST_DATA=1: a test may not skip for missing data)`);
    process.exit(1);
  }
  return reason;
}

// Exits the process with 77 (ctest: skipped) saying why when `file` is absent (the shared models;
// a test's other models, such as an embedding model next to stories260K); exits 1 instead under
// GGUFD_REQUIRE_TEST_DATA=1.
export function requireFile(file, what) {
  if (!existsSync(file ?? '')) {
    missingData(`${what} not found: ${file}`);
    console.log(`skipped: ${what} not found: ${file}`);
    process.exit(77);
  }
  return file;
}

// Starts `ggufd serve` on a free port with `model` (default: GGUFD_MODEL) aliased `alias`
// (default "stories"); resolves once /health says ready with { base: 'http://127.0.0.1:PORT',
// url: base + '/v1', stop(), log() }: stop() sends SIGTERM and resolves with the exit code (tests
// assert 0); log() is the server's output so far.
export async function startServer({ model: file = model, alias = 'stories', args = [], ctxSize = 256,
                                    parallel = 2 } = {}) {
  const server = spawn(binary, ['serve', '-m', file, '--alias', alias, '--host', '127.0.0.1', '--port', '0',
                                '--threads', '1', '--parallel', String(parallel), '--ctx-size', String(ctxSize),
                                ...args],
                       { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  let timer;
  const exited = new Promise((ok) => server.on('exit', (code, signal) => ok(code ?? signal)));
  const port = await new Promise((resolve, reject) => {
    const onData = (chunk) => {
      log += chunk;
      const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(log);
      if (m) resolve(Number(m[1]));
    };
    server.stdout.on('data', onData);
    server.stderr.on('data', onData);
    exited.then((code) => reject(new Error(`ggufd exited with ${code} before listening:\n${log}`)));
    timer = setTimeout(() => reject(new Error(`ggufd did not listen within 30 s:\n${log}`)), 30000);
  }).finally(() => clearTimeout(timer));
  const base = `http://127.0.0.1:${port}`;
  const stop = async () => {
    server.kill('SIGTERM');
    return exited;
  };
  for (let i = 0; i < 300; ++i) {
    const r = await fetch(`${base}/health`).catch(() => null);
    if (r?.status === 200) return { base, url: `${base}/v1`, stop, log: () => log };
    await new Promise((ok) => setTimeout(ok, 100));
  }
  await stop();
  throw new Error(`ggufd never became ready:\n${log}`);
}

// Imports an npm package of tests/compat, explaining how to install it when it is missing.
export async function importPackage(name) {
  try {
    return await import(name);
  } catch (e) {
    console.error(`the npm package ${name} is not installed: run scripts/install-deps --test ` +
                  '(npm install in tests/compat)');
    throw e;
  }
}

// A random-weight qwen3 as small as the demo model with a 128K context and the Qwen3 vocabulary and
// chat template (`ggufd synth --shape agent-tiny`), for the agent CLIs, whose first prompts run to
// tens of thousands of tokens. Written to a temporary directory; exits 77 when the Qwen3
// vocabulary is absent.
export function agentModel() {
  const vocab = requireFile(join(dirname(model), '..', 'tokenizer', 'ggml-vocab-qwen3.gguf'), 'Qwen3 vocabulary');
  const out = join(mkdtempSync(join(tmpdir(), 'ggufd-agent-')), 'agent-tiny.gguf');
  const r = spawnSync(binary, ['synth', '--shape', 'agent-tiny', '--type', 'F32', '--vocab-from', vocab, '-o', out],
                      { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`ggufd synth failed: ${r.stderr}`);
  return out;
}

// Runs a command to its end with a timeout: { code, signal, stdout, stderr }.
export function runCommand(command, args, { env = {}, cwd, timeout = 600000, input = '' } = {}) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { env: { ...process.env, ...env }, cwd, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeout);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
    child.stdin.end(input);
  });
}
