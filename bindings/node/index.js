// E2B sandbox tools for a Node agent: the e2b-tools WebAssembly component
// (transpiled by jco) behind an async API. Each instance runs on a worker
// thread of its own (worker.js), so a tool call never blocks the event loop;
// calls on one instance run one at a time, in order, as the Rust host runs
// them. Each instance is an EventEmitter of lifecycle events, which come
// from what the component reports as it happens (its `events` import, sent
// by the worker while the call runs); the sandboxes an instance owns are
// known from those reports, so the end of the process kills them even in
// the middle of a call (lifecycle.js). Types and documentation: index.d.ts.

import { EventEmitter } from 'node:events';
import { readFile, readdir } from 'node:fs/promises';
import { MessageChannel, Worker, receiveMessageOnPort } from 'node:worker_threads';
import { EventQueue, setCoreModules, track, untrack, workerExecArgv } from './lifecycle.js';
import { OutboundPolicy, policyFor, rulesOf } from './policy.js';
import { localEndpoints, needsLocalServer } from './local.js';

export { DEFAULT_DOMAIN, OutboundPolicy, PolicyError } from './policy.js';
export { LocalServerError } from './local.js';
export { EVENT_KINDS, QUEUE_CAPACITY } from './lifecycle.js';
export { MAX_POOL_SIZE, WAITING_TIMEOUT, WarmPool } from './pool.js';

const GENERATED_DIR = new URL('./generated/', import.meta.url);

/**
 * Keeps the `E2B_*` variables of `env`: the only ones the component sees,
 * so the rest of the environment (and its secrets) stays outside.
 */
export function e2bEnv(env = process.env) {
  const picked = {};
  for (const [name, value] of Object.entries(env ?? {})) {
    if (name.startsWith('E2B_') && typeof value === 'string') picked[name] = value;
  }
  return picked;
}

/** A failed typed call: the component's `tool-error`. */
export class ToolError extends Error {
  constructor({ kind, message, partialOutput = '', path, command }) {
    super(message);
    this.name = 'ToolError';
    this.kind = kind;
    this.partialOutput = partialOutput;
    this.path = path;
    this.command = command;
  }
}

// Argument checks: a wrong type is the caller's bug, reported by name before
// anything reaches the component.

function fail(what, expected, value) {
  const shown = typeof value === 'string' ? JSON.stringify(value) : String(value);
  throw new TypeError(`${what} must be ${expected}, got ${typeof value} ${shown.slice(0, 80)}`);
}

function text(what, value) {
  if (typeof value !== 'string') fail(what, 'a string', value);
  return value;
}

function optional(check) {
  return (what, value) => (value == null ? undefined : check(what, value));
}

function boolean(what, value) {
  if (typeof value !== 'boolean') fail(what, 'a boolean', value);
  return value;
}

function integer(max) {
  return (what, value) => {
    if (!Number.isInteger(value) || value < 0 || value > max) {
      fail(what, `an integer from 0 to ${max}`, value);
    }
    return value;
  };
}

const u16 = integer(0xffff);
const u32 = integer(0xffffffff);
const optText = optional(text);
const optBoolean = optional(boolean);
const optU16 = optional(u16);
const optU32 = optional(u32);

function object(what, value) {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    fail(what, 'an object', value);
  }
  return value;
}

/** `{NAME: "value"}` as the WIT's list of key-value pairs. */
function pairs(what, value) {
  if (value == null) return [];
  return Object.entries(object(what, value)).map(([key, entry]) => ({
    key,
    value: text(`${what}.${key}`, entry),
  }));
}

function list(what, value, check) {
  if (value == null) return [];
  if (!Array.isArray(value)) fail(what, 'an array', value);
  return value.map((entry, i) => check(`${what}[${i}]`, entry));
}

function oneOf(what, value, names) {
  if (!names.includes(value)) fail(what, `one of ${names.join(', ')}`, value);
  return value;
}

/** Rejects keys a function does not take (a typo would be silently ignored). */
function known(what, value, keys) {
  for (const key of Object.keys(object(what, value))) {
    if (!keys.includes(key)) throw new TypeError(`${what} has no option ${JSON.stringify(key)}`);
  }
  return value;
}

