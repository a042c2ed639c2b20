// Loads the E2B tools component (transpiled by jco into ./generated) and
// wraps its exports for a Node agent: the catalog as function-calling tools,
// JSON dispatch for the model's tool calls, and the typed functions (e2b-adk's
// six, and the two opt-in background-process tools enabled by
// `configure({ tools: ['all'] })`).
//
// jco runs the component's wasi:http synchronously: every tool call blocks
// Node's event loop until E2B (or the local server) answers. The server must
// therefore live in another process, and a busy web server should run the
// tools in a worker thread.

import { readFile } from 'node:fs/promises';
import { WASIShim } from '@bytecodealliance/preview2-shim/instantiation';

/** Where `npm run transpile` writes jco's output. */
const GENERATED_DIR = new URL('./generated/', import.meta.url);

/**
 * The environment variables the component reads. Only these are handed to
 * it: the rest of the host's environment (and its secrets) stays outside.
 */
export const E2B_ENV_NAMES = ['E2B_API_KEY', 'E2B_DOMAIN', 'E2B_API_URL', 'E2B_SANDBOX_URL'];

/** Picks the `E2B_*` variables the component reads from `env`. */
export function e2bEnv(env = process.env) {
  const picked = {};
  for (const name of E2B_ENV_NAMES) {
    if (env[name]) picked[name] = env[name];
  }
  return picked;
}

/**
 * A failed typed call: the component's `tool-error` (`kind`, `message`,
 * `partialOutput`, `path`, `command`).
 */
export class ToolError extends Error {
  constructor(payload) {
    super(payload.message);
    this.name = 'ToolError';
    this.kind = payload.kind;
    this.partialOutput = payload.partialOutput;
    this.path = payload.path;
    this.command = payload.command;
  }
}

/**
 * Runs a typed export; jco throws a `ComponentError` whose `payload` is the
 * `tool-error`, rethrown here as a `ToolError`. Traps pass through.
 */
function typed(call) {
  try {
    return call();
  } catch (err) {
    if (err && typeof err.payload === 'object' && err.payload !== null && 'kind' in err.payload) {
      throw new ToolError(err.payload);
    }
    throw err;
  }
}

/** One instance of the component: it owns at most one sandbox. */
export class E2BTools {
  #exports;

  constructor(exports) {
    this.#exports = exports;
  }

