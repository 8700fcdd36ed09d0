// The agent-session benchmark: records what a real agent CLI sends during a session (Claude Code on
// /v1/messages, Codex CLI on /v1/responses), then replays those requests against any server with
// both routes and reports time to first token per turn, as JSON.
//
//   node bench/agent_session.mjs record --cli claude|codex --server URL --out DIR [--turns N]
//   node bench/agent_session.mjs replay --session DIR --server URL [--label NAME] [--api-key KEY]
//                                     [--max-tokens N]
//
// record puts a forwarding proxy between the CLI and `--server` (a ggufd: it answers the session),
// runs the CLI's first turn and N-1 follow-up turns in one session (claude -p / -p --continue;
// codex exec / codex exec resume --last) and saves each generation request body, in order, as
// DIR/NNN-<route>.json. The CLIs come from tests/compat/node_modules (scripts/install-deps --test)
// and run offline (CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC; a Codex config with the provider).
// The recorded files hold the CLI's own system prompt and tools: keep them out of the repository.
//
// replay sends the recorded requests in order, streamed, each once the one before has finished,
// and measures for each the time to the first generated event (text, reasoning or tool input) and
// to the end; then the first request once more: a second session with the same system prompt and
// tools. --max-tokens N replaces each request's limit (the CLIs ask for up to 32,000 tokens, and a
// server that only takes a default from its command line would generate them all). Output: {"label", "server", "requests": [{"file", "route", "bytes", "ttft_ms", "total_ms"}],
// "second_session_first_turn": {...}}. Compare servers on the same model file.
import http from 'node:http';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const bin = join(here, '..', 'tests', 'compat', 'node_modules', '.bin');

function args() {
  const a = { turns: 3, label: 'server', apiKey: 'unused' };
  const argv = process.argv.slice(2);
  a.mode = argv.shift();
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, '').replace(/-(\w)/g, (_, c) => c.toUpperCase());
    a[key] = ['turns', 'maxTokens'].includes(key) ? Number(argv[i + 1]) : argv[i + 1];
  }
  if (!['record', 'replay'].includes(a.mode) || !a.server) {
    console.error('usage: agent_session.mjs record --cli claude|codex --server URL --out DIR [--turns N]\n' +
                  '       agent_session.mjs replay --session DIR --server URL [--label NAME] [--api-key KEY] [--max-tokens N]');
    process.exit(2);
  }
  return a;
}

// A proxy to `target` that saves generation request bodies into `out`; resolves with its port.
function recordingProxy(target, out) {
  let n = 0;
  const server = http.createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = Buffer.concat(chunks);
    const path = req.url.split('?')[0];
    if (req.method === 'POST' && /\/v1\/(messages|responses)$/.test(path)) {
      const route = path.endsWith('messages') ? 'messages' : 'responses';
      writeFileSync(join(out, `${String(n++).padStart(3, '0')}-${route}.json`), body);
    }
    const headers = { ...req.headers };
    delete headers.host;
    const r = await fetch(target + req.url, { method: req.method, headers, body: body.length ? body : undefined });
    res.writeHead(r.status, Object.fromEntries(r.headers));
    if (r.body) for await (const c of r.body) res.write(c);
    res.end();
  });
  return new Promise((ok) => server.listen(0, '127.0.0.1', () => ok({ server, port: server.address().port })));
}

function run(command, argv, env, cwd) {
  return new Promise((ok) => {
    const child = spawn(command, argv, { env: { ...process.env, ...env }, cwd, stdio: ['ignore', 'pipe', 'inherit'] });
    let stdout = '';
    child.stdout.on('data', (d) => { stdout += d; });
    child.on('exit', (code) => ok({ code, stdout }));
  });
}

const prompts = ['Look at this directory and say what is in it.', 'Now say it in one sentence.',
                 'Thanks. Anything else?', 'And once more, shorter.'];

async function record(a) {
  mkdirSync(a.out, { recursive: true });
  const { server, port } = await recordingProxy(a.server.replace(/\/$/, ''), a.out);
  const home = mkdtempSync(join(tmpdir(), 'agent-home-'));
  const work = mkdtempSync(join(tmpdir(), 'agent-work-'));
  for (let t = 0; t < a.turns; ++t) {
    const prompt = prompts[t % prompts.length];
    let r;
    if (a.cli === 'claude') {
      r = await run(join(bin, 'claude'), [...(t > 0 ? ['--continue'] : []), '-p', prompt, '--output-format', 'json'], {
        HOME: home, ANTHROPIC_BASE_URL: `http://127.0.0.1:${port}`, ANTHROPIC_API_KEY: a.apiKey,
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', DISABLE_AUTOUPDATER: '1', API_TIMEOUT_MS: '3600000',
      }, work);
    } else {
      writeFileSync(join(home, 'config.toml'), ['model = "local"', 'model_provider = "local"',
        'check_for_update_on_startup = false', '[model_providers.local]', 'name = "local"',
        `base_url = "http://127.0.0.1:${port}/v1"`, 'wire_api = "responses"', 'stream_idle_timeout_ms = 3600000', ''].join('\n'));
      const argv = t > 0 ? ['exec', '--skip-git-repo-check', 'resume', '--last', prompt] : ['exec', '--skip-git-repo-check', prompt];
      r = await run(join(bin, 'codex'), argv, { CODEX_HOME: home, OPENAI_API_KEY: a.apiKey }, work);
    }
    console.error(`turn ${t + 1}: exit ${r.code}`);
  }
  server.close();
  console.error(`recorded ${readdirSync(a.out).length} requests in ${a.out}`);
}

// Sends one recorded request, streamed; times the first generated event and the end.
async function replayOne(server, file, apiKey, maxTokens) {
  const route = file.includes('messages') ? 'messages' : 'responses';
  const body = JSON.parse(readFileSync(file, 'utf8'));
  body.stream = true;
  if (maxTokens) body[route === 'messages' ? 'max_tokens' : 'max_output_tokens'] = maxTokens;
  const text = JSON.stringify(body);
  const start = performance.now();
  const r = await fetch(`${server}/v1/${route}`, {
    method: 'POST', body: text,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}`, 'x-api-key': apiKey,
               'anthropic-version': '2023-06-01' },
  });
  let ttft = null;
  let buffer = '';
  const decoder = new TextDecoder();
  const first = /"type":\s*"(content_block_delta|response\.output_text\.delta|response\.reasoning_text\.delta|response\.function_call_arguments\.delta)"/;
  for await (const chunk of r.body) {
    buffer += decoder.decode(chunk, { stream: true });
    if (ttft === null && first.test(buffer)) ttft = performance.now() - start;
    if (buffer.length > 1 << 16) buffer = buffer.slice(-1024);
  }
  return { file: file.split('/').pop(), route, status: r.status, bytes: text.length,
           ttft_ms: ttft === null ? null : Math.round(ttft), total_ms: Math.round(performance.now() - start) };
}

async function replay(a) {
  const files = readdirSync(a.session).filter((f) => f.endsWith('.json')).sort().map((f) => join(a.session, f));
  if (files.length === 0) throw new Error(`no recorded requests in ${a.session}`);
  const server = a.server.replace(/\/$/, '');
  const requests = [];
  for (const f of files) {
    requests.push(await replayOne(server, f, a.apiKey, a.maxTokens));
    console.error(JSON.stringify(requests.at(-1)));
  }
  const again = await replayOne(server, files[0], a.apiKey, a.maxTokens);
  console.log(JSON.stringify({ label: a.label, server, requests, second_session_first_turn: again }, null, 2));
}

const a = args();
if (a.mode === 'record') await record(a);
else await replay(a);
