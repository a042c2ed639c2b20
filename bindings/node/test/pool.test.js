// The warm pool through the real component and the local server: an
// instance taken from it runs in a sandbox made before it was taken; a
// sandbox killed behind the pool's back is never handed out; the pool
// refills; closing it, the script's end, or a signal (also while it is
// still making its sandboxes) leaves no sandbox of its own.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_POOL_SIZE, ToolError, WarmPool } from 'e2b-tools';
import { killNew, liveSandboxes, script, slowCreates, until } from './server.js';

const { E2B_API_URL, E2B_API_KEY } = process.env;
const LIMIT = { timeout: 120_000 };
/** A script that fills a pool of 2, takes one and waits for the refill. */
const FILLED = `
  import { WarmPool } from 'e2b-tools';
  const pool = await WarmPool.start(2);
  const full = (n) => new Promise((resolve) => {
    const check = () => (pool.stats.made >= n && pool.stats.waiting === 2 ? resolve() : setTimeout(check, 50));
    check();
  });
  await full(2);
  const e2b = await pool.take();
  const ran = await e2b.callTool('run_command', { command: 'true' });
  await full(3);
  console.log('ready', ran.success);
`;

async function waiting(pool, n) {
  const stats = await until(
    () => pool.stats,
    (s) => s.waiting >= n,
    60_000,
  );
  assert.ok(stats.waiting >= n, JSON.stringify(stats));
}

describe('WarmPool', LIMIT, () => {
  it('hands out an instance whose sandbox was made ahead, and refills', async () => {
    const pool = await WarmPool.start(1);
    try {
      await waiting(pool, 1);
      const madeAhead = await liveSandboxes();
      const e2b = await pool.take();
      try {
        const sandbox = await e2b.sandboxId();
        // No create on the first call's path: its sandbox was there before.
        assert.ok(madeAhead.includes(sandbox), `${sandbox} not in ${madeAhead}`);
        const result = await e2b.callTool('run_code', { code: 'print(6 * 7)' });
        assert.equal(result.success, true, JSON.stringify(result));
        assert.equal(await e2b.sandboxId(), sandbox);
        const stats = await until(
          () => pool.stats,
          (s) => s.made >= 2 && s.waiting === 1,
          60_000,
        );
        assert.deepEqual([stats.made, stats.waiting, stats.handedOut], [2, 1, 1]);
      } finally {
        await e2b.close();
      }
    } finally {
      await pool.close();
    }
  });

  it('never hands out a sandbox killed behind its back', async () => {
    const before = new Set(await liveSandboxes());
    const pool = await WarmPool.start(1);
    try {
      await waiting(pool, 1);
      const [dead] = (await liveSandboxes()).filter((id) => !before.has(id));
      const response = await fetch(`${E2B_API_URL}/sandboxes/${dead}`, {
        method: 'DELETE',
        headers: { 'X-API-Key': E2B_API_KEY },
      });
      assert.ok(response.status === 204 || response.status === 200, String(response.status));
      const e2b = await pool.take();
      try {
        assert.notEqual(await e2b.sandboxId(), dead);
        const result = await e2b.callTool('run_command', { command: 'echo alive' });
        assert.equal(result.stdout, 'alive\n', JSON.stringify(result));
        assert.equal(pool.stats.discarded, 1);
      } finally {
        await e2b.close();
      }
    } finally {
      await pool.close();
    }
  });

  it('kills what waits when closed, then gives fresh instances', async () => {
    const before = new Set(await liveSandboxes());
    const pool = await WarmPool.start(2);
    await waiting(pool, 2);
    const made = (await liveSandboxes()).filter((id) => !before.has(id));
    assert.equal(made.length, 2);
    await pool.close();
    const after = await liveSandboxes();
    assert.deepEqual(
      made.filter((id) => after.includes(id)),
      [],
    );
    const e2b = await pool.take();
    try {
      assert.equal(await e2b.sandboxId(), undefined);
    } finally {
      await e2b.close();
    }
  });

  it('refuses a size out of range and options the component rejects', async () => {
    for (const size of [0, MAX_POOL_SIZE + 1, 1.5, '2']) {
      await assert.rejects(WarmPool.start(size), /a warm pool holds 1 to 64 sandboxes/);
    }
    await assert.rejects(
      WarmPool.start(1, { config: { timeoutSeconds: -1 } }),
      (err) => err instanceof TypeError || err instanceof ToolError,
    );
  });

  it('leaves no sandbox when the script ends without closing it', async () => {
    const before = new Set(await liveSandboxes());
    const { code, stdout, stderr } = await script(FILLED).exited;
    assert.equal(code, 0, stderr);
    assert.match(stdout, /ready true/, stderr);
    const left = await until(liveSandboxes, (ids) => ids.every((id) => before.has(id)));
    assert.deepEqual(
      left.filter((id) => !before.has(id)),
      [],
    );
  });

  for (const signal of ['SIGTERM', 'SIGINT']) {
    it(`leaves no sandbox on ${signal}`, async () => {
      const before = new Set(await liveSandboxes());
      const ended = await script(
        `${FILLED}\nawait new Promise((resolve) => setTimeout(resolve, 120_000));`,
        {
          onLine: (line, child) => {
            if (line.startsWith('ready')) child.kill(signal);
          },
        },
      ).exited;
      assert.equal(ended.signal, signal, `code ${ended.code}: ${ended.stdout} ${ended.stderr}`);
      const left = await until(liveSandboxes, (ids) => ids.every((id) => before.has(id)));
      assert.deepEqual(
        left.filter((id) => !before.has(id)),
        [],
      );
    });
  }

  for (const signal of ['SIGTERM', 'SIGINT']) {
    it(`leaves no sandbox on ${signal} while it fills, and no stack trace`, async () => {
      const before = new Set(await liveSandboxes());
      // Signalled when the server has made the second sandbox and its
      // answer is still on the way: one waits, one is being made.
      let child;
      let creates = 0;
      let signalledAt;
      const proxy = await slowCreates(1000, () => {
        creates += 1;
        if (creates !== 2) return;
        signalledAt = Date.now();
        child.kill(signal);
      });
      try {
        const started = script(
          `
          import { WarmPool } from 'e2b-tools';
          await WarmPool.start(3);
          await new Promise((resolve) => setTimeout(resolve, 120_000));
        `,
          { env: { E2B_API_URL: proxy.url } },
        );
        child = started.child;
        const ended = await started.exited;
        assert.ok(signalledAt, `never signalled: ${ended.stdout} ${ended.stderr}`);
        const took = Date.now() - signalledAt;
        assert.equal(ended.signal, signal, `code ${ended.code}: ${ended.stdout} ${ended.stderr}`);
        assert.ok(took < 5_000, `ended ${took} ms after the signal`);
        assert.equal(ended.stderr, '');
        const left = await until(liveSandboxes, (ids) => ids.every((id) => before.has(id)));
        assert.deepEqual(
          left.filter((id) => !before.has(id)),
          [],
        );
      } finally {
        await proxy.close();
        await killNew(before);
      }
    });
  }

  it('serves only its own options', async () => {
    const pool = await WarmPool.start(1, { config: { timeoutSeconds: 120 } });
    try {
      assert.equal(pool.serves({ timeoutSeconds: 120 }), true);
      assert.equal(pool.serves({ timeoutSeconds: 300 }), false);
      assert.equal(pool.serves({}), false);
    } finally {
      await pool.close();
    }
  });
});
