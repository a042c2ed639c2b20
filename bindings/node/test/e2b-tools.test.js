// The installed e2b-tools package against the local server named by the
// E2B_* variables (`e2b-tools local serve`, started by ../run-tests, which
// installs the packed tarball into a fresh directory and runs these tests
// there).

import assert from 'node:assert/strict';
import { realpathSync } from 'node:fs';
import { createServer } from 'node:http';
import { fileURLToPath } from 'node:url';
import { after, before, beforeEach, describe, it } from 'node:test';
import {
  E2BTools,
  OutboundPolicy,
  PolicyError,
  ToolError,
  e2bEnv,
  loadE2BTools,
} from 'e2b-tools';
import { DEFAULT_TOOLS, liveSandboxes } from './server.js';

const { E2B_API_URL, E2B_SANDBOX_URL, E2B_API_KEY } = process.env;
if (!E2B_API_URL || !E2B_SANDBOX_URL || !E2B_API_KEY) {
  throw new Error('set E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY (see ../run-tests)');
}

const ALL_TOOLS = [
  ...DEFAULT_TOOLS,
  'get_background_output',
  'stop_background_command',
  'create_snapshot',
  'fork_sandbox',
];

/** Each suite's time limit: a hang is a failure, not a stuck run. */
const LIMIT = { timeout: 60_000 };

/** Asserts that `promise` rejects with a ToolError of `kind`; returns it. */
async function rejectsWith(promise, kind) {
  let error;
  await assert.rejects(promise, (err) => {
    error = err;
    return err instanceof ToolError && err.kind === kind;
  });
  return error;
}

/** The suite's instance (`box.e2b`), loaded before it and closed after it. */
function instance() {
  const box = {};
  before(async () => {
    box.e2b = await loadE2BTools();
  });
  after(() => box.e2b.close());
  return box;
}

describe('the package', LIMIT, () => {
  it('is the installed tarball, not the source tree', () => {
    const nodeModules = realpathSync(fileURLToPath(new URL('../node_modules/', import.meta.url)));
    for (const specifier of ['e2b-tools', '@bytecodealliance/preview2-shim/instantiation']) {
      const resolved = realpathSync(fileURLToPath(import.meta.resolve(specifier)));
      assert.ok(resolved.startsWith(`${nodeModules}/`), `${specifier} resolved to ${resolved}`);
    }
  });

  it('hands the component only the E2B_* variables', () => {
    assert.deepEqual(
      e2bEnv({
        E2B_API_KEY: 'k',
        HOME: '/root',
        AWS_SECRET_ACCESS_KEY: 's',
        XE2B_API_KEY: 'x',
        E2B_DOMAIN: undefined,
      }),
      { E2B_API_KEY: 'k' },
    );
  });

  it('reads E2B_TOOLS_ENABLED from the environment it is given', async () => {
    const e2b = await loadE2BTools({
      env: { ...process.env, E2B_TOOLS_ENABLED: 'read_file,list_files' },
    });
    try {
      assert.deepEqual(
        (await e2b.listTools()).map((tool) => tool.name),
        ['read_file', 'list_files'],
      );
    } finally {
      await e2b.close();
    }
  });

  it('refuses an endpoint that is not an http(s) URL, in the env or in configure', async () => {
    const isPolicyError = (setting) => (err) =>
      err instanceof PolicyError &&
      err.setting === setting &&
      /is not an absolute http\(s\) URL/.test(err.message);
    await assert.rejects(
      loadE2BTools({ env: { E2B_API_KEY, E2B_API_URL: 'ftp://example.com' } }),
      isPolicyError('E2B_API_URL'),
    );
    const e2b = await loadE2BTools();
    try {
      const before = String(e2b.policy);
      await assert.rejects(
        e2b.configure({ sandboxUrl: '/relative' }),
        isPolicyError('E2B_SANDBOX_URL'),
      );
      assert.equal(String(e2b.policy), before);
    } finally {
      await e2b.close();
    }
  });

  it('takes only an OutboundPolicy as its policy, and no unknown option', async () => {
    await assert.rejects(
      loadE2BTools({ policy: 'https://api.e2b.app' }),
      (err) => err instanceof TypeError && /policy must be an OutboundPolicy/.test(err.message),
    );
    await assert.rejects(
      loadE2BTools({ polciy: OutboundPolicy.forEndpoints() }),
      (err) => err instanceof TypeError && /has no option "polciy"/.test(err.message),
    );
  });

  it('is an E2BTools instance', async () => {
    const e2b = await loadE2BTools();
    assert.ok(e2b instanceof E2BTools);
    await e2b.close();
  });
});

