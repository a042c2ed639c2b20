// The component in Node, end to end: against the server named by the E2B_*
// variables (`e2b-tools local serve`, started by examples/run-tests).
//
// Optional: E2B_TOOLS_EXPECTED names the output of `e2b-tools batch` for
// ../parity-calls.jsonl; the parity test then checks that this host gets the
// same results as the Rust host.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { ToolError, e2bEnv, loadE2BTools } from '../e2b-tools.js';

const TOOL_NAMES = [
  'run_code',
  'run_command',
  'write_file',
  'read_file',
  'list_files',
  'start_background_command',
];

/** Opt-in tools, enabled by `configure({ tools: ['all'] })`. */
const BACKGROUND_CONTROL_NAMES = ['get_background_output', 'stop_background_command'];

if (!e2bEnv().E2B_API_KEY) {
  throw new Error('set E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY (see examples/run-tests)');
}

/** Result fields that legitimately differ between two sandboxes. */
function normalise(value) {
  if (Array.isArray(value)) return value.map(normalise);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([key, field]) => [
        key,
        key === 'pid' && typeof field === 'number' ? '<pid>' : normalise(field),
      ]),
    );
  }
  return value;
}

describe('catalog', () => {
  it("gives by default exactly e2b-adk's six tools as OpenAI function tools", async () => {
    const e2b = await loadE2BTools();
    const tools = e2b.functionTools();
    assert.deepEqual(
      tools.map((tool) => tool.function.name),
      TOOL_NAMES,
    );
    for (const tool of tools) {
      assert.equal(tool.type, 'function');
      assert.ok(tool.function.description.length > 20, tool.function.name);
      assert.equal(tool.function.parameters.type, 'object');
    }
    assert.deepEqual(tools[0].function.parameters.required, ['code']);
    assert.match(e2b.instructions(), /run_code/);
    // No tool call was made: no sandbox exists, shutdown has nothing to kill.
    assert.equal(e2b.sandboxId(), undefined);
    assert.equal(e2b.shutdown(), false);
  });

  it('offers the background control tools only when enabled', async () => {
    const plain = await loadE2BTools();
    // Not enabled: refused as unknown, before any sandbox is created.
    const refused = plain.callTool('stop_background_command', { pid: 3 });
    assert.equal(refused.success, false);
    assert.ok(refused.error.startsWith('Unknown tool: stop_background_command.'), refused.error);
    assert.throws(
      () => plain.stopBackgroundCommand(3),
      (err) => err instanceof ToolError && err.kind === 'invalid-argument',
    );
    assert.equal(plain.sandboxId(), undefined);

    const all = await loadE2BTools();
    all.configure({ tools: ['all'] });
    assert.deepEqual(
      all.functionTools().map((tool) => tool.function.name),
      [...TOOL_NAMES, ...BACKGROUND_CONTROL_NAMES],
    );

    const one = await loadE2BTools();
    one.configure({ tools: ['default', 'stop_background_command'] });
    assert.deepEqual(
      one.functionTools().map((tool) => tool.function.name),
      [...TOOL_NAMES, 'stop_background_command'],
    );

    const wrong = await loadE2BTools();
    assert.throws(
      () => wrong.configure({ tools: ['no_such_tool'] }),
      (err) => err instanceof ToolError && err.kind === 'invalid-argument',
    );
  });
});

