#!/usr/bin/env node
// The package's command: `npx -y e2b-tools` serves the tools over MCP on stdio.
import { serve } from '../mcp.js';

serve().catch((error) => {
  process.stderr.write(`e2b-tools-mcp: ${error.message}\n`);
  process.exit(1);
});