  /**
   * Sets the instance's options (`lifecycle.configure`). Every field of the
   * WIT `config` record is optional; lists default to empty here because
   * jco needs them present, options to `undefined` (none).
   *
   * `tools` names the tools offered (listed, described, callable): an array
   * such as `['all']` or `['default', 'stop_background_command']` (a single
   * string is one name). `default` is e2b-adk's six; `all` adds
   * `get_background_output` and `stop_background_command`. Unset:
   * `E2B_TOOLS_ENABLED`, then the default six.
   */
  configure({ tools, ...options } = {}) {
    typed(() =>
      this.#exports.lifecycle.configure({
        metadata: [],
        envs: [],
        volumeMounts: [],
        ...options,
        tools: typeof tools === 'string' ? [tools] : tools == null ? undefined : [...tools],
      }),
    );
  }

  /**
   * The catalog as OpenAI-style function tools
   * (`{type: "function", function: {name, description, parameters}}`),
   * ready for a chat-completions `tools` array.
   */
  functionTools() {
    return this.#exports.catalog.listTools().map((spec) => ({
      type: 'function',
      function: {
        name: spec.name,
        description: spec.description,
        parameters: JSON.parse(spec.parametersSchema),
      },
    }));
  }

  /** A system-prompt fragment describing the tools and the sandbox. */
  instructions() {
    return this.#exports.catalog.instructions();
  }

  /**
   * Runs a tool call as a model makes it: `args` is the arguments object or
   * the JSON text the model produced. Returns e2b-adk's result object
   * (`success: true|false`); never throws for a failed tool.
   */
  callTool(name, args = {}) {
    const json = typeof args === 'string' ? args : JSON.stringify(args);
    return JSON.parse(this.#exports.catalog.callTool(name, json));
  }

  /** Typed `run-code`: `{stdout, stderr, text, error, rich}`. */
  runCode({ code, language, envs = [], timeoutSeconds } = {}) {
    return typed(() => this.#exports.tools.runCode({ code, language, envs, timeoutSeconds }));
  }

  /** Typed `run-command`: `{command, stdout, stderr, exitCode}`. */
  runCommand({ command, cwd, envs = [], timeoutSeconds } = {}) {
    return typed(() => this.#exports.tools.runCommand({ command, cwd, envs, timeoutSeconds }));
  }

  /** Typed `write-file`. */
  writeFile(path, content) {
    typed(() => this.#exports.tools.writeFile(path, content));
  }

  /** Typed `read-file`: the file's text. */
  readFile(path) {
    return typed(() => this.#exports.tools.readFile(path));
  }

  /** Typed `list-files`: `[{name, type}]`, one level deep. */
  listFiles(path) {
    return typed(() => this.#exports.tools.listFiles(path));
  }

  /** Typed `start-background-command`: `{command, pid, previewUrl, readiness, …}`. */
  startBackgroundCommand({ command, port, cwd, envs = [], timeoutSeconds } = {}) {
    return typed(() =>
      this.#exports.tools.startBackgroundCommand({ command, port, cwd, envs, timeoutSeconds }),
    );
  }

  /**
   * Typed `get-background-output`: what a process started by
   * `startBackgroundCommand` printed, from `since` (`{stdout, stderr}` byte
   * offsets, numbers or BigInts, e.g. the previous answer's `nextSince`;
   * undefined: from the start), and whether it runs:
   * `{pid, state: 'running'|'exited', exitCode, stdout, stderr, nextSince}`
   * (`nextSince`'s offsets are BigInts, as jco maps `u64`). Only when enabled
   * by `configure({ tools })`, else a `ToolError` `invalid-argument`.
   */
  getBackgroundOutput(pid, since) {
    const offsets =
      since == null
        ? undefined
        : { stdout: BigInt(since.stdout ?? 0), stderr: BigInt(since.stderr ?? 0) };
    return typed(() => this.#exports.tools.getBackgroundOutput(pid, offsets));
  }

  /**
   * Typed `stop-background-command`: stops a process started by
   * `startBackgroundCommand` and its children with `signal` (`'sigterm'`,
   * the default, `'sigint'`, `'sighup'`, `'sigquit'`, `'sigkill'`; `'SIGTERM'`
   * and `'term'` are accepted too), then SIGKILL after 5 seconds:
   * `{pid, exitCode, signal}`, `signal` being the one that ended it
   * (undefined if it had exited already). Only when enabled by
   * `configure({ tools })`.
   */
  stopBackgroundCommand(pid, signal) {
    let name = signal == null ? undefined : String(signal).trim().toLowerCase();
    if (name !== undefined && !name.startsWith('sig')) name = `sig${name}`;
    return typed(() => this.#exports.tools.stopBackgroundCommand(pid, name));
  }

  /** The ID of the instance's sandbox, if one is open. */
  sandboxId() {
    return this.#exports.lifecycle.sandboxId();
  }

  /** Kills the sandbox; true if one was killed. */
  shutdown() {
    return typed(() => this.#exports.lifecycle.shutdown());
  }
}

/** Compiles jco's core modules once per process; instances share them. */
const coreModules = new Map();

function compileCore(name) {
  if (!coreModules.has(name)) {
    coreModules.set(
      name,
      readFile(new URL(name, GENERATED_DIR)).then((bytes) => WebAssembly.compile(bytes)),
    );
  }
  return coreModules.get(name);
}

/**
 * Instantiates the component with `env` as its whole WASI environment
 * (default: the `E2B_*` variables of this process). Each call gives a new
 * instance, hence a new sandbox on its first tool call.
 */
export async function loadE2BTools({ env = e2bEnv() } = {}) {
  let generated;
  try {
    generated = await import(new URL('e2b_tools.js', GENERATED_DIR));
  } catch (err) {
    throw new Error(
      `the transpiled component is missing (${err.message}); run \`npm run transpile\` first`,
    );
  }
  // `sandbox.env` replaces the process environment the guest sees. The
  // component imports no wasi:filesystem, so there is nothing to preopen.
  const shim = new WASIShim({ sandbox: { env } });
  const exports = await generated.instantiate(compileCore, shim.getImportObject());
  return new E2BTools(exports);
}
