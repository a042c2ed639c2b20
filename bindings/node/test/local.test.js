// Zero set-up: with nothing naming an E2B server, the package runs its
// sandboxes on this machine through the e2b-tools CLI's local server,
// started once per process and gone with it; a key given to `configure`
// still goes to the server it names; without a CLI the error says what to do.

import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { describe, it } from 'node:test';
import { until } from './server.js';

const LIMIT = { timeout: 120_000 };
/** This environment without any E2B_*, as on a fresh machine. */
const bare = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('E2B_')));

function run(source, env) {
  const child = spawn(process.execPath, ['--input-type=module', '-e', source], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, stdout, stderr })));
}

/** The pids of the ephemeral local servers running now. */
function ephemeralServers() {
  try {
    return execFileSync('pgrep', ['-f', 'local serve --ephemeral --stop-at-eof']).toString().split(/\s+/).filter(Boolean);
  } catch {
    return [];
  }
}

describe('zero set-up', LIMIT, () => {
  it('with nothing set, the README snippet runs on a local server, gone at exit', async () => {
    const before = ephemeralServers();
    const done = await run(
      `import { loadE2BTools } from 'e2b-tools';
       import { execFileSync } from 'node:child_process';
       const e2b = await loadE2BTools();
       const result = await e2b.callTool('run_code', { code: 'x = 6 * 7\\nprint(x)' });
       const other = await loadE2BTools();
       const again = await other.runCommand({ command: 'echo again' });
       // The pattern in two pieces: this script's own command line holds its source.
       const pattern = 'local serve --ephemeral' + ' --stop-at-eof';
       const servers = execFileSync('pgrep', ['-f', pattern]).toString().trim();
       console.log(result.stdout.trim(), again.stdout.trim(), servers.split(/\\s+/).length);
       await e2b.close();`,
      { ...bare, E2B_TOOLS_CLI: process.env.E2B_TOOLS_CLI },
    );
    assert.equal(done.code, 0, done.stderr);
    // Both instances on one server of the process's own.
    assert.equal(done.stdout.trim(), `42 again ${before.length + 1}`, done.stderr);
    await until(ephemeralServers, (now) => now.length <= before.length, 15_000);
    assert.deepEqual(ephemeralServers(), before, 'the local server outlived its process');
  });

  it('a key given to configure goes to the server it names', async () => {
    const { E2B_API_URL, E2B_SANDBOX_URL, E2B_API_KEY } = process.env;
    const done = await run(
      `import { loadE2BTools } from 'e2b-tools';
       const e2b = await loadE2BTools();
       await e2b.configure(${JSON.stringify({ apiKey: E2B_API_KEY, apiUrl: E2B_API_URL, sandboxUrl: E2B_SANDBOX_URL })});
       console.log((await e2b.runCommand({ command: 'echo named' })).stdout.trim());
       await e2b.close();`,
      { ...bare, E2B_TOOLS_CLI: '/nonexistent/e2b-tools' },
    );
    assert.equal(done.code, 0, done.stderr);
    assert.equal(done.stdout.trim(), 'named');
  });

  it('without a key or a CLI, the error says what to do', async () => {
    const done = await run(
      `import { loadE2BTools } from 'e2b-tools';
       await (await loadE2BTools()).runCommand({ command: 'true' });`,
      { ...bare, PATH: '/usr/bin:/bin' },
    );
    assert.notEqual(done.code, 0);
    assert.match(done.stderr, /LocalServerError/);
    assert.match(done.stderr, /set E2B_API_KEY/);
  });
});
