// What the tests share about the local server run-tests starts: its live
// sandboxes, the default tool list, polling, running a script in the test
// app, a proxy of its API with slow creates, and killing what a test left.
// No tests here.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import http from 'node:http';
import { fileURLToPath } from 'node:url';

const { E2B_API_URL, E2B_API_KEY } = process.env;

/** The default tools, in the catalog's order. */
export const DEFAULT_TOOLS = [
  'run_code',
  'run_command',
  'write_file',
  'read_file',
  'list_files',
  'start_background_command',
];

/** The ids of the server's live sandboxes, from its API. */
export async function liveSandboxes() {
  const response = await fetch(`${E2B_API_URL}/sandboxes`, {
    headers: { 'X-API-Key': E2B_API_KEY },
  });
  assert.equal(response.status, 200);
  return (await response.json()).map((sandbox) => sandbox.sandboxID);
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `read` until `done(value)`, for up to `ms`; the last value. */
export async function until(read, done, ms = 15_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await sleep(50);
  }
}

const APP = fileURLToPath(new URL('..', import.meta.url));

/**
 * Runs an ES module script in the test app: `exited` resolves with its exit
 * (code, signal, output); `onLine` sees each line it prints; `env` is added
 * to `baseEnv` (default: this process's environment).
 */
export function script(source, { onLine, env, baseEnv = process.env } = {}) {
  const child = spawn(process.execPath, ['--input-type=module', '-e', source], {
    cwd: APP,
    env: { ...baseEnv, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => {
    stdout += chunk;
    for (const line of String(chunk).split('\n')) if (line) onLine?.(line, child);
  });
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const exited = new Promise((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal, stdout, stderr })),
  );
  return { child, exited };
}

/**
 * A proxy of the server's API whose sandbox creates answer `delay` ms after
 * the server did; `created()` is called in between.
 */
export async function slowCreates(delay, created) {
  const upstream = new URL(E2B_API_URL);
  const proxy = http.createServer((request, response) => {
    response.on('error', () => {});
    const creates = request.method === 'POST' && /^\/(v\d+\/)?sandboxes\/?$/.test(request.url);
    const forward = http.request(
      {
        host: upstream.hostname,
        port: upstream.port,
        path: request.url,
        method: request.method,
        headers: request.headers,
      },
      (answer) => {
        const chunks = [];
        answer.on('data', (chunk) => chunks.push(chunk));
        answer.on('end', () => {
          const send = () => {
            response.writeHead(answer.statusCode, answer.headers);
            response.end(Buffer.concat(chunks));
          };
          if (!creates) return send();
          created();
          setTimeout(send, delay);
        });
      },
    );
    forward.on('error', () => response.destroy());
    request.pipe(forward);
  });
  await new Promise((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${proxy.address().port}`,
    close: () => {
      proxy.closeAllConnections();
      return new Promise((resolve) => proxy.close(resolve));
    },
  };
}

/** Kills what a failed test left on the server (not there `before`). */
export async function killNew(before) {
  for (const id of await liveSandboxes()) {
    if (before.has(id)) continue;
    await fetch(`${E2B_API_URL}/sandboxes/${id}`, {
      method: 'DELETE',
      headers: { 'X-API-Key': E2B_API_KEY },
    });
  }
}