describe('tool lists', LIMIT, () => {
  const box = instance();

  it('give the enabled tools in the OpenAI chat, OpenAI Responses and Anthropic shapes', async () => {
    const { e2b } = box;
    const chat = await e2b.openaiChatTools();
    const responses = await e2b.openaiResponsesTools();
    const anthropic = await e2b.anthropicTools();
    assert.deepEqual(
      chat.map((tool) => tool.function.name),
      DEFAULT_TOOLS,
    );
    assert.deepEqual(
      responses.map((tool) => tool.name),
      DEFAULT_TOOLS,
    );
    assert.deepEqual(
      anthropic.map((tool) => tool.name),
      DEFAULT_TOOLS,
    );
    for (const [i, tool] of chat.entries()) {
      assert.deepEqual(Object.keys(tool), ['type', 'function']);
      assert.equal(tool.type, 'function');
      assert.deepEqual(Object.keys(tool.function), ['name', 'description', 'parameters']);
      assert.ok(tool.function.description.length > 20, tool.function.name);
      assert.equal(tool.function.parameters.type, 'object');
      assert.equal(typeof tool.function.parameters.properties, 'object');
      assert.deepEqual(responses[i], { type: 'function', ...tool.function, strict: false });
      assert.deepEqual(anthropic[i], {
        name: tool.function.name,
        description: tool.function.description,
        input_schema: tool.function.parameters,
      });
    }
    assert.deepEqual(chat[0].function.parameters.required, ['code']);
  });

  it('describe each tool fully in listTools', async () => {
    const [runCode] = await box.e2b.listTools();
    assert.equal(runCode.name, 'run_code');
    assert.equal(typeof runCode.title, 'string');
    assert.equal(typeof runCode.resultSchema, 'object');
    assert.deepEqual(Object.keys(runCode.hints), [
      'readOnly',
      'destructive',
      'idempotent',
      'openWorld',
    ]);
  });

  it('and the instructions name the tools; no sandbox was made', async () => {
    assert.match(await box.e2b.instructions(), /run_code/);
    assert.equal(await box.e2b.sandboxId(), undefined);
  });

  it('follow configure({ tools })', async () => {
    for (const [tools, names] of [
      [['all'], ALL_TOOLS],
      ['read_file', ['read_file']],
      [
        ['default', 'stop_background_command'],
        [...DEFAULT_TOOLS, 'stop_background_command'],
      ],
    ]) {
      const e2b = await loadE2BTools();
      try {
        await e2b.configure({ tools });
        assert.deepEqual(
          (await e2b.anthropicTools()).map((tool) => tool.name),
          names,
        );
      } finally {
        await e2b.close();
      }
    }
  });
});

