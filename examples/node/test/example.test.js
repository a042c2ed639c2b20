// The Node example and the e2b-tools package it uses, against the server
// named by the E2B_* variables (`e2b-tools local serve`, started by
// examples/run-tests, which installs the packed tarball into a fresh
// directory and runs these tests from a copy of this one).
//
// Optional: E2B_TOOLS_EXPECTED names the output of `e2b-tools batch` for
// ../parity-calls.jsonl (E2B_TOOLS_PARITY_CALLS names the calls when this
// directory is not beside it); the parity tests then check that the
// example's answers carry the same results as the Rust host's, through both
// of its dispatchers.
//
// The package's own tests (bindings/node/test) cover its API; what is here
// are the example, the parity with the Rust host, and the component's
// behaviour those tests do not check.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { ToolError, e2bEnv, loadE2BTools } from 'e2b-tools';
import { answerAnthropic, answerOpenAI } from '../main.js';

if (!e2bEnv().E2B_API_KEY) {
  throw new Error('set E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY (see examples/run-tests)');
}

const SIX = [
  'run_code',
  'run_command',
  'write_file',
  'read_file',
  'list_files',
  'start_background_command',
];
const LIMIT = { timeout: 120_000 };

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

/** Asserts that `promise` rejects with a ToolError of `kind`. */
function rejectsWith(promise, kind) {
  return assert.rejects(promise, (err) => err instanceof ToolError && err.kind === kind);
}

/** Runs `use(e2b)` with a fresh instance (a fresh sandbox), closed after. */
async function withInstance(use) {
  const e2b = await loadE2BTools();
  try {
    return await use(e2b);
  } finally {
    await e2b.close();
  }
}

