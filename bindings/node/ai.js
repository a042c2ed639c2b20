// The tools for the Vercel AI SDK (`ai`, a peer dependency): a `tools`
// object for generateText / streamText, each tool built with the SDK's
// `tool()` and `jsonSchema()` from the component's catalog, all sharing
// one instance (one sandbox). Types: ai.d.ts.

import { jsonSchema, tool } from 'ai';
import { E2BTools, loadE2BTools } from './index.js';

/** The AI SDK tools of an instance's enabled tools, by name. */
export async function aiTools(e2b) {
  if (!(e2b instanceof E2BTools)) {
    throw new TypeError('aiTools takes an E2BTools instance (loadE2BTools())');
  }
  const tools = {};
  for (const spec of await e2b.listTools()) {
    const known = new Set(Object.keys(spec.parameters.properties ?? {}));
    tools[spec.name] = tool({
      description: spec.description,
      inputSchema: jsonSchema(spec.parameters),
      // e2b-adk's result dict; a failure is `success: false`, which the
      // model reads, never a thrown error.
      execute: async (input) => {
        const unknown = Object.keys(input ?? {}).filter((key) => !known.has(key));
        if (unknown.length) {
          // The component ignores keys it does not know, as e2b-adk does;
          // the model should hear that its argument went nowhere.
          return {
            success: false,
            error: `Unknown argument(s) for ${spec.name}: ${unknown.sort().join(', ')} (it takes ${[...known].sort().join(', ')})`,
            partial_output: '',
          };
        }
        return e2b.callTool(spec.name, input ?? {});
      },
    });
  }
  return tools;
}

/**
 * A new instance and its AI SDK tools: `{tools, e2b, close}`. `options`
 * are loadE2BTools's; `config`, when given, goes to `configure` first.
 */
export async function createE2BTools({ config, ...options } = {}) {
  const e2b = await loadE2BTools(options);
  try {
    if (config) await e2b.configure(config);
    return { tools: await aiTools(e2b), e2b, close: () => e2b.close() };
  } catch (err) {
    await e2b.close();
    throw err;
  }
}