describe('typed calls', LIMIT, () => {
  const box = instance();

  it('run_code keeps state across calls', async () => {
    await box.e2b.runCode({ code: 'x = 41' });
    assert.deepEqual(await box.e2b.runCode({ code: 'x + 1' }), {
      stdout: '',
      stderr: '',
      text: '42',
      error: '',
      rich: [],
    });
  });

  it('write, read and list files', async () => {
    const content = 'héllo\nwörld\n';
    await box.e2b.writeFile('dir/a.txt', content);
    assert.equal(await box.e2b.readFile('dir/a.txt'), content);
    assert.deepEqual(await box.e2b.listFiles('dir'), [{ name: 'a.txt', type: 'file' }]);
    assert.ok(
      (await box.e2b.listFiles()).some((entry) => entry.name === 'dir' && entry.type === 'dir'),
    );
  });

  it('a command, with envs and cwd', async () => {
    assert.deepEqual(
      await box.e2b.runCommand({
        command: 'echo "$WHO in $PWD"; exit 3',
        envs: { WHO: 'typed' },
        cwd: '/tmp',
      }),
      {
        command: 'echo "$WHO in $PWD"; exit 3',
        stdout: 'typed in /tmp\n',
        stderr: '',
        exitCode: 3,
      },
    );
  });

  it('a background command returns while it runs', async () => {
    const started = Date.now();
    const result = await box.e2b.startBackgroundCommand({ command: 'sleep 30', timeoutSeconds: 6 });
    assert.ok(Number.isInteger(result.pid) && result.pid > 0, JSON.stringify(result));
    assert.equal(result.command, 'sleep 30');
    assert.equal(result.readiness, undefined);
    assert.ok(Date.now() - started < 5000, `took ${Date.now() - started} ms`);
    const ps = await box.e2b.runCommand({ command: `ps -o args= -p ${result.pid}` });
    assert.equal(ps.stdout, 'sleep 30\n');
  });

  it('a failure rejects with a ToolError and its kind', async () => {
    const error = await rejectsWith(box.e2b.readFile('nope.txt'), 'not-found');
    assert.equal(error.path, 'nope.txt');
    assert.match(error.message, /^Failed to read file: /);
  });

  it('arguments of the wrong type reject with a TypeError, and the instance goes on', async () => {
    const { e2b } = box;
    for (const [call, message] of [
      [() => e2b.runCode({ code: 5 }), /code must be a string/],
      [() => e2b.runCode(null), /runCode arguments must be an object/],
      [() => e2b.runCode({ code: '1', timeout: 5 }), /runCode arguments has no option "timeout"/],
      [
        () => e2b.runCommand({ command: 'true', timeoutSeconds: -1 }),
        /timeoutSeconds must be an integer/,
      ],
      [() => e2b.runCommand({ command: 'true', envs: { A: 1 } }), /envs\.A must be a string/],
      [
        () => e2b.startBackgroundCommand({ command: 'true', port: 70000 }),
        /port must be an integer from 0 to 65535/,
      ],
      [() => e2b.writeFile('a.txt', Buffer.from('x')), /content must be a string/],
      [() => e2b.stopBackgroundCommand(1, 'sigfoo'), /signal must be one of sigterm/],
      [() => e2b.getBackgroundOutput(-1), /pid must be an integer/],
      [() => e2b.configure({ timeout: 5 }), /config has no option "timeout"/],
      [() => e2b.callTool(42, {}), /callTool name must be a string/],
    ]) {
      await assert.rejects(call(), (err) => err instanceof TypeError && message.test(err.message));
    }
    assert.equal((await e2b.runCode({ code: 'x' })).text, '41');
  });

  it('configure is refused with a sandbox open', async () => {
    await rejectsWith(box.e2b.configure({ timeoutSeconds: 60 }), 'invalid-argument');
  });
});

