// Lifecycle events and the exit cleanup of the installed package, against
// the local server: events in order with their fields; listeners that
// throw, reject or never settle lose their events (counted) and nothing
// else; scripts that exit without closing, or get SIGTERM mid-call, leave
// no sandbox, and a SIGTERM listener of the script's own keeps control.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EVENT_KINDS, loadE2BTools } from 'e2b-tools';
import { liveSandboxes, script, sleep, until } from './server.js';

const { E2B_API_KEY } = process.env;
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
      ['exec_start', 'sandbox_start', 'exec_end', 'exec_start', 'exec_end', 'sandbox_stop'],
    );
    const [start, created, firstEnd, , typedEnd, stop] = seen;
    assert.equal(created.detail, 'created');
    const sandbox = created.sandboxId;
    assert.ok(sandbox);
    assert.deepEqual([start.tool, start.sandboxId], ['run_code', undefined]);
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
    assert.deepEqual(good, ['exec_start', 'sandbox_start', 'exec_end', 'sandbox_stop']);
    // Four from the throwing one, one from the rejecting one.
    await until(() => e2b.droppedEvents, (n) => n >= 5);
    assert.equal(e2b.droppedEvents, 5);
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

  const longCall = (extra = '') => `
    import { loadE2BTools } from 'e2b-tools';
    ${extra}
    const e2b = await loadE2BTools();
    await e2b.runCommand({ command: 'true' });
    console.log('ready', await e2b.sandboxId());
    await e2b.runCode({ code: 'import time; time.sleep(120)' });
    console.log('the call returned');
  `;

  for (const signal of ['SIGTERM', 'SIGINT']) {
    it(`${signal} mid-call kills the sandbox and still ends the process`, async () => {
      let id;
      const { exited } = script(longCall(), {
        onLine: (line, child) => {
          if (!line.startsWith('ready ')) return;
          id = line.split(' ')[1];
          setTimeout(() => child.kill(signal), 1000);
        },
      });
      const started = Date.now();
      const { code, signal: ended, stdout, stderr } = await exited;
      assert.equal(ended, signal, `code ${code}: ${stdout} ${stderr}`);
      assert.ok(Date.now() - started < 20_000);
      assert.ok(!stdout.includes('the call returned'));
      assert.ok(id);
      assert.ok(!(await liveSandboxes()).includes(id), `${id} is still running`);
    });
  }

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
          if (!line.startsWith('ready ')) return;
          id = line.split(' ')[1];
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
