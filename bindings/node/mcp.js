// e2b-tools-mcp: the component's tools as an MCP server on stdio, for MCP
// clients that start servers with npx (`npx -y e2b-tools`). One connection
// is one component instance and one sandbox, made by the first tool call and
// killed when the client goes away (end of stdin, SIGTERM, SIGINT), also in
// the middle of a call: the instance's close waits for a running call, so
// after CLOSE_GRACE_MS the process exits and the package's exit cleanup
// kills the sandbox by its id (lifecycle.js). Needs
// E2B_API_KEY: this package runs sandboxes on E2B only (the local backend is
// the Rust CLI's).
import { readFileSync } from 'node:fs';

import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

import { loadE2BTools } from './index.js';

const { version } = JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8'));

/** How long the client's leaving waits for the instance's close before the process exits. */
const CLOSE_GRACE_MS = 1_000;

/** The MCP tool list entry of a component tool spec. */
export function mcpTool(spec) {
  return {
    name: spec.name,
    title: spec.title,
    description: spec.description,
    inputSchema: spec.parameters,
    annotations: {
      title: spec.title,
      readOnlyHint: spec.hints.readOnly,
      destructiveHint: spec.hints.destructive,
      idempotentHint: spec.hints.idempotent,
      openWorldHint: spec.hints.openWorld,
    },
  };
}

/** The MCP answer of a tool result dict: its JSON, an error when it failed. */
export function mcpResult(result) {
  return {
    content: [{ type: 'text', text: JSON.stringify(result) }],
    structuredContent: result,
    isError: result.success !== true,
  };
}

/** Serves MCP on stdio until the client leaves; resolves when all is closed. */
export async function serve({ env = process.env } = {}) {
  if (!env.E2B_API_KEY || !env.E2B_API_KEY.trim()) {
    throw new Error(
      'e2b-tools-mcp needs E2B_API_KEY (an E2B key from e2b.dev); ' +
        'for sandboxes on this machine without a key, use the e2b-tools CLI: e2b-tools mcp',
    );
  }
  const tools = await loadE2BTools({ env });
  const server = new Server(
    { name: 'e2b-tools', version },
    { capabilities: { tools: {} }, instructions: await tools.instructions() },
  );
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: (await tools.listTools()).map(mcpTool),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request) =>
    mcpResult(await tools.callTool(request.params.name, request.params.arguments ?? {})),
  );
  let closing;
  const close = () => (closing ??= tools.close().finally(() => server.close()));
  const closed = new Promise((resolve) => {
    server.onclose = () => close().then(resolve, resolve);
  });
  // A close stuck behind a running call: exit, and the exit cleanup kills
  // the sandbox without the busy instance.
  const leave = () => {
    setTimeout(() => process.exit(0), CLOSE_GRACE_MS).unref();
    return close();
  };
  for (const signal of ['SIGTERM', 'SIGINT']) {
    process.once(signal, () => leave().finally(() => process.exit(0)));
  }
  process.stdin.once('end', leave);
  await server.connect(new StdioServerTransport());
  await closed;
}
