// The official TypeScript MCP SDK against `e2b-tools mcp --http`.
// Usage: node client.mjs MCP_URL TOKEN
// Prints OK on success; throws (non-zero exit) otherwise.
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, token] = process.argv.slice(2);

async function connect(headers) {
  const client = new Client({ name: "e2b-tools-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers },
  });
  await client.connect(transport);
  return { client, transport };
}

// Without the token the server refuses to talk.
await assert.rejects(connect({}), /401|Unauthorized|bearer/i);

const { client, transport } = await connect({ Authorization: `Bearer ${token}` });
assert.match(client.getInstructions() ?? "", /E2B cloud sandbox/);
const { tools } = await client.listTools();
const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
assert.deepEqual(Object.keys(byName).sort(), [
  "list_files",
  "read_file",
  "run_code",
  "run_command",
  "start_background_command",
  "write_file",
]);
for (const tool of tools) {
  assert.equal(tool.outputSchema?.type, "object", tool.name);
  assert.ok(tool.title, tool.name);
}
assert.equal(byName.read_file.annotations.readOnlyHint, true);
assert.equal(byName.run_command.annotations.destructiveHint, true);

// The SDK checks structuredContent against each tool's outputSchema.
const first = await client.callTool({ name: "run_code", arguments: { code: "x = 41" } });
assert.equal(first.isError, false);
const second = await client.callTool({ name: "run_code", arguments: { code: "x + 1" } });
assert.equal(second.structuredContent.text, "42", JSON.stringify(second));
assert.deepEqual(JSON.parse(second.content[0].text), second.structuredContent);
const written = await client.callTool({
  name: "write_file",
  arguments: { path: "a.txt", content: "kept" },
});
assert.equal(written.structuredContent.success, true);
const read = await client.callTool({ name: "read_file", arguments: { path: "a.txt" } });
assert.equal(read.structuredContent.content, "kept");
const missing = await client.callTool({ name: "read_file", arguments: { path: "/nope" } });
assert.equal(missing.isError, true);
assert.equal(missing.structuredContent.success, false);
const command = await client.callTool({ name: "run_command", arguments: { command: "exit 3" } });
assert.equal(command.structuredContent.exit_code, 3);

await transport.terminateSession();
await client.close();
console.log("OK");
