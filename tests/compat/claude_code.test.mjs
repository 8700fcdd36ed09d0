// The real Claude Code CLI (`claude -p`, @anthropic-ai/claude-code pinned in package.json, which
// speaks only Anthropic's Messages API) completes a turn against a real `ggufd serve` (ctest:
// ClaudeCode.Compat), offline: ANTHROPIC_BASE_URL points at ggufd, a HOME of its own, and
// CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 switches its other traffic off. The model is
// agent-tiny (server.mjs: a random-weight qwen3 with a 128K context), so the answer is gibberish:
// what is checked is that Claude Code's real first request (its tools, system blocks, thinking and
// max_tokens) is served and the turn ends well.
// Usage: node claude_code.test.mjs with GGUFD_BINARY and GGUFD_MODEL set (77: skipped).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, agentModel, runCommand } from './server.mjs';

const claude = join(dirname(fileURLToPath(import.meta.url)), 'node_modules', '.bin', 'claude');
if (!existsSync(claude)) {
  console.error('the npm package @anthropic-ai/claude-code is not installed: run scripts/install-deps --test');
  process.exit(1);
}

let server;

before(async () => {
  // --max-tokens: the random model never ends by itself; Claude Code asks for 32000
  server = await startServer({ model: agentModel(), alias: 'agent-tiny', ctxSize: 131072, parallel: 1,
                               args: ['--max-tokens', '24', '--temperature', '1', '--cache-ram', '64',
                                      '--api-key', 'sk-ant-ggufd'] });
});

after(async () => {
  if (server) assert.equal(await server.stop(), 0, 'ggufd exits 0 on SIGTERM');
});

test('claude -p completes a turn', { timeout: 900000 }, async () => {
  const home = mkdtempSync(join(tmpdir(), 'claude-home-'));
  const work = mkdtempSync(join(tmpdir(), 'claude-work-'));
  const r = await runCommand(claude, ['-p', 'Say hello.', '--output-format', 'json', '--max-turns', '1'], {
    cwd: work,
    timeout: 850000,
    env: {
      HOME: home,
      ANTHROPIC_BASE_URL: server.base,
      ANTHROPIC_API_KEY: 'sk-ant-ggufd',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_AUTOUPDATER: '1',
      DISABLE_TELEMETRY: '1',
      API_TIMEOUT_MS: '800000',
    },
  });
  const log = server.log();
  const served = log.match(/POST \/v1\/messages\S* (\d+)/g) ?? [];
  const detail = `claude exited ${r.code} (${r.signal})\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}\nserver:\n${log}`;
  assert.ok(served.length >= 1, `no POST /v1/messages in the server log\n${detail}`);
  assert.equal(r.code, 0, detail);
  const result = JSON.parse(r.stdout);
  assert.equal(result.type, 'result', detail);
  assert.equal(result.is_error, false, detail);
  console.log(`claude: ${served.length} request(s); ${log.match(/prompt_tokens=\d+ \S+ ttft_ms=[\d.]+/g)?.join(', ')}`);
  console.log(`claude's answer: ${JSON.stringify(result.result)}`);
});
