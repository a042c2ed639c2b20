// Lifecycle events and the exit cleanup of the installed package, against
// the local server: events in order with their fields, as the component
// reports them (a snapshot's, a sandbox found gone); listeners that throw,
// reject or never settle lose their events (counted) and nothing else;
// scripts that exit without closing, or get SIGTERM or SIGINT in the middle
// of their first call (the one making the sandbox) or a later one, or twice,
// or while the first call makes its sandbox, leave no sandbox and end by
// the signal; a sandbox attached to is left running unless `killOnExit`;
// a SIGTERM listener of the script's own keeps control.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EVENT_KINDS, loadE2BTools } from 'e2b-tools';
import { killNew, liveSandboxes, script, slowCreates, until } from './server.js';

const { E2B_API_URL, E2B_API_KEY } = process.env;
const LIMIT = { timeout: 90_000 };

describe('lifecycle events', LIMIT, () => {
  it('arrive in order with their fields', async () => {
    const e2b = await loadE2BTools();
    const seen = [];
    const ends = [];
    e2b.on('event', (event) => seen.push(event));
    e2b.on('exec_end', (event) => ends.push(event.tool));
    const secret = 'marker-in-arguments-9913';
    assert.equal((await e2b.callTool('run_code', { code: `s = '${secret}'` })).success, true);
    await assert.rejects(e2b.readFile('/home/user/missing.txt'), { kind: 'not-found' });
    await e2b.close();
    await until(() => seen.length, (n) => n >= 6);
    assert.deepEqual(
      seen.map((e) => e.kind),
      ['sandbox_start', 'exec_start', 'exec_end', 'exec_start', 'exec_end', 'sandbox_stop'],
    );
    const [created, start, firstEnd, , typedEnd, stop] = seen;
    assert.equal(created.detail, 'created');
    const sandbox = created.sandboxId;
    assert.ok(sandbox);
    // The component reports the call's start once its sandbox exists.
    assert.deepEqual([start.tool, start.sandboxId], ['run_code', sandbox]);
    assert.deepEqual([firstEnd.success, firstEnd.sandboxId], [true, sandbox]);
    assert.ok(firstEnd.duration >= 0);
    assert.deepEqual(
      [typedEnd.tool, typedEnd.success, typedEnd.errorKind],
      ['read_file', false, 'not-found'],
    );
    assert.deepEqual([stop.detail, stop.success, stop.sandboxId], ['shutdown', true, sandbox]);
    assert.deepEqual(ends, ['run_code', 'read_file']);
    for (const event of seen) {
      assert.ok(EVENT_KINDS.includes(event.kind));
      assert.ok(!JSON.stringify(event).includes(secret), JSON.stringify(event));
      assert.ok(!JSON.stringify(event).includes(E2B_API_KEY));
    }
    assert.equal(e2b.droppedEvents, 0);
  });

  it('a listener that throws, rejects or never settles breaks nothing', async () => {
    const e2b = await loadE2BTools();
    const good = [];
    e2b.on('event', () => {
      throw new Error('a listener bug');
    });
    e2b.on('exec_end', async () => {
      throw new Error('an async listener bug');
    });
    e2b.on('exec_start', () => new Promise(() => {}));
    e2b.on('event', (event) => good.push(event.kind));
    const result = await e2b.callTool('run_command', { command: 'echo hi' });
    assert.equal(result.stdout, 'hi\n');
    await e2b.close();
    await until(() => good.length, (n) => n >= 4);
    assert.deepEqual(good, ['sandbox_start', 'exec_start', 'exec_end', 'sandbox_stop']);
    // Four from the throwing one, one from the rejecting one.
    await until(() => e2b.droppedEvents, (n) => n >= 5);
    assert.equal(e2b.droppedEvents, 5);
  });

  it("a snapshot's event comes from the component, with its id", async () => {
    const e2b = await loadE2BTools();
    const seen = [];
    e2b.on('event', (event) => seen.push(event));
    try {
      await e2b.configure({ tools: ['default', 'create_snapshot'] });
      const taken = await e2b.callTool('create_snapshot', { name: 'node-events' });
      assert.equal(taken.success, true, JSON.stringify(taken));
      const typed = await e2b.createSnapshot();
      const snapshots = await until(
        () => seen.filter((e) => e.kind === 'snapshot'),
        (found) => found.length >= 2,
      );
      const sandbox = await e2b.sandboxId();
      assert.deepEqual(
        snapshots.map(({ tool, sandboxId, detail }) => [tool, sandboxId, detail]),
        [
          ['create_snapshot', sandbox, taken.snapshot_id],
          ['create_snapshot', sandbox, typed.snapshotId],
        ],
      );
      // Each after its call's end.
      const kinds = seen.map((e) => e.kind);
      assert.deepEqual(kinds.slice(kinds.indexOf('snapshot') - 1), [
        'exec_end',
        'snapshot',
        'exec_start',
        'exec_end',
        'snapshot',
      ]);
    } finally {
      await e2b.close();
    }
  });

  it('a sandbox killed behind its back is a sandbox_stop `gone` at the next call', async () => {
    const e2b = await loadE2BTools();
    const stops = [];
    e2b.on('sandbox_stop', (event) => stops.push(event));
    try {
      await e2b.runCommand({ command: 'true' });
      const sandbox = await e2b.sandboxId();
      const response = await fetch(`${E2B_API_URL}/sandboxes/${sandbox}`, {
        method: 'DELETE',
        headers: { 'X-API-Key': E2B_API_KEY },
      });
      assert.ok(response.ok, String(response.status));
      await assert.rejects(e2b.runCommand({ command: 'true' }), { kind: 'sandbox-expired' });
      await until(() => stops.length, (n) => n >= 1);
      assert.equal(stops.length, 1, JSON.stringify(stops));
      const [stop] = stops;
      assert.deepEqual([stop.sandboxId, stop.detail, stop.success], [sandbox, 'gone', false]);
      assert.ok(stop.duration >= 0);
      // Told once: the shutdown finds nothing to kill.
      assert.equal(await e2b.shutdown(), false);
      await e2b.runCommand({ command: 'true' });
      assert.notEqual(await e2b.sandboxId(), sandbox);
      assert.equal(stops.length, 1, JSON.stringify(stops));
    } finally {
      await e2b.close();
    }
  });

  it('an error event reaches only error listeners there are', async () => {
    const e2b = await loadE2BTools();
    // No 'error' listener: nothing is thrown at the emitter.
    await e2b.close();
    await assert.rejects(e2b.callTool('run_code', { code: '1' }), /closed/);
  });
});

