// The local backend, for a process that names no E2B server.
//
// An instance whose environment has neither E2B_API_KEY nor E2B_API_URL,
// and which is configured with none of apiKey, apiUrl, sandboxUrl or
// domain, runs its sandboxes on this machine: before its first call that
// reaches a server, it is configured with the endpoints and key of a local
// server started once per process: `$E2B_TOOLS_CLI local serve --ephemeral
// --stop-at-eof` when that variable names an e2b-tools CLI, else the
// `e2b-local` of the optional dependency @e2b-tools/local-linux-x64 (on
// Linux x86-64), else `e2b-tools` on PATH.
// The server's standard input is a pipe from this process, so when the
// process ends, however it ends, the server stops and its sandboxes go;
// it keeps nothing.

import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { createRequire } from 'node:module';
import { delimiter, dirname, join } from 'node:path';

/** The variable naming the `e2b-tools` binary to start. */
export const CLI_ENV = 'E2B_TOOLS_CLI';
/** The optional dependency that ships the local server for this platform. */
export const PLATFORM_PACKAGE = '@e2b-tools/local-linux-x64';
/** How long the server may take to print its endpoints (ms). */
const START_TIMEOUT = 60_000;
const NAMES = ['E2B_API_URL', 'E2B_SANDBOX_URL', 'E2B_API_KEY'];

/** No E2B server is named and the local one cannot be started. */
export class LocalServerError extends Error {
  constructor(message) {
    super(message);
    this.name = 'LocalServerError';
  }
}

/** Whether `env` names no E2B server (neither a key nor an API URL). */
export function needsLocalServer(env) {
  return !env.E2B_API_KEY && !env.E2B_API_URL;
}

function executable(path) {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The bundled server's path, or null where the platform package is not installed. */
export function bundledServer() {
  try {
    const manifest = createRequire(import.meta.url).resolve(`${PLATFORM_PACKAGE}/package.json`);
    const server = join(dirname(manifest), 'bin', 'e2b-local');
    return executable(server) ? server : null;
  } catch {
    return null;
  }
}

/** The command that runs the local server until its stdin ends:
 * $E2B_TOOLS_CLI's, else the bundled e2b-local's, else that of
 * `e2b-tools` on PATH; null without any. */
export function serverCommand() {
  const flags = ['serve', '--ephemeral', '--stop-at-eof'];
  if (process.env[CLI_ENV]) return [process.env[CLI_ENV], 'local', ...flags];
  const bundled = bundledServer();
  if (bundled) return [bundled, ...flags];
  for (const dir of (process.env.PATH ?? '').split(delimiter).filter(Boolean)) {
    const candidate = join(dir, 'e2b-tools');
    if (executable(candidate)) return [candidate, 'local', ...flags];
  }
  return null;
}

let started = null;

/** The local server's endpoints ({E2B_API_URL, E2B_SANDBOX_URL, E2B_API_KEY}), started the first time. */
export function localEndpoints() {
  started ??= start().catch((err) => {
    started = null;
    throw err;
  });
  return started.then(({ endpoints }) => ({ ...endpoints }));
}

/** The local server's process id, if this process started one. */
export async function localServerPid() {
  return started ? (await started).pid : null;
}

function start() {
  const command = serverCommand();
  if (!command) {
    return Promise.reject(
      new LocalServerError(
        'no E2B_API_KEY is set, and no local server was found to run sandboxes on this ' +
          'machine: set E2B_API_KEY (https://e2b.dev/dashboard) to use E2B, or install ' +
          `${PLATFORM_PACKAGE} (Linux x86-64), or put the e2b-tools CLI on PATH (or name ` +
          `it in $${CLI_ENV}) for local sandboxes`,
      ),
    );
  }
  const [program, ...args] = command;
  // Its own E2B_* would confuse it; the rest of the environment it needs.
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('E2B_')));
  return new Promise((resolve, reject) => {
    // Detached: a Ctrl-C reaches this process, whose exit (the pipe's end)
    // stops the server after this process's own clean-up has used it.
    const child = spawn(program, args, {
      stdio: ['pipe', 'pipe', 'pipe'],
      env,
      detached: true,
    });
    let out = '';
    let err = '';
    const found = {};
    const timer = setTimeout(() => fail('it printed no endpoints in time'), START_TIMEOUT);
    function fail(why) {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(new LocalServerError(`the local server (${command.slice(0, -2).join(' ')}) did not start: ${err.trim() || why}`));
    }
    child.on('error', (e) => fail(e.message));
    child.on('exit', (code) => fail(`it exited (code ${code})`));
    child.stderr.on('data', (chunk) => {
      err += chunk;
    });
    child.stdout.on('data', (chunk) => {
      out += chunk;
      for (const line of out.split('\n')) {
        const match = /^export (E2B_[A-Z_]+)=(.*)$/.exec(line.trim());
        if (match) found[match[1]] = match[2].replace(/^'|'$/g, '');
      }
      if (NAMES.every((name) => found[name])) {
        clearTimeout(timer);
        child.removeAllListeners('exit');
        child.removeAllListeners('error');
        // Read and dropped from now on, and nothing of it keeps Node alive;
        // stdin stays open until this process ends.
        child.stdout.removeAllListeners('data');
        child.stderr.removeAllListeners('data');
        child.stdout.resume();
        child.stderr.resume();
        for (const stream of [child.stdin, child.stdout, child.stderr]) stream.unref?.();
        child.unref();
        // A server that died is started again by the next instance that
        // needs one (as the Python package does).
        child.once('exit', () => {
          started = null;
        });
        resolve({ pid: child.pid, endpoints: Object.fromEntries(NAMES.map((n) => [n, found[n]])) });
      }
    });
  });
}