const CONFIG_KEYS = [
  'apiKey',
  'template',
  'metadata',
  'envs',
  'timeoutSeconds',
  'domain',
  'apiUrl',
  'sandboxUrl',
  'requestTimeoutMs',
  'allowInternetAccess',
  'network',
  'onTimeout',
  'autoResume',
  'volumeMounts',
  'maxOutputBytes',
  'richResults',
  'readinessTimeoutMs',
  'sandboxId',
  'tools',
];

/** `configure` options of this package's own, not the component's. */
const HOST_KEYS = ['killOnExit'];

/** The WIT `network-rules` record, when there are rules. */
function witNetwork(network) {
  if (network == null) return undefined;
  const { allowOut, denyOut, allowPublicTraffic, maskRequestHost } = known(
    'config.network',
    network,
    ['allowOut', 'denyOut', 'allowPublicTraffic', 'maskRequestHost'],
  );
  return {
    allowOut: list('config.network.allowOut', allowOut, text),
    denyOut: list('config.network.denyOut', denyOut, text),
    allowPublicTraffic: optBoolean('config.network.allowPublicTraffic', allowPublicTraffic),
    maskRequestHost: optText('config.network.maskRequestHost', maskRequestHost),
  };
}

/** The WIT `config` record from the wrapper's options. */
function witConfig(config) {
  const c = known('config', config, [...CONFIG_KEYS, ...HOST_KEYS]);
  return {
    apiKey: optText('config.apiKey', c.apiKey),
    template: optText('config.template', c.template),
    metadata: pairs('config.metadata', c.metadata),
    envs: pairs('config.envs', c.envs),
    timeoutSeconds: optU32('config.timeoutSeconds', c.timeoutSeconds),
    domain: optText('config.domain', c.domain),
    apiUrl: optText('config.apiUrl', c.apiUrl),
    sandboxUrl: optText('config.sandboxUrl', c.sandboxUrl),
    requestTimeoutMs: optU32('config.requestTimeoutMs', c.requestTimeoutMs),
    allowInternetAccess: optBoolean('config.allowInternetAccess', c.allowInternetAccess),
    network: witNetwork(c.network),
    onTimeout:
      c.onTimeout == null ? undefined : oneOf('config.onTimeout', c.onTimeout, ['kill', 'pause']),
    autoResume: optBoolean('config.autoResume', c.autoResume),
    volumeMounts: list('config.volumeMounts', c.volumeMounts, (what, mount) => {
      known(what, mount, ['name', 'path']);
      return { name: text(`${what}.name`, mount.name), path: text(`${what}.path`, mount.path) };
    }),
    maxOutputBytes: optU32('config.maxOutputBytes', c.maxOutputBytes),
    richResults: optBoolean('config.richResults', c.richResults),
    readinessTimeoutMs: optU32('config.readinessTimeoutMs', c.readinessTimeoutMs),
    sandboxId: optText('config.sandboxId', c.sandboxId),
    tools:
      c.tools == null
        ? undefined
        : typeof c.tools === 'string'
          ? [c.tools]
          : list('config.tools', c.tools, text),
  };
}

const SIGNALS = ['sigterm', 'sigint', 'sighup', 'sigquit', 'sigkill'];

/** A byte offset as the WIT's u64 (jco takes BigInts). */
function offset(what, value) {
  if (typeof value === 'bigint' && value >= 0n && value <= 0xffffffffffffffffn) return value;
  return BigInt(integer(Number.MAX_SAFE_INTEGER)(what, value ?? 0));
}

/** The JSON text of a model's arguments (a string is sent as it is). */
function argumentsJson(args) {
  if (typeof args === 'string') return args;
  const json = JSON.stringify(args ?? {});
  // JSON.stringify gives undefined for a function or a symbol.
  if (json === undefined) fail('callTool arguments', 'an object or JSON text', args);
  return json;
}

/** The catalog entry of one tool, as the component gives it. */
function toolSpec(spec) {
  return {
    name: spec.name,
    title: spec.title,
    description: spec.description,
    parameters: JSON.parse(spec.parametersSchema),
    resultSchema: JSON.parse(spec.resultSchema),
    hints: { ...spec.hints },
  };
}

/** A `sandbox_start` event's detail, by the component's `origin`. */
const START_DETAIL = { created: 'created', attached: 'resumed', forked: 'forked' };
/** A `sandbox_stop` event's detail, by the component's stop `reason`. */
const STOP_DETAIL = { killed: 'shutdown', released: 'released', gone: 'gone' };
/** The requests that never make a sandbox; every tool call and `prepare` may. */
const MAKES_NONE = new Set(['configure', 'sandboxId', 'shutdown', 'listTools', 'instructions']);

