// The real Codex CLI (`codex exec`, @openai/codex pinned in package.json, which speaks only the
// Responses API) completes a turn against a real `ggufd serve` (ctest: CodexCLI.Compat), offline:
// a CODEX_HOME of its own whose config names ggufd as the model provider (wire_api "responses")
// and turns the update check off. The model is agent-tiny (server.mjs: a random-weight qwen3 with
// a 128K context), so the answer is gibberish: what is checked is that Codex's real first request
// (its instructions, tools, reasoning and include fields) is served and the turn ends well.
// Usage: node codex_cli.test.mjs with GGUFD_BINARY and GGUFD_MODEL set (77: skipped).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, agentModel, runCommand } from './server.mjs';

const codex = join(dirname(fileURLToPath(import.meta.url)), 'node_modules', '.bin', 'codex');
if (!existsSync(codex)) {
  console.error('the npm package @openai/codex is not installed: run scripts/install-deps --test');
  process.exit(1);
}

let server;

before(async () => {
  // --max-tokens: the random model never ends by itself; Codex sends no limit
  server = await startServer({ model: agentModel(), alias: 'agent-tiny', ctxSize: 131072, parallel: 1,
                               args: ['--max-tokens', '24', '--temperature', '1', '--cache-ram', '64'] });
});

after(async () => {
  if (server) assert.equal(await server.stop(), 0, 'ggufd exits 0 on SIGTERM');
});

test('codex exec completes a turn', { timeout: 900000 }, async () => {
  const home = mkdtempSync(join(tmpdir(), 'codex-home-'));
  const work = mkdtempSync(join(tmpdir(), 'codex-work-'));
  writeFileSync(join(home, 'config.toml'), [
    'model = "agent-tiny"',
    'model_provider = "ggufd"',
    'check_for_update_on_startup = false',
    '[model_providers.ggufd]',
    'name = "ggufd"',
    `base_url = "${server.url}"`,
    'wire_api = "responses"',
    'request_max_retries = 0',
    'stream_max_retries = 0',
    '',
  ].join('\n'));
  const r = await runCommand(codex, ['exec', '--skip-git-repo-check', '--color', 'never', 'Say hello.'],
                             { env: { CODEX_HOME: home, OPENAI_API_KEY: 'unused' }, cwd: work, timeout: 850000 });
  const log = server.log();
  const served = log.match(/POST \/v1\/responses (\d+)/g) ?? [];
  assert.equal(r.code, 0, `codex exited ${r.code} (${r.signal})\nstdout:\n${r.stdout}\nstderr:\n${r.stderr}\nserver:\n${log}`);
  assert.ok(served.length >= 1, `no POST /v1/responses in the server log:\n${log}`);
  assert.ok(served.every((s) => s.endsWith(' 200')), served.join('\n'));
  console.log(`codex: ${served.length} request(s); ${log.match(/prompt_tokens=\d+ \S+ ttft_ms=[\d.]+/g)?.join(', ')}`);
  console.log(`codex's output: ${JSON.stringify(r.stdout.slice(-300))}`);
});
