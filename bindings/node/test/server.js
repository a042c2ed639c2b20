// What the tests share about the local server run-tests starts: its live
// sandboxes, the default tool list, polling, and running a script in the
// test app. No tests here.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
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
 * (code, signal, output); `onLine` sees each line it prints.
 */
export function script(source, { onLine } = {}) {
  const child = spawn(process.execPath, ['--input-type=module', '-e', source], {
    cwd: APP,
    env: process.env,
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