/** One instance of the component: it owns at most one sandbox (and its forks). */
export class E2BTools extends EventEmitter {
  #worker;
  /** Where the worker's answers and reports arrive, in order. */
  #port;
  /** Bumped by the worker at each message it sends; what `#drain` saw. */
  #seq;
  #seen = 0;
  /** The last queued call; the next one starts when it has settled. */
  #tail = Promise.resolve();
  /** Queued and running calls: the worker keeps Node alive only while some are. */
  #pending = 0;
  /** The running request's promise callbacks, and what it is. */
  #current;
  #running;
  /** Why no more calls can run (closed, or the worker died). */
  #stopped;
  /** The `E2B_*` variables the component was given. */
  #env;
  /** The allow-list in force. */
  #policy;
  /** Whether the host gave it (then `configure` leaves it alone). */
  #explicitPolicy;
  /** The instance's own sandbox (not a fork), as reported: `{id, since}`, or null. */
  #sandbox = null;
  /** The sandboxes the component reported as ours to kill, oldest first. */
  #owned = [];
  /** `configure({killOnExit})`: the exit cleanup kills the sandbox even if not ours. */
  #killOnExit = false;
  /** The connection options, for a reaper killing our sandboxes by id. */
  #connection = {};
  /** Nothing names an E2B server: the local one is used unless `configure` names one. */
  #localPending;
  #events;
  #dropped = 0;
  #warned = false;

  /** Use `loadE2BTools()`. */
  constructor(worker, port, seq, env, policy, explicitPolicy) {
    super();
    this.#events = new EventQueue(this, (event, why) => this.#drop(event, why));
    this.#worker = worker;
    this.#port = port;
    this.#seq = new Int32Array(seq);
    this.#env = env;
    this.#policy = policy;
    this.#explicitPolicy = explicitPolicy;
    this.#localPending = needsLocalServer(env);
    port.on('message', (message) => this.#message(message));
    port.unref();
    worker.on('error', (err) =>
      this.#stop(new Error(`the e2b-tools worker failed: ${err.message}`)),
    );
    worker.on('exit', (code) =>
      this.#stop(new Error(`the e2b-tools worker exited (code ${code})`)),
    );
    worker.unref();
    track(this, {
      drain: () => this.#drain(),
      making: () => this.#making(),
      wait: (ms) => Atomics.wait(this.#seq, 0, this.#seen, ms),
      targets: () => this.#exitTargets(),
    });
  }

  /** Events lost over all listeners (the queue was full, or a listener threw). */
  get droppedEvents() {
    return this.#dropped;
  }

  #drop(event, why) {
    this.#dropped += 1;
    if (!this.#warned) {
      this.#warned = true;
      process.emitWarning(
        `an e2b-tools event listener lost a ${event.kind} event: ${why?.message ?? why}`,
        'E2BToolsEventWarning',
      );
    }
  }

  #publish(kind, fields = {}) {
    this.#events.push({ kind, time: Date.now(), ...fields });
  }