describe('no sandbox outlives its process', LIMIT, () => {
  for (const [name, ending] of [
    ['a script that just ends', ''],
    ['a script that calls process.exit', 'process.exit(0);'],
  ]) {
    it(name, async () => {
      const before = await liveSandboxes();
      const { exited } = script(`
        import { loadE2BTools } from 'e2b-tools';
        const e2b = await loadE2BTools();
        const made = await e2b.callTool('run_code', { code: 'x = 1' });
        console.log('made', made.success, await e2b.sandboxId());
        ${ending}
      `);
      const { code, stdout, stderr } = await exited;
      assert.equal(code, 0, stderr);
      assert.match(stdout, /^made true \S+/, stderr);
      const id = stdout.split(' ')[2].trim();
      // Gone when the process is: the exit hook waited for the kill.
      assert.ok(!(await liveSandboxes()).includes(id), `${id} is still running`);
      assert.deepEqual(
        (await liveSandboxes()).filter((s) => !before.includes(s)),
        [],
      );
    });
  }

  /** A script whose first call makes its sandbox; a later call runs long unless `first`. */
  const longCall = (extra = '', { first = false } = {}) => `
    import { loadE2BTools } from 'e2b-tools';
    ${extra}
    const e2b = await loadE2BTools();
    e2b.on('exec_start', ({ tool, sandboxId }) => console.log('running', tool, sandboxId));
    ${first ? '' : "await e2b.runCommand({ command: 'true' });"}
    await e2b.runCommand({ command: 'sleep 60' });
    console.log('the call returned');
  `;

  /**
   * Runs `source`, signals it once the long call runs (the second time
   * `running` is printed, or the first with `first`) and waits for its end:
   * the sandbox it ran in, the ids new on the server since it started, and
   * how long it took to end after the signal.
   */
  async function signalled(source, signals, { first = false } = {}) {
    const before = new Set(await liveSandboxes());
    let id;
    let runs = 0;
    let signalledAt;
    const { exited } = script(source, {
      onLine: (line, child) => {
        if (!line.startsWith('running ')) return;
        runs += 1;
        if (runs !== (first ? 1 : 2)) return;
        id = line.split(' ')[2];
        setTimeout(() => {
          signalledAt = Date.now();
          for (const signal of signals) child.kill(signal);
        }, 500);
      },
    });
    const ended = await exited;
    const took = Date.now() - signalledAt;
    const left = await until(liveSandboxes, (ids) => ids.every((s) => before.has(s)));
    return { ...ended, id, took, left: left.filter((s) => !before.has(s)) };
  }

  for (const signal of ['SIGTERM', 'SIGINT']) {
    for (const first of [true, false]) {
      const which = first ? 'the first call (it made the sandbox)' : 'a later call';
      it(`${signal} in the middle of ${which}: no sandbox left, ended by it`, async () => {
        const ended = await signalled(longCall('', { first }), [signal], { first });
        const { code, signal: by, stdout, stderr } = ended;
        assert.equal(by, signal, `code ${code}: ${stdout} ${stderr}`);
        assert.ok(ended.took < 5_000, `ended ${ended.took} ms after the signal`);
        assert.ok(!stdout.includes('the call returned'));
        assert.ok(ended.id);
        assert.deepEqual(ended.left, [], `${ended.left} still running`);
        assert.equal(stderr, '');
      });
    }
  }

  it('SIGTERM and SIGINT at once: one cleanup, no sandbox, no stack trace', async () => {
    const ended = await signalled(longCall(), ['SIGTERM', 'SIGINT']);
    assert.ok(['SIGTERM', 'SIGINT'].includes(ended.signal), `code ${ended.code}: ${ended.stderr}`);
    assert.ok(ended.took < 5_000, `ended ${ended.took} ms after the signals`);
    assert.deepEqual(ended.left, [], `${ended.left} still running`);
    assert.equal(ended.stderr, '');
  });

  it('a signal while the first call makes the sandbox: the cleanup waits for it', async () => {
    const before = new Set(await liveSandboxes());
    // The server has made the sandbox, but its answer reaches the script a
    // second later (as a create E2B finishes after its client went away):
    // the script is signalled in between, before the component knows it.
    let child;
    let signalledAt;
    const proxy = await slowCreates(1000, () => {
      signalledAt = Date.now();
      child.kill('SIGTERM');
    });
    try {
      const started = script(
        `
        import { loadE2BTools } from 'e2b-tools';
        const e2b = await loadE2BTools();
        e2b.on('sandbox_start', () => console.log('the sandbox was reported'));
        await e2b.runCommand({ command: 'sleep 60' });
      `,
        { env: { E2B_API_URL: proxy.url } },
      );
      child = started.child;
      const { code, signal, stdout, stderr } = await started.exited;
      assert.ok(signalledAt, `never signalled: ${stdout} ${stderr}`);
      const took = Date.now() - signalledAt;
      assert.equal(signal, 'SIGTERM', `code ${code}: ${stdout} ${stderr}`);
      assert.ok(took < 5_000, `ended ${took} ms after the signal`);
      assert.equal(stderr, '');
      const left = await until(liveSandboxes, (ids) => ids.every((s) => before.has(s)));
      assert.deepEqual(
        left.filter((s) => !before.has(s)),
        [],
      );
    } finally {
      await proxy.close();
      await killNew(before);
    }
  });

  /** Makes a sandbox with another instance, for a script to attach to. */
  async function attachable() {
    const owner = await loadE2BTools();
    const id = await owner.prepare();
    return { owner, id };
  }

  for (const [name, option] of [
    ['is left running when the script ends', ''],
    ['is killed with killOnExit', ', killOnExit: true'],
  ]) {
    it(`a sandbox attached to (sandboxId) ${name}`, async () => {
      const { owner, id } = await attachable();
      try {
        const { code, stdout, stderr } = await script(`
          import { loadE2BTools } from 'e2b-tools';
          const e2b = await loadE2BTools();
          e2b.on('sandbox_start', ({ detail }) => console.log('start', detail));
          await e2b.configure({ sandboxId: '${id}'${option} });
          const ran = await e2b.runCommand({ command: 'echo attached' });
          console.log('ran', ran.stdout.trim(), await e2b.sandboxId());
        `).exited;
        assert.equal(code, 0, stderr);
        assert.match(stdout, new RegExp(`start resumed\nran attached ${id}`), stderr);
        const live = (await liveSandboxes()).includes(id);
        assert.equal(live, !option, option ? `${id} still running` : `${id} was killed`);
      } finally {
        await owner.close();
      }
    });
  }

  it('a sandbox attached to is left running on SIGTERM in the middle of a call', async () => {
    const { owner, id } = await attachable();
    try {
      const ended = await signalled(
        longCall(`const attach = (e2b) => e2b.configure({ sandboxId: '${id}' });`).replace(
          'const e2b = await loadE2BTools();',
          'const e2b = await loadE2BTools(); await attach(e2b);',
        ),
        ['SIGTERM'],
      );
      assert.equal(ended.signal, 'SIGTERM', ended.stderr);
      assert.equal(ended.id, id);
      assert.ok((await liveSandboxes()).includes(id), `${id} was killed`);
    } finally {
      await owner.close();
    }
  });

  it("a SIGTERM listener of the script's own keeps control", async () => {
    let id;
    const { exited } = script(
      // It looks at its sandbox first and exits a little later: until then
      // the signal is its own, and the sandbox still there.
      longCall(`process.on('SIGTERM', async () => {
        console.log('own listener');
        await new Promise((resolve) => setTimeout(resolve, 300));
        const live = await (await fetch(process.env.E2B_API_URL + '/sandboxes', {
          headers: { 'X-API-Key': process.env.E2B_API_KEY },
        })).json();
        console.log('sandboxes', live.map((s) => s.sandboxID).join(','));
        process.exit(7);
      });`),
      {
        onLine: (line, child) => {
          // The second call, the long one.
          if (!line.startsWith('running ') || id !== undefined) return;
          id = line.split(' ')[2];
          setTimeout(() => child.kill('SIGTERM'), 1000);
        },
      },
    );
    const { code, stdout, stderr } = await exited;
    assert.equal(code, 7, `${stdout} ${stderr}`);
    assert.match(stdout, /own listener/);
    assert.match(stdout, new RegExp(`sandboxes .*${id}`), 'killed before the application exited');
    assert.ok(!(await liveSandboxes()).includes(id), `${id} is still running`);
  });
});
