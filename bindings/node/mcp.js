// e2b-tools-mcp: the component's tools as an MCP server on stdio, for MCP
// clients that start servers with npx (`npx -y e2b-tools`). One connection
// is one component instance and one sandbox, made by the first tool call and
// killed when the client goes away (end of stdin, SIGTERM, SIGINT). Needs
// E2B_API_KEY: this package runs sandboxes on E2B only (the local backend is
// the Rust CLI's).
import { readFileSync } from 'node:fs';

import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

import { loadE2BTools } from './index.js';

const { version } = JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8'));

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
  for (const signal of ['SIGTERM', 'SIGINT']) {
    process.once(signal, () => close().finally(() => process.exit(0)));
  }
  process.stdin.once('end', () => close());
  await server.connect(new StdioServerTransport());
  await closed;
}
