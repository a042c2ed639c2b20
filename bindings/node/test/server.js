// What the tests share about the local server run-tests starts: its live
// sandboxes, the default tool list, and polling. No tests here.

import assert from 'node:assert/strict';

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