  #message(message) {
    if (message.report) this.#report(message.report);
    else if (!message.ready) this.#answer(message);
  }

  /** One report of the component (WIT `events`), as it happened. */
  #report(report) {
    const { sandboxId } = report;
    switch (report.type) {
      case 'sandbox-started':
        if (report.owned && !this.#owned.includes(sandboxId)) this.#owned.push(sandboxId);
        if (report.origin !== 'forked') {
          this.#sandbox = { id: sandboxId, since: Date.now() };
        }
        this.#publish('sandbox_start', {
          sandboxId,
          detail: START_DETAIL[report.origin] ?? report.origin,
        });
        break;
      case 'sandbox-stopped': {
        this.#owned = this.#owned.filter((id) => id !== sandboxId);
        let duration;
        if (this.#sandbox?.id === sandboxId) {
          duration = Date.now() - this.#sandbox.since;
          this.#sandbox = null;
        }
        this.#publish('sandbox_stop', {
          sandboxId,
          detail: STOP_DETAIL[report.reason] ?? report.reason,
          success: report.reason === 'killed',
          duration,
        });
        break;
      }
      case 'exec-started':
        this.#publish('exec_start', { tool: report.tool, sandboxId });
        break;
      case 'exec-ended':
        this.#publish('exec_end', {
          tool: report.tool,
          sandboxId,
          duration: report.durationMs,
          success: report.errorKind == null,
          errorKind: report.errorKind,
        });
        break;
      case 'snapshot-created':
        this.#publish('snapshot', {
          tool: 'create_snapshot',
          sandboxId,
          detail: report.snapshotId,
        });
        break;
      default:
        // A kind this package does not know (a newer component): not told.
        break;
    }
  }

  #answer({ value, toolError, error }) {
    const current = this.#current;
    this.#current = undefined;
    this.#running = undefined;
    if (toolError) current?.reject(new ToolError(toolError));
    else if (error) current?.reject(Object.assign(new Error(error.message), { name: error.name }));
    else current?.resolve(value);
  }

  #stop(reason) {
    this.#stopped ??= reason;
    this.#current?.reject(this.#stopped);
    this.#current = undefined;
    this.#running = undefined;
  }

  // What the exit cleanup (lifecycle.js) asks, synchronously: it cannot
  // wait for the port's 'message' events.

  /** Takes in every message the worker has sent (reports and answers). */
  #drain() {
    this.#seen = Atomics.load(this.#seq, 0);
    for (;;) {
      let received;
      try {
        received = receiveMessageOnPort(this.#port);
      } catch {
        return;
      }
      if (received === undefined) return;
      this.#message(received.message);
    }
  }

  /**
   * Whether the running call may be making a sandbox not reported yet: a
   * tool call or `prepare` with no sandbox (it creates one), or a fork.
   */
  #making() {
    const running = this.#running;
    if (!running || this.#stopped || MAKES_NONE.has(running.op)) return false;
    const forks = running.op === 'forkSandbox' || running.tool === 'fork_sandbox';
    return forks || this.#sandbox === null;
  }

  /** What the exit cleanup kills: our sandboxes, newest first (forks first). */
  #exitTargets() {
    const sandboxIds = [...this.#owned].reverse();
    const own = this.#sandbox?.id;
    if (this.#killOnExit && own && !sandboxIds.includes(own)) sandboxIds.push(own);
    if (sandboxIds.length === 0) return null;
    return {
      sandboxIds,
      env: this.#env,
      rules: rulesOf(this.#policy),
      config: witConfig(this.#connection),
    };
  }

  /** Runs `task` after every call queued before it. */
  #enqueue(task) {
    if (this.#pending++ === 0) this.#worker.ref();
    const result = this.#tail.then(task).finally(() => {
      if (--this.#pending === 0) this.#worker.unref();
    });
    this.#tail = result.catch(() => {});
    return result;
  }

  /** Sends one request; only one is in flight (the queue sees to it). */
  #send(op, ...args) {
    return new Promise((resolve, reject) => {
      if (this.#stopped) return reject(this.#stopped);
      this.#current = { resolve, reject };
      this.#running = { op, tool: op === 'callTool' ? args[0] : undefined };
      this.#worker.postMessage({ op, args });
    });
  }

  #call(op, ...args) {
    return this.#enqueue(() => this.#send(op, ...args));
  }

  /**
   * A tool call. Its events (exec_start, a sandbox's start or loss,
   * exec_end, snapshot) come from the component as they happen; the host
   * adds an `error` event when the call fails other than as a tool (a trap).
   */
  #tool(tool, op, ...args) {
    return this.#enqueue(async () => {
      // A closed (or dead) instance runs nothing: no events either.
      if (this.#stopped) throw this.#stopped;
      await this.#serverNamed();
      try {
        return await this.#send(op, ...args);
      } catch (err) {
        if (!(err instanceof ToolError)) {
          // jco throws a trap as WebAssembly's RuntimeError.
          this.#publish('error', {
            tool,
            sandboxId: this.#sandbox?.id,
            errorKind: err?.name === 'RuntimeError' ? 'trapped' : 'session',
            detail: String(err?.message ?? err),
          });
        }
        throw err;
      }
    });
  }

  get policy() {
    return this.#policy;
  }

  /**
   * In the queue, before a call that reaches a server: the local server's
   * endpoints, when nothing names a server.
   */
  async #serverNamed() {
    if (this.#localPending) await this.#configureNow({});
  }

  configure(config = {}) {
    return this.#enqueue(() => this.#configureNow(config));
  }

  async #configureNow(config) {
    const named = ['apiKey', 'apiUrl', 'sandboxUrl', 'domain'].some((key) => config?.[key] != null);
    if (this.#localPending && !named) {
      const local = await localEndpoints();
      config = { ...config, apiKey: local.E2B_API_KEY, apiUrl: local.E2B_API_URL, sandboxUrl: local.E2B_SANDBOX_URL };
    }
    const wit = witConfig(config);
    const killOnExit = optBoolean('config.killOnExit', config.killOnExit) ?? false;
    // Computed now, so a bad URL is refused before the component takes it.
    const next = this.#explicitPolicy ? null : policyFor(wit, this.#env);
    await this.#send('configure', wit, next && rulesOf(next));
    if (next) this.#policy = next;
    this.#killOnExit = killOnExit;
    const { apiKey, domain, apiUrl, sandboxUrl, requestTimeoutMs } = wit;
    this.#connection = Object.fromEntries(
      Object.entries({ apiKey, domain, apiUrl, sandboxUrl, requestTimeoutMs }).filter(
        ([, v]) => v !== undefined,
      ),
    );
    // Configured: with the local server's endpoints, or the server named.
    this.#localPending = false;
  }

  sandboxId() {
    return this.#call('sandboxId');
  }

  prepare(timeoutSeconds) {
    const timeout = optU32('timeoutSeconds', timeoutSeconds);
    return this.#enqueue(async () => {
      await this.#serverNamed();
      return this.#send('prepare', timeout);
    });
  }

  shutdown() {
    return this.#enqueue(() => this.#shutdown());
  }

  async #shutdown() {
    try {
      return await this.#send('shutdown');
    } catch (err) {
      this.#publish('error', {
        sandboxId: this.#sandbox?.id,
        errorKind: err instanceof ToolError ? err.kind : 'session',
        detail: `sandbox shutdown failed: ${err?.message ?? err}`,
      });
      throw err;
    }
  }

  close() {
    return this.#enqueue(async () => {
      if (this.#stopped) return false;
      try {
        return await this.#shutdown();
      } finally {
        this.#stop(new Error('this E2BTools instance is closed'));
        // A sandbox a failed shutdown left is still the exit cleanup's.
        if (this.#owned.length === 0) untrack(this);
        await this.#worker.terminate();
      }
    });
  }

  async listTools() {
    return (await this.#call('listTools')).map(toolSpec);
  }

  async openaiChatTools() {
    return (await this.listTools()).map(({ name, description, parameters }) => ({
      type: 'function',
      function: { name, description, parameters },
    }));
  }

  async openaiResponsesTools() {
    // Not strict: strict mode needs every property required, and most of
    // these arguments are optional.
    return (await this.listTools()).map(({ name, description, parameters }) => ({
      type: 'function',
      name,
      description,
      parameters,
      strict: false,
    }));
  }

  async anthropicTools() {
    return (await this.listTools()).map(({ name, description, parameters }) => ({
      name,
      description,
      input_schema: parameters,
    }));
  }

  instructions() {
    return this.#call('instructions');
  }

  async callTool(name, args) {
    const json = argumentsJson(args);
    const tool = text('callTool name', name);
    return JSON.parse(await this.#tool(tool, 'callTool', tool, json));
  }

  async runCode(args) {
    const { code, language, envs, timeoutSeconds } = known('runCode arguments', args, [
      'code',
      'language',
      'envs',
      'timeoutSeconds',
    ]);
    return this.#tool('run_code', 'runCode', {
      code: text('code', code),
      language: optText('language', language),
      envs: pairs('envs', envs),
      timeoutSeconds: optU32('timeoutSeconds', timeoutSeconds),
    });
  }

  async runCommand(args) {
    const { command, cwd, envs, timeoutSeconds } = known('runCommand arguments', args, [
      'command',
      'cwd',
      'envs',
      'timeoutSeconds',
    ]);
    return this.#tool('run_command', 'runCommand', {
      command: text('command', command),
      cwd: optText('cwd', cwd),
      envs: pairs('envs', envs),
      timeoutSeconds: optU32('timeoutSeconds', timeoutSeconds),
    });
  }

  async writeFile(path, content) {
    await this.#tool('write_file', 'writeFile', text('path', path), text('content', content));
  }

  async readFile(path) {
    return this.#tool('read_file', 'readFile', text('path', path));
  }

  async listFiles(path) {
    return this.#tool('list_files', 'listFiles', optText('path', path));
  }

  async startBackgroundCommand(args) {
    const { command, port, cwd, envs, timeoutSeconds } = known(
      'startBackgroundCommand arguments',
      args,
      ['command', 'port', 'cwd', 'envs', 'timeoutSeconds'],
    );
    return this.#tool('start_background_command', 'startBackgroundCommand', {
      command: text('command', command),
      port: optU16('port', port),
      cwd: optText('cwd', cwd),
      envs: pairs('envs', envs),
      timeoutSeconds: optU32('timeoutSeconds', timeoutSeconds),
    });
  }

  async getBackgroundOutput(pid, since) {
    const offsets =
      since == null
        ? undefined
        : {
            stdout: offset('since.stdout', object('since', since).stdout),
            stderr: offset('since.stderr', since.stderr),
          };
    const output = await this.#tool('get_background_output', 'getBackgroundOutput', u32('pid', pid), offsets);
    // The output kept per stream is capped (64 MiB): offsets fit a number.
    const { stdout, stderr } = output.nextSince;
    return { ...output, nextSince: { stdout: Number(stdout), stderr: Number(stderr) } };
  }

  async stopBackgroundCommand(pid, signal) {
    const name =
      signal == null ? undefined : oneOf('signal', text('signal', signal).toLowerCase(), SIGNALS);
    return this.#tool('stop_background_command', 'stopBackgroundCommand', u32('pid', pid), name);
  }

  async createSnapshot(name) {
    return this.#tool('create_snapshot', 'createSnapshot', optText('name', name));
  }

  async forkSandbox(args = {}) {
    const { count, timeoutSeconds, keep = false } = known('forkSandbox arguments', args, [
      'count',
      'timeoutSeconds',
      'keep',
    ]);
    return this.#tool('fork_sandbox', 'forkSandbox', {
      count: optU32('count', count),
      timeoutSeconds: optU32('timeoutSeconds', timeoutSeconds),
      keep: boolean('keep', keep),
    });
  }
}

