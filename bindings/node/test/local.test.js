// Zero set-up: with nothing naming an E2B server, the package runs its
// sandboxes on this machine through a local server (the e2b-tools CLI's,
// or the e2b-local of the optional dependency @e2b-tools/local-linux-x64),
// started once per process and gone with it; a key given to `configure`
// still goes to the server it names; without any server the error says
// what to do.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { script, until } from './server.js';

const LIMIT = { timeout: 120_000 };
/** This environment without any E2B_*, as on a fresh machine. */
const bare = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('E2B_')));

/** Runs an ES module script in the test app with exactly `env`. */
const run = (source, env) => script(source, { baseEnv: env }).exited;

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

  it('with the platform package, the README snippet runs on its own server', async (t) => {
    if (!process.env.E2B_TOOLS_NPM_PLATFORM_TARBALL) {
      t.skip('no @e2b-tools/local-linux-x64 installed');
      return;
    }
    // No CLI named nor on PATH: only the bundled e2b-local can serve.
    const done = await run(
      `import { loadE2BTools } from 'e2b-tools';
       import { execFileSync } from 'node:child_process';
       import { readlinkSync } from 'node:fs';
       const e2b = await loadE2BTools();
       const result = await e2b.callTool('run_code', { code: 'print(6 * 7)' });
       // The server is this process's child.
       const [pid] = execFileSync('pgrep', ['-P', String(process.pid)]).toString().split(/\\s+/);
       console.log(result.stdout.trim(), readlinkSync('/proc/' + pid + '/exe').split('/').pop());
       await e2b.close();`,
      { ...bare, PATH: '/usr/bin:/bin' },
    );
    assert.equal(done.code, 0, done.stderr);
    assert.equal(done.stdout.trim(), '42 e2b-local', done.stderr);
  });

  it('without a key or a server, the error says what to do', async () => {
    // As where the platform package is not installed (npm skips it on
    // other platforms): its server moved away for this run.
    const bundled = join('node_modules', '@e2b-tools', 'local-linux-x64', 'bin', 'e2b-local');
    const hidden = existsSync(bundled);
    if (hidden) renameSync(bundled, `${bundled}.hidden`);
    let done;
    try {
      done = await run(
        `import { loadE2BTools } from 'e2b-tools';
         await (await loadE2BTools()).runCommand({ command: 'true' });`,
        { ...bare, PATH: '/usr/bin:/bin' },
      );
    } finally {
      if (hidden) renameSync(`${bundled}.hidden`, bundled);
    }
    assert.notEqual(done.code, 0);
    assert.match(done.stderr, /LocalServerError/);
    assert.match(done.stderr, /set E2B_API_KEY/);
  });
});