describe('the example', LIMIT, () => {
  it('main.js runs the tour and closes the sandbox', async () => {
    const main = fileURLToPath(new URL('../main.js', import.meta.url));
    const { stdout } = await promisify(execFile)(process.execPath, [main], { timeout: 120_000 });
    const lines = stdout.split('\n');
    const line = (prefix) => lines.find((l) => l.startsWith(prefix));
    assert.equal(line('tools: '), `tools: ${SIX.join(', ')}`);
    assert.match(line('{"name":'), /^\{"name":"run_code","description":"/);
    assert.equal(line('runCode x + 1 -> '), 'runCode x + 1 -> 42');
    assert.equal(line('readFile -> '), 'readFile -> "buy milk\\n"');
    assert.equal(line('listFiles -> '), 'listFiles -> ["todo.txt"]');
    assert.match(line('readFile missing -> '), /^readFile missing -> ToolError not-found: Failed to read file: /);
    const messages = lines
      .filter((l) => l.startsWith('openai tool message -> '))
      .map((l) => JSON.parse(l.slice('openai tool message -> '.length)));
    assert.deepEqual(
      messages.map((m) => [m.role, m.tool_call_id, JSON.parse(m.content).success]),
      [
        ['tool', 'call_1', true],
        ['tool', 'call_2', false],
      ],
    );
    assert.equal(JSON.parse(messages[0].content).text, '82');
    const block = JSON.parse(line('anthropic tool_result -> ').slice('anthropic tool_result -> '.length));
    assert.deepEqual([block.type, block.tool_use_id, block.is_error], ['tool_result', 'toolu_1', false]);
    assert.equal(JSON.parse(block.content).stdout, 'todo.txt\n');
    assert.equal(line('close -> '), 'close -> true');
  });

  it("answers in each API's shape", async () => {
    await withInstance(async (e2b) => {
      const [message] = await answerOpenAI(e2b, [
        { id: 'c1', type: 'function', function: { name: 'no_such_tool', arguments: '{}' } },
      ]);
      assert.deepEqual(Object.keys(message), ['role', 'tool_call_id', 'content']);
      assert.equal(JSON.parse(message.content).success, false);
      const blocks = await answerAnthropic(e2b, [
        { type: 'text', text: 'thinking' },
        { type: 'tool_use', id: 't1', name: 'run_code', input: { code: '6 * 7' } },
        { type: 'tool_use', id: 't2', name: 'read_file', input: { path: 'nope' } },
      ]);
      assert.deepEqual(
        blocks.map((b) => [b.type, b.tool_use_id, b.is_error]),
        [
          ['tool_result', 't1', false],
          ['tool_result', 't2', true],
        ],
      );
      assert.equal(JSON.parse(blocks[0].content).text, '42');
    });
  });
});

describe('parity with the Rust host', { ...LIMIT, skip: !process.env.E2B_TOOLS_EXPECTED }, () => {
  const lines = (file) =>
    readFileSync(file, 'utf8')
      .split('\n')
      .filter((line) => line.trim())
      .map((line) => JSON.parse(line));
  let calls;
  let expected;
  before(() => {
    calls = lines(
      process.env.E2B_TOOLS_PARITY_CALLS ||
        fileURLToPath(new URL('../../parity-calls.jsonl', import.meta.url)),
    );
    expected = lines(process.env.E2B_TOOLS_EXPECTED);
    assert.equal(expected.length, calls.length, 'one batch result per call');
  });
  const check = (results) => {
    assert.equal(results.length, calls.length);
    results.forEach((result, i) => {
      assert.deepEqual(
        normalise(result),
        normalise(expected[i]),
        `call ${i + 1}: ${JSON.stringify(calls[i])}`,
      );
    });
  };

  it('the OpenAI tool messages carry the same results as `e2b-tools batch`', async () => {
    const messages = await withInstance(async (e2b) => {
      const out = [];
      for (const [i, call] of calls.entries()) {
        const toolCall = {
          id: `call_${i}`,
          type: 'function',
          function: { name: call.tool, arguments: JSON.stringify(call.args ?? {}) },
        };
        out.push(...(await answerOpenAI(e2b, [toolCall])));
      }
      return out;
    });
    assert.deepEqual(
      messages.map((m) => m.tool_call_id),
      calls.map((_, i) => `call_${i}`),
    );
    check(messages.map((m) => JSON.parse(m.content)));
  });

  it('the Anthropic tool results carry the same results as `e2b-tools batch`', async () => {
    const blocks = await withInstance(async (e2b) => {
      const out = [];
      for (const [i, call] of calls.entries()) {
        const toolUse = { type: 'tool_use', id: `toolu_${i}`, name: call.tool, input: call.args ?? {} };
        out.push(...(await answerAnthropic(e2b, [toolUse])));
      }
      return out;
    });
    const results = blocks.map((block) => JSON.parse(block.content));
    assert.deepEqual(
      blocks.map((block) => block.is_error),
      results.map((result) => !result.success),
    );
    check(results);
  });
});

describe('the background control tools', LIMIT, () => {
  it('are opt-in', async () => {
    await withInstance(async (plain) => {
      // Not enabled: refused as unknown, before any sandbox is created.
      const refused = await plain.callTool('stop_background_command', { pid: 3 });
      assert.equal(refused.success, false);
      assert.ok(refused.error.startsWith('Unknown tool: stop_background_command.'), refused.error);
      await rejectsWith(plain.stopBackgroundCommand(3), 'invalid-argument');
      assert.equal(await plain.sandboxId(), undefined);
    });
    await withInstance((wrong) => rejectsWith(wrong.configure({ tools: ['no_such_tool'] }), 'invalid-argument'));
  });
});

describe('stop_background_command (tools: all)', LIMIT, () => {
  let e2b;
  before(async () => {
    e2b = await loadE2BTools();
    await e2b.configure({ tools: ['all'], timeoutSeconds: 120 });
  });
  after(() => e2b.close());

  /** `ps` on one pid: its line, or '' (exit code 1) when there is none. */
  const ps = (pid) => e2b.callTool('run_command', { command: `ps -o pid=,stat=,args= -p ${pid}` });

  it('stops `sleep 300` with SIGTERM, and ps no longer shows it', async () => {
    const started = await e2b.callTool('start_background_command', { command: 'sleep 300' });
    assert.equal(started.success, true, JSON.stringify(started));
    const { pid } = started;
    assert.match((await ps(pid)).stdout, /sleep 300/);

    const stopped = await e2b.callTool('stop_background_command', { pid });
    assert.deepEqual(stopped, {
      pid,
      state: 'exited',
      exit_code: -1,
      signal: 'SIGTERM',
      success: true,
    });
    const gone = await ps(pid);
    assert.deepEqual([gone.stdout, gone.exit_code], ['', 1], JSON.stringify(gone));
    const all = await e2b.callTool('run_command', { command: 'ps -eo args=' });
    assert.doesNotMatch(all.stdout, /sleep 300/);

    // Stopping it again reports it as it ended: no signal sent.
    const again = await e2b.callTool('stop_background_command', { pid });
    assert.equal(again.state, 'exited', JSON.stringify(again));
    assert.equal(again.signal, null, JSON.stringify(again));
  });

  it('typed: the default signal is SIGTERM, another can be chosen', async () => {
    const first = await e2b.startBackgroundCommand({ command: 'sleep 300' });
    assert.deepEqual(await e2b.stopBackgroundCommand(first.pid), {
      pid: first.pid,
      exitCode: -1,
      signal: 'sigterm',
    });
    const second = await e2b.startBackgroundCommand({ command: 'sleep 300' });
    assert.deepEqual(await e2b.stopBackgroundCommand(second.pid, 'SIGINT'), {
      pid: second.pid,
      exitCode: -1,
      signal: 'sigint',
    });
    for (const { pid } of [first, second]) {
      assert.equal((await ps(pid)).stdout, '', `pid ${pid} is gone`);
    }
  });
});

describe('a long-running background command', LIMIT, () => {
  it('returns while it runs, with no readiness', async () => {
    await withInstance(async (e2b) => {
      const started = Date.now();
      const result = await e2b.startBackgroundCommand({ command: 'sleep 30', timeoutSeconds: 6 });
      assert.ok(result.pid > 0);
      assert.equal(result.readiness, undefined);
      assert.ok(Date.now() - started < 5000, `took ${Date.now() - started} ms`);
    });
  });
});

describe('keep-alive', LIMIT, () => {
  it('a call longer than the sandbox timeout keeps the sandbox alive', async () => {
    await withInstance(async (e2b) => {
      await e2b.configure({ timeoutSeconds: 4 });
      const result = await e2b.callTool('run_code', {
        code: 'import time\ntime.sleep(8)\nprint("alive")',
      });
      assert.equal(result.stdout, 'alive\n', JSON.stringify(result));
      assert.equal((await e2b.callTool('run_command', { command: 'true' })).success, true);
    });
  });
});

// The parity call in JavaScript only shows that the hosts agree; this shows
// what the kernel gives.
describe('the JavaScript kernel', LIMIT, () => {
  it('gives the last value, console output, state across calls and errors', async () => {
    await withInstance(async (e2b) => {
      const js = (code, language = 'javascript') => e2b.callTool('run_code', { code, language });
      assert.deepEqual(await js('1 + 1', 'js'), {
        stdout: '',
        stderr: '',
        text: '2',
        error: '',
        success: true,
      });
      assert.deepEqual(await js('console.log(6 * 7)'), {
        stdout: '42\n',
        stderr: '',
        text: '',
        error: '',
        success: true,
      });
      const first = await js('let n = 40; console.error("to stderr"); n + 2');
      assert.equal(first.stderr, 'to stderr\n', JSON.stringify(first));
      assert.equal(first.text, '42', JSON.stringify(first));
      assert.equal((await js('n * 2')).text, '80');
      // As in e2b-adk, an exception is a successful call with `error` set:
      // the name and value, then the stack.
      const thrown = await js('null.x');
      assert.equal(thrown.success, true, JSON.stringify(thrown));
      assert.ok(
        thrown.error.startsWith("TypeError: Cannot read properties of null (reading 'x')\n"),
        JSON.stringify(thrown),
      );
      assert.equal(thrown.text, '');
    });
  });
});