describe('stop_background_command (tools: all)', () => {
  let e2b;
  before(async () => {
    e2b = await loadE2BTools();
    e2b.configure({ tools: ['all'], timeoutSeconds: 120 });
  });
  after(() => {
    e2b.shutdown();
  });

  /** `ps` on one pid: its line, or '' (exit code 1) when there is none. */
  const ps = (pid) => e2b.callTool('run_command', { command: `ps -o pid=,stat=,args= -p ${pid}` });

  it('stops `sleep 300` with SIGTERM, and ps no longer shows it', () => {
    const started = e2b.callTool('start_background_command', { command: 'sleep 300' });
    assert.equal(started.success, true, JSON.stringify(started));
    const { pid } = started;
    assert.match(ps(pid).stdout, /sleep 300/);

    const stopped = e2b.callTool('stop_background_command', { pid });
    assert.deepEqual(stopped, {
      pid,
      state: 'exited',
      exit_code: -1,
      signal: 'SIGTERM',
      success: true,
    });
    const gone = ps(pid);
    assert.deepEqual([gone.stdout, gone.exit_code], ['', 1], JSON.stringify(gone));
    const all = e2b.callTool('run_command', { command: 'ps -eo args=' });
    assert.doesNotMatch(all.stdout, /sleep 300/);

    // Stopping it again reports it as it ended: no signal sent.
    const again = e2b.callTool('stop_background_command', { pid });
    assert.equal(again.state, 'exited', JSON.stringify(again));
    assert.equal(again.signal, null, JSON.stringify(again));
  });

  it('typed: the default signal is SIGTERM, another can be chosen', () => {
    const first = e2b.startBackgroundCommand({ command: 'sleep 300' });
    assert.deepEqual(e2b.stopBackgroundCommand(first.pid), {
      pid: first.pid,
      exitCode: -1,
      signal: 'sigterm',
    });
    const second = e2b.startBackgroundCommand({ command: 'sleep 300' });
    assert.deepEqual(e2b.stopBackgroundCommand(second.pid, 'SIGINT'), {
      pid: second.pid,
      exitCode: -1,
      signal: 'sigint',
    });
    for (const { pid } of [first, second]) {
      assert.equal(ps(pid).stdout, '', `pid ${pid} is gone`);
    }
  });

  it('a pid not started here is not found', () => {
    assert.throws(
      () => e2b.stopBackgroundCommand(999999),
      (err) => err instanceof ToolError && err.kind === 'not-found',
    );
  });
});

describe('tools through catalog.call-tool', () => {
  let e2b;
  before(async () => {
    e2b = await loadE2BTools();
    e2b.configure({ timeoutSeconds: 120, metadata: [{ key: 'test', value: 'node' }] });
  });
  after(() => {
    const open = e2b.sandboxId() !== undefined;
    assert.equal(e2b.shutdown(), open, 'shutdown kills the open sandbox');
    assert.equal(e2b.sandboxId(), undefined);
  });

  it('run_code keeps state across calls', () => {
    assert.equal(e2b.callTool('run_code', { code: 'x = 41' }).success, true);
    const result = e2b.callTool('run_code', '{"code": "x + 1"}');
    assert.deepEqual(result, { stdout: '', stderr: '', text: '42', error: '', success: true });
    assert.match(e2b.sandboxId(), /\w+/);
  });

  it('configure is refused once the sandbox is open', () => {
    assert.throws(
      () => e2b.configure({ timeoutSeconds: 60 }),
      (err) => err instanceof ToolError && err.kind === 'invalid-argument',
    );
  });

  it('run_command returns stdout and the exit code', () => {
    const result = e2b.callTool('run_command', { command: 'echo hello; exit 3' });
    assert.equal(result.stdout, 'hello\n');
    assert.equal(result.exit_code, 3);
    assert.equal(result.success, true);
  });

  it('write_file then read_file round-trips, list_files shows the file', () => {
    const content = 'héllo\nwörld\n';
    assert.deepEqual(e2b.callTool('write_file', { path: 'dir/a.txt', content }), {
      path: 'dir/a.txt',
      success: true,
    });
    assert.equal(e2b.callTool('read_file', { path: 'dir/a.txt' }).content, content);
    assert.deepEqual(e2b.callTool('list_files', { path: 'dir' }).entries, [
      { name: 'a.txt', type: 'file' },
    ]);
  });

  it('start_background_command returns a pid', () => {
    const result = e2b.callTool('start_background_command', { command: 'echo started' });
    assert.equal(result.success, true);
    assert.ok(Number.isInteger(result.pid) && result.pid > 0, JSON.stringify(result));
  });

  it("a failure is a result with e2b-adk's shape, not an exception", () => {
    assert.deepEqual(e2b.callTool('read_file', { path: 'dir/missing.txt' }), {
      success: false,
      error: "Failed to read file: path 'dir/missing.txt' does not exist",
      partial_output: '',
      path: 'dir/missing.txt',
    });
    const unknown = e2b.callTool('no_such_tool', {});
    assert.equal(unknown.success, false);
    const malformed = e2b.callTool('run_code', '{not json');
    assert.equal(malformed.success, false);
  });
});

