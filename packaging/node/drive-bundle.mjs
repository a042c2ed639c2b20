// Drives an unpacked MCPB bundle as a desktop client would: the server's
// command, arguments and environment from its manifest through the official
// mcpb library's own substitution (getMcpConfigForManifest, the user leaving
// the optional key empty), started over stdio by the official MCP client.
// Checks the tools, state across calls and the sandbox's end; prints a line.
//
//   node drive-bundle.mjs UNPACKED_DIR
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';

import { getMcpConfigForManifest, hasRequiredConfigMissing } from '@anthropic-ai/mcpb';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const dir = path.resolve(process.argv[2]);
const manifest = JSON.parse(readFileSync(path.join(dir, 'manifest.json'), 'utf8'));
const userConfig = {};
assert.equal(hasRequiredConfigMissing({ manifest, userConfig }), false, 'the key is optional');
const config = await getMcpConfigForManifest({
  manifest,
  extensionPath: dir,
  systemDirs: { HOME: homedir(), DESKTOP: homedir(), DOCUMENTS: homedir(), DOWNLOADS: homedir() },
  userConfig,
  pathSeparator: path.sep,
});
assert.equal(config.env.E2B_API_KEY, '', 'an empty key, so the local backend');

const env = { PATH: process.env.PATH, HOME: homedir(), ...config.env };
if (process.env.E2B_TOOLS_TEMPLATES_DIR) env.E2B_TOOLS_TEMPLATES_DIR = process.env.E2B_TOOLS_TEMPLATES_DIR;
const client = new Client({ name: 'e2b-tools-bundle-test', version: '1.0.0' });
await client.connect(
  new StdioClientTransport({ command: config.command, args: config.args, env, stderr: 'pipe' }),
);
const { tools } = await client.listTools();
const names = tools.map((tool) => tool.name);
for (const declared of manifest.tools) assert.ok(names.includes(declared.name), `${declared.name} in ${names}`);

let answer = await client.callTool({ name: 'run_command', arguments: { command: 'echo "$((6 * 7))" > /home/user/n' } });
assert.equal(answer.isError, false, JSON.stringify(answer));
answer = await client.callTool({ name: 'read_file', arguments: { path: '/home/user/n' } });
assert.equal(answer.structuredContent.content, '42\n', JSON.stringify(answer));
await client.close();
console.log(`bundle ${manifest.name} ${manifest.version}: ${names.length} tools, state kept across calls`);
