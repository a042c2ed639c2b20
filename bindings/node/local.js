// The local backend, for a process that names no E2B server.
//
// An instance whose environment has neither E2B_API_KEY nor E2B_API_URL,
// and which is configured with none of apiKey, apiUrl, sandboxUrl or
// domain, runs its sandboxes on this machine: before its first call that
// reaches a server, it is configured with the endpoints and key of
// `e2b-tools local serve --ephemeral --stop-at-eof` (the CLI from
// $E2B_TOOLS_CLI, else `e2b-tools` on PATH), started once per process.
// The server's standard input is a pipe from this process, so when the
// process ends, however it ends, the server stops and its sandboxes go;
// it keeps nothing.

import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

/** The variable naming the `e2b-tools` binary to start. */
export const CLI_ENV = 'E2B_TOOLS_CLI';
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

/** $E2B_TOOLS_CLI, else `e2b-tools` on PATH, else null. */
export function findCli() {
  if (process.env[CLI_ENV]) return process.env[CLI_ENV];
  for (const dir of (process.env.PATH ?? '').split(delimiter).filter(Boolean)) {
    const candidate = join(dir, 'e2b-tools');
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Not here.
    }
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
  const cli = findCli();
  if (!cli) {
    return Promise.reject(
      new LocalServerError(
        'no E2B_API_KEY is set, and no e2b-tools CLI was found to run sandboxes on this ' +
          'machine: set E2B_API_KEY (https://e2b.dev/dashboard) to use E2B, or put the ' +
          `e2b-tools CLI on PATH (or name it in $${CLI_ENV}) for local sandboxes`,
      ),
    );
  }
  // Its own E2B_* would confuse it; the rest of the environment it needs.
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('E2B_')));
  return new Promise((resolve, reject) => {
    // Detached: a Ctrl-C reaches this process, whose exit (the pipe's end)
    // stops the server after this process's own clean-up has used it.
    const child = spawn(cli, ['local', 'serve', '--ephemeral', '--stop-at-eof'], {
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
      reject(new LocalServerError(`the local server (${cli} local serve) did not start: ${err.trim() || why}`));
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