describe('background-process tools (tools: all)', LIMIT, () => {
  const box = instance();
  before(() => box.e2b.configure({ tools: ['all'] }));

  it('read the output of a process and stop it', async () => {
    const { e2b } = box;
    const { pid } = await e2b.startBackgroundCommand({
      command: 'echo out; echo err >&2; sleep 300',
    });
    let output;
    for (let i = 0; i < 50; i++) {
      output = await e2b.getBackgroundOutput(pid);
      if (output.stdout && output.stderr) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.deepEqual(output, {
      pid,
      state: 'running',
      exitCode: undefined,
      stdout: 'out\n',
      stderr: 'err\n',
      nextSince: { stdout: 4, stderr: 4 },
    });
    const newer = await e2b.getBackgroundOutput(pid, output.nextSince);
    assert.deepEqual([newer.stdout, newer.stderr], ['', '']);
    assert.deepEqual(await e2b.stopBackgroundCommand(pid, 'SIGTERM'), {
      pid,
      exitCode: -1,
      signal: 'sigterm',
    });
    assert.equal((await e2b.getBackgroundOutput(pid)).state, 'exited');
  });

  it('a pid not started here is not found', async () => {
    await rejectsWith(box.e2b.stopBackgroundCommand(999999), 'not-found');
  });

  /** `ps` on one pid: its line, or '' (exit code 1) when there is none. */
  const ps = (pid) =>
    box.e2b.callTool('run_command', { command: `ps -o pid=,stat=,args= -p ${pid}` });

  it('stop `sleep 300` with SIGTERM through callTool, and ps no longer shows it', async () => {
    const { e2b } = box;
    const started = await e2b.callTool('start_background_command', { command: 'sleep 300' });
    assert.equal(started.success, true, JSON.stringify(started));
    const { pid } = started;
    assert.match((await ps(pid)).stdout, /sleep 300/);

    assert.deepEqual(await e2b.callTool('stop_background_command', { pid }), {
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

  it('stop typed: SIGTERM by default, another signal on request', async () => {
    const { e2b } = box;
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

describe('snapshots and forks (tools: all)', LIMIT, () => {
  const box = instance();
  before(() => box.e2b.configure({ tools: ['all'], timeoutSeconds: 120 }));

  it('fork by typed call, work in a fork by sandbox_id, snapshot, and end the forks with the instance', async () => {
    const { e2b } = box;
    await e2b.writeFile('state.txt', 'base');
    const forks = await e2b.forkSandbox({ count: 2 });
    assert.equal(forks.sandboxIds.length, 2);
    assert.deepEqual(forks.failures, []);
    const own = await e2b.sandboxId();
    const live = await liveSandboxes();
    for (const id of [own, ...forks.sandboxIds]) assert.ok(live.includes(id), id);
    const [fork] = forks.sandboxIds;
    const moved = await e2b.callTool('run_command', { command: 'echo fork > state.txt', sandbox_id: fork });
    assert.equal(moved.success, true, JSON.stringify(moved));
    assert.equal(await e2b.readFile('state.txt'), 'base');
    const read = await e2b.callTool('read_file', { path: 'state.txt', sandbox_id: fork });
    assert.equal(read.content, 'fork\n');
    const snapshot = await e2b.createSnapshot('node-test');
    assert.ok(snapshot.snapshotId);
    assert.ok(snapshot.names.some((n) => n.includes('node-test')), JSON.stringify(snapshot));
    await rejectsWith(e2b.forkSandbox({ count: 9 }), 'invalid-argument');
    await assert.rejects(e2b.forkSandbox({ keep: 'yes' }), TypeError);
    await e2b.shutdown();
    const after = await liveSandboxes();
    for (const id of [own, ...forks.sandboxIds]) assert.ok(!after.includes(id), `${id} ended with the instance`);
  });
});

describe('the background control tools, not enabled', LIMIT, () => {
  const box = instance();

  it('are refused as unknown (JSON) and invalid-argument (typed), before any sandbox', async () => {
    const refused = await box.e2b.callTool('stop_background_command', { pid: 3 });
    assert.equal(refused.success, false);
    assert.ok(refused.error.startsWith('Unknown tool: stop_background_command.'), refused.error);
    await rejectsWith(box.e2b.stopBackgroundCommand(3), 'invalid-argument');
    assert.equal(await box.e2b.sandboxId(), undefined);
  });

  it('and an unknown name in configure is invalid-argument', async () => {
    await rejectsWith(box.e2b.configure({ tools: ['no_such_tool'] }), 'invalid-argument');
  });
});

describe('JSON dispatch', LIMIT, () => {
  const box = instance();

  it("runs a model's tool calls and gives e2b-adk's result dicts", async () => {
    const { e2b } = box;
    assert.equal((await e2b.callTool('run_code', { code: 'y = 6' })).success, true);
    assert.deepEqual(await e2b.callTool('run_code', '{"code": "y * 7"}'), {
      stdout: '',
      stderr: '',
      text: '42',
      error: '',
      success: true,
    });
    assert.deepEqual(await e2b.callTool('write_file', { path: 'b.txt', content: 'bee' }), {
      path: 'b.txt',
      success: true,
    });
    assert.equal((await e2b.callTool('read_file', { path: 'b.txt' })).content, 'bee');
    const command = await e2b.callTool('run_command', { command: 'echo hi; exit 2' });
    assert.deepEqual([command.stdout, command.exit_code, command.success], ['hi\n', 2, true]);
  });

  it('a failing call resolves to a failure dict, never a rejection', async () => {
    const { e2b } = box;
    assert.deepEqual(await e2b.callTool('read_file', { path: 'missing.txt' }), {
      success: false,
      error: "Failed to read file: path 'missing.txt' does not exist",
      partial_output: '',
      path: 'missing.txt',
    });
    for (const [name, args] of [
      ['no_such_tool', {}],
      ['stop_background_command', { pid: 1 }],
      ['run_code', '{not json'],
      ['run_code', [1, 2]],
      ['run_code', { code: 5 }],
      ['run_code', '['.repeat(100000)],
      ['run_code', '{"code": "\\ud800"}'],
    ]) {
      const result = await e2b.callTool(name, args);
      assert.equal(result.success, false, `${name} ${String(args).slice(0, 40)}`);
      assert.equal(typeof result.error, 'string');
    }
    assert.equal((await e2b.callTool('run_code', { code: 'y' })).text, '6');
  });
});

describe('the outbound allow-list', LIMIT, () => {
  /** A server on loopback, outside the allow-list, that counts what reaches it. */
  let decoy;
  let decoyUrl;
  /** The requests that reached the decoy during the current test. */
  let requests;
  beforeEach(() => {
    requests = 0;
  });
  /** The allow-list of the real server only. */
  const serverOnly = () =>
    OutboundPolicy.forEndpoints({ apiUrl: E2B_API_URL, sandboxUrl: E2B_SANDBOX_URL });
  before(async () => {
    decoy = createServer((request, response) => {
      requests++;
      response.writeHead(500).end();
    });
    await new Promise((resolve) => decoy.listen(0, '127.0.0.1', resolve));
    decoyUrl = `http://127.0.0.1:${decoy.address().port}`;
  });
  after(() => new Promise((resolve) => decoy.close(resolve)));

  it('an explicit policy refuses an API host outside it: a tool failure, nothing sent', async () => {
    const sandboxes = await liveSandboxes();
    const e2b = await loadE2BTools({ policy: serverOnly() });
    try {
      // The component is pointed at the decoy; the allow-list names only the server.
      await e2b.configure({ apiUrl: decoyUrl, sandboxUrl: decoyUrl });
      assert.equal(String(e2b.policy), String(serverOnly()), 'configure left it alone');
      const error = await rejectsWith(e2b.runCode({ code: '1' }), 'network');
      assert.match(error.message, /HttpRequestDenied/);
      const result = await e2b.callTool('run_command', { command: 'true' });
      assert.equal(result.success, false);
      assert.match(result.error, /HttpRequestDenied/);
      assert.equal(requests, 0, 'nothing reached the decoy');
      assert.deepEqual(await liveSandboxes(), sandboxes, 'nor the server (not asked)');
      assert.equal(await e2b.sandboxId(), undefined);
      // A tool failure, not a trap: the instance still answers.
      assert.deepEqual(
        (await e2b.listTools()).map((tool) => tool.name),
        DEFAULT_TOOLS,
      );
    } finally {
      await e2b.close();
    }
  });

  it('an explicit policy refuses a sandbox host outside it', async () => {
    const e2b = await loadE2BTools({ policy: serverOnly() });
    try {
      // The sandbox is created through the allowed API host; its traffic is
      // sent to the decoy, and refused.
      await e2b.configure({ sandboxUrl: decoyUrl });
      const error = await rejectsWith(e2b.runCommand({ command: 'true' }), 'network');
      const authority = new URL(decoyUrl).host;
      assert.match(error.message, new RegExp(`${authority} failed: .*HttpRequestDenied`));
      assert.ok((await liveSandboxes()).includes(await e2b.sandboxId()));
      assert.equal(await e2b.close(), true);
    } finally {
      await e2b.close();
    }
    assert.equal(requests, 0, 'nothing reached the decoy');
  });

  it('by default follows the configured endpoints, not only the env', async () => {
    // The env names the decoy; configure points the component at the server.
    const e2b = await loadE2BTools({
      env: { E2B_API_KEY, E2B_API_URL: decoyUrl, E2B_SANDBOX_URL: decoyUrl },
    });
    try {
      assert.equal(String(e2b.policy), decoyUrl);
      await e2b.configure({ apiUrl: E2B_API_URL, sandboxUrl: E2B_SANDBOX_URL });
      assert.equal(String(e2b.policy), String(serverOnly()));
      const result = await e2b.runCommand({ command: 'echo reached' });
      assert.equal(result.stdout, 'reached\n');
      assert.ok((await liveSandboxes()).includes(await e2b.sandboxId()));
      assert.equal(await e2b.close(), true);
    } finally {
      await e2b.close();
    }
    assert.equal(requests, 0, 'nothing reached the decoy');
  });
});

describe('OutboundPolicy: the rules of host/src/policy.rs', () => {
  const allows = (policy, url) => {
    const [scheme, rest] = url.split('://');
    return policy.allows(scheme === 'https', rest.split('/')[0]);
  };

  it('by default allows the API and sandbox hosts of e2b.app', () => {
    const policy = OutboundPolicy.forEndpoints();
    assert.ok(allows(policy, 'https://api.e2b.app/sandboxes'));
    assert.ok(allows(policy, 'https://49983-abc123.e2b.app/execute'));
    assert.ok(allows(policy, 'https://API.E2B.APP:443/'));
    for (const url of [
      'http://api.e2b.app/sandboxes',
      'https://api.e2b.app:8443/',
      'https://e2b.app/',
      'https://evil-e2b.app/',
      'https://e2b.app.evil.com/',
      'https://example.com/',
    ]) {
      assert.ok(!allows(policy, url), url);
    }
    assert.equal(String(policy), 'https://api.e2b.app:443, https://*.e2b.app:443');
  });

  it('a custom domain moves both families', () => {
    const policy = OutboundPolicy.forEndpoints({ domain: 'Sandbox.Example.' });
    assert.ok(allows(policy, 'https://api.sandbox.example/'));
    assert.ok(allows(policy, 'https://8080-xyz.sandbox.example/'));
    assert.ok(!allows(policy, 'https://api.e2b.app/'));
  });

  it('explicit URLs allow exactly their origin; an API URL alone keeps the sandbox hosts', () => {
    const policy = OutboundPolicy.forEndpoints({
      apiUrl: 'http://127.0.0.1:3000',
      sandboxUrl: 'http://127.0.0.1:3000/',
    });
    assert.ok(allows(policy, 'http://127.0.0.1:3000/sandboxes'));
    for (const url of [
      'http://127.0.0.1:3001/sandboxes',
      'https://127.0.0.1:3000/',
      'http://localhost:3000/',
      'https://49983-abc.e2b.app/',
      'http://127.0.0.1:notaport/',
    ]) {
      assert.ok(!allows(policy, url), url);
    }
    assert.equal(String(policy), 'http://127.0.0.1:3000');
    const api = OutboundPolicy.forEndpoints({ apiUrl: 'https://api.internal:8443' });
    assert.ok(allows(api, 'https://api.internal:8443/x'));
    assert.ok(allows(api, 'https://49983-abc.e2b.app/'));
    assert.ok(!allows(api, 'https://api.internal/x'));
  });

  it('malformed URLs are a PolicyError', () => {
    assert.throws(
      () => OutboundPolicy.forEndpoints({ apiUrl: 'not a url' }),
      (err) => err instanceof PolicyError && err.setting === 'E2B_API_URL',
    );
    for (const url of ['ftp://x', '/relative', 'http://']) {
      assert.throws(() => OutboundPolicy.forEndpoints({ sandboxUrl: url }), PolicyError, url);
    }
  });
});

describe('call serialization', LIMIT, () => {
  const box = instance();

  it('concurrent calls on one instance run one at a time, in order', async () => {
    const { e2b } = box;
    await e2b.runCode({ code: 'n = 0' });
    const calls = [];
    for (let i = 1; i <= 8; i++) {
      calls.push(
        i % 2
          ? e2b.callTool('run_code', { code: 'n += 1; n' }).then((result) => result.text)
          : e2b.runCode({ code: 'n += 1; n' }).then((result) => result.text),
      );
    }
    calls.push(e2b.writeFile('order.txt', 'first'), e2b.readFile('order.txt'));
    calls.push(e2b.writeFile('order.txt', 'second'), e2b.readFile('order.txt'));
    assert.deepEqual(await Promise.all(calls), [
      '1',
      '2',
      '3',
      '4',
      '5',
      '6',
      '7',
      '8',
      undefined,
      'first',
      undefined,
      'second',
    ]);
  });

  it('a failed call does not stop the ones after it', async () => {
    const { e2b } = box;
    const results = await Promise.allSettled([
      e2b.readFile('missing.txt'),
      e2b.runCode({ code: 'n' }),
    ]);
    assert.equal(results[0].reason.kind, 'not-found');
    assert.equal(results[1].value.text, '8');
  });

  it('a call does not block the event loop', async () => {
    let ticks = 0;
    const timer = setInterval(() => ticks++, 50);
    try {
      await box.e2b.runCommand({ command: 'sleep 1' });
    } finally {
      clearInterval(timer);
    }
    assert.ok(ticks >= 10, `${ticks} ticks in a 1-second call`);
  });

  it('close waits for the calls made before it', async () => {
    const e2b = await loadE2BTools();
    const slow = e2b.runCode({ code: 'import time; time.sleep(0.5); "done"' });
    const closed = e2b.close();
    assert.equal((await slow).text, 'done');
    assert.equal(await closed, true);
    await assert.rejects(e2b.sandboxId(), /closed/);
  });
});

describe('keep-alive', LIMIT, () => {
  const box = instance();

  it('a call longer than the sandbox timeout keeps the sandbox alive', async () => {
    await box.e2b.configure({ timeoutSeconds: 4 });
    const result = await box.e2b.callTool('run_code', {
      code: 'import time\ntime.sleep(8)\nprint("alive")',
    });
    assert.equal(result.stdout, 'alive\n', JSON.stringify(result));
    assert.equal((await box.e2b.callTool('run_command', { command: 'true' })).success, true);
  });
});

describe('the JavaScript kernel', LIMIT, () => {
  const box = instance();

  it('gives the last value, console output, state across calls and errors', async () => {
    const js = (code, language = 'javascript') => box.e2b.callTool('run_code', { code, language });
    const quiet = { stdout: '', stderr: '', error: '', success: true };
    assert.deepEqual(await js('1 + 1', 'js'), { ...quiet, text: '2' });
    assert.deepEqual(await js('console.log(6 * 7)'), { ...quiet, stdout: '42\n', text: '' });
    const first = await js('let n = 40; console.error("to stderr"); n + 2');
    assert.deepEqual([first.stderr, first.text], ['to stderr\n', '42'], JSON.stringify(first));
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

describe('shutdown', LIMIT, () => {
  it('kills the sandbox, as the server sees it', async () => {
    const e2b = await loadE2BTools();
    try {
      assert.equal(await e2b.shutdown(), false, 'no sandbox yet');
      await e2b.runCommand({ command: 'true' });
      const id = await e2b.sandboxId();
      assert.ok((await liveSandboxes()).includes(id));
      assert.equal(await e2b.shutdown(), true);
      assert.equal(await e2b.sandboxId(), undefined);
      assert.ok(!(await liveSandboxes()).includes(id), `${id} is still alive`);

      // The instance goes on with a new sandbox.
      await e2b.runCommand({ command: 'true' });
      const next = await e2b.sandboxId();
      assert.notEqual(next, id);
      assert.equal(await e2b.close(), true);
      assert.ok(!(await liveSandboxes()).includes(next), `${next} is still alive`);
    } finally {
      await e2b.close();
    }
  });
});