describe('typed tools', () => {
  let e2b;
  before(async () => {
    e2b = await loadE2BTools();
  });
  after(() => {
    const open = e2b.sandboxId() !== undefined;
    assert.equal(e2b.shutdown(), open, 'shutdown kills the open sandbox');
  });

  it('run the six tools with WIT types', () => {
    const code = e2b.runCode({ code: 'print(6 * 7)' });
    assert.equal(code.stdout, '42\n');
    assert.deepEqual(code.rich, []);

    const command = e2b.runCommand({
      command: 'echo "$WHO"',
      envs: [{ key: 'WHO', value: 'typed' }],
      cwd: '/tmp',
    });
    assert.deepEqual(command, {
      command: 'echo "$WHO"',
      stdout: 'typed\n',
      stderr: '',
      exitCode: 0,
    });

    e2b.writeFile('typed.txt', 'one\n');
    assert.equal(e2b.readFile('typed.txt'), 'one\n');
    assert.deepEqual(
      e2b.listFiles(undefined).filter((entry) => entry.name === 'typed.txt'),
      [{ name: 'typed.txt', type: 'file' }],
    );

    const background = e2b.startBackgroundCommand({ command: 'echo bg' });
    assert.ok(background.pid > 0);
    assert.equal(background.command, 'echo bg');
  });

  it('throw a ToolError with a kind', () => {
    assert.throws(
      () => e2b.readFile('nope.txt'),
      (err) =>
        err instanceof ToolError &&
        err.kind === 'not-found' &&
        err.path === 'nope.txt' &&
        err.message.startsWith('Failed to read file: '),
    );
  });

  it('a long-running background command returns while it runs', () => {
    const started = Date.now();
    const result = e2b.startBackgroundCommand({ command: 'sleep 30', timeoutSeconds: 6 });
    assert.ok(result.pid > 0);
    assert.equal(result.readiness, undefined);
    assert.ok(Date.now() - started < 5000, `took ${Date.now() - started} ms`);
  });
});

describe('keep-alive', () => {
  it('a call longer than the sandbox timeout keeps the sandbox alive', async () => {
    const e2b = await loadE2BTools();
    e2b.configure({ timeoutSeconds: 4 });
    try {
      const result = e2b.callTool('run_code', {
        code: 'import time\ntime.sleep(8)\nprint("alive")',
      });
      assert.equal(result.stdout, 'alive\n', JSON.stringify(result));
      assert.equal(e2b.callTool('run_command', { command: 'true' }).success, true);
    } finally {
      e2b.shutdown();
    }
  });
});

// The parity call in JavaScript only shows that both hosts agree; this shows
// what the kernel gives.
describe('the JavaScript kernel', () => {
  it('gives the last value, console output, state across calls and errors', async () => {
    const e2b = await loadE2BTools();
    const js = (code, language = 'javascript') => e2b.callTool('run_code', { code, language });
    try {
      assert.deepEqual(js('1 + 1', 'js'), {
        stdout: '',
        stderr: '',
        text: '2',
        error: '',
        success: true,
      });
      assert.deepEqual(js('console.log(6 * 7)'), {
        stdout: '42\n',
        stderr: '',
        text: '',
        error: '',
        success: true,
      });
      const first = js('let n = 40; console.error("to stderr"); n + 2');
      assert.equal(first.stderr, 'to stderr\n', JSON.stringify(first));
      assert.equal(first.text, '42', JSON.stringify(first));
      assert.equal(js('n * 2').text, '80');
      // As in e2b-adk, an exception is a successful call with `error` set:
      // the name and value, then the stack.
      const thrown = js('null.x');
      assert.equal(thrown.success, true, JSON.stringify(thrown));
      assert.ok(
        thrown.error.startsWith("TypeError: Cannot read properties of null (reading 'x')\n"),
        JSON.stringify(thrown),
      );
      assert.equal(thrown.text, '');
    } finally {
      e2b.shutdown();
    }
  });
});

describe('parity with the Rust host', { skip: !process.env.E2B_TOOLS_EXPECTED }, () => {
  it('gives the same results as `e2b-tools batch` for the same calls', async () => {
    const calls = readFileSync(new URL('../../parity-calls.jsonl', import.meta.url), 'utf8')
      .split('\n')
      .filter((line) => line.trim())
      .map((line) => JSON.parse(line));
    const expected = readFileSync(process.env.E2B_TOOLS_EXPECTED, 'utf8')
      .split('\n')
      .filter((line) => line.trim())
      .map((line) => JSON.parse(line));
    assert.equal(expected.length, calls.length, 'one batch result per call');

    const e2b = await loadE2BTools();
    try {
      calls.forEach((call, i) => {
        const actual = e2b.callTool(call.tool, call.args);
        assert.deepEqual(
          normalise(actual),
          normalise(expected[i]),
          `call ${i + 1}: ${JSON.stringify(call)}`,
        );
      });
    } finally {
      e2b.shutdown();
    }
  });
});