/** The core modules, compiled once per process and shared by every instance. */
let coreModules;

function compileCoreModules() {
  coreModules ??= readdir(GENERATED_DIR).then(async (names) => {
    const wasm = names.filter((name) => name.endsWith('.wasm'));
    const compiled = await Promise.all(
      wasm.map(async (name) => WebAssembly.compile(await readFile(new URL(name, GENERATED_DIR)))),
    );
    const modules = Object.fromEntries(wasm.map((name, i) => [name, compiled[i]]));
    setCoreModules(modules);
    return modules;
  });
  return coreModules;
}

export async function loadE2BTools(options = {}) {
  const { env = process.env, policy } = known('loadE2BTools options', options, ['env', 'policy']);
  if (policy != null && !(policy instanceof OutboundPolicy)) {
    fail('policy', 'an OutboundPolicy (OutboundPolicy.forEndpoints)', policy);
  }
  const picked = e2bEnv(env);
  // Checks the endpoints now, for a clear error; the worker enforces them.
  const initial = policy ?? policyFor({}, picked);
  // The worker's answers and reports, on a port the exit cleanup can read
  // synchronously, and the count of its messages it can wait on.
  const { port1, port2 } = new MessageChannel();
  const seq = new SharedArrayBuffer(4);
  const worker = new Worker(new URL('./worker.js', import.meta.url), {
    workerData: {
      env: picked,
      rules: rulesOf(initial),
      coreModules: await compileCoreModules(),
      port: port2,
      seq,
    },
    transferList: [port2],
    // The worker's own process.env is the same few variables.
    env: picked,
    execArgv: workerExecArgv(),
  });
  try {
    await new Promise((resolve, reject) => {
      const failed = (err) =>
        reject(new Error(`the e2b-tools component did not load: ${err.message}`));
      const exited = (code) => failed(new Error(`its worker exited (code ${code})`));
      worker.once('error', failed);
      worker.once('exit', exited);
      port1.once('message', () => {
        worker.off('error', failed);
        worker.off('exit', exited);
        resolve();
      });
    });
  } catch (err) {
    port1.close();
    throw err;
  }
  return new E2BTools(worker, port1, seq, picked, initial, policy != null);
}
