// The package's command, e2b-tools-mcp, as an MCP client starts it (npx,
// stdio), driven by the official MCP client against the local server: the
// tools listed with their schemas and hints, state kept across calls of one
// connection, a failed call an error result, the sandbox killed when the
// client closes, also in the middle of a call; without E2B_API_KEY it says
// what is missing.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { DEFAULT_TOOLS, liveSandboxes, sleep, until } from './server.js';

const LIMIT = { timeout: 90_000 };
const APP = fileURLToPath(new URL('..', import.meta.url));

/** The official client, connected to the package's MCP server on stdio. */
async function connectClient() {
  const client = new Client({ name: 'e2b-tools-test', version: '1.0.0' });
  await client.connect(
    new StdioClientTransport({
      command: 'npx',
      args: ['--no-install', 'e2b-tools-mcp'],
      cwd: APP,
      env: process.env,
      stderr: 'inherit',
    }),
  );
  return client;
}

describe('e2b-tools-mcp', LIMIT, () => {
  it('serves the tools over stdio to the official MCP client', async () => {
    const before = await liveSandboxes();
    const client = await connectClient();
    assert.match(client.getInstructions() ?? '', /sandbox/);
    const { tools } = await client.listTools();
    const names = tools.map((tool) => tool.name);
    assert.deepEqual(names.slice(0, 6), DEFAULT_TOOLS);
    const readFile = tools.find((tool) => tool.name === 'read_file');
    assert.equal(readFile.annotations.readOnlyHint, true);
    assert.deepEqual(readFile.inputSchema.required, ['path']);

    let answer = await client.callTool({ name: 'run_code', arguments: { code: 'x = 41' } });
    assert.equal(answer.isError, false, JSON.stringify(answer));
    answer = await client.callTool({ name: 'run_code', arguments: { code: 'print(x + 1)' } });
    assert.equal(answer.structuredContent.stdout, '42\n', JSON.stringify(answer));
    assert.deepEqual(JSON.parse(answer.content[0].text), answer.structuredContent);
    const mine = (await liveSandboxes()).filter((id) => !before.includes(id));
    assert.equal(mine.length, 1);

    answer = await client.callTool({ name: 'read_file', arguments: { path: '/no/such/file' } });
    assert.equal(answer.isError, true);
    assert.equal(answer.structuredContent.success, false);

    await client.close();
    let live = await liveSandboxes();
    for (let i = 0; i < 100 && live.includes(mine[0]); i++) {
      await sleep(100);
      live = await liveSandboxes();
    }
    assert.ok(!live.includes(mine[0]), 'the sandbox is killed when the client closes');
  });

  it('kills the sandbox when the client leaves in the middle of a call', async () => {
    const before = new Set(await liveSandboxes());
    const client = await connectClient();
    // Never answered: the client leaves first.
    const call = client
      .callTool({ name: 'run_command', arguments: { command: 'sleep 60' } })
      .catch(() => {});
    const mine = await until(
      async () => (await liveSandboxes()).filter((id) => !before.has(id)),
      (ids) => ids.length > 0,
    );
    assert.equal(mine.length, 1);
    await sleep(500);
    // The SDK ends stdin, and SIGTERM then SIGKILL after 2 s each: the
    // server must be done before the SIGKILL.
    const started = Date.now();
    await client.close();
    assert.ok(Date.now() - started < 4_000);
    const live = await until(liveSandboxes, (ids) => !ids.includes(mine[0]));
    assert.ok(!live.includes(mine[0]), 'the sandbox is killed when the client leaves');
    await call;
  });

  it('says what is missing without E2B_API_KEY', () => {
    const { E2B_API_KEY: _, ...env } = process.env;
    const run = spawnSync('npx', ['--no-install', 'e2b-tools-mcp'], {
      cwd: APP,
      env,
      input: '',
      encoding: 'utf8',
    });
    assert.equal(run.status, 1);
    assert.match(run.stderr, /needs E2B_API_KEY/);
  });
});
