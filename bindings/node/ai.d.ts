// Types of `e2b-tools/ai` (ai.js): the tools for the Vercel AI SDK.

import type { Tool } from 'ai';
import type { Config, E2BTools, LoadOptions } from './index.js';

/**
 * One AI SDK tool per enabled tool of `e2b`, by name, for `generateText` /
 * `streamText`'s `tools`: the catalog's description and JSON Schema
 * (`jsonSchema()`), executed in `e2b`'s sandbox. Each resolves to e2b-adk's
 * result dict; a failure (including an argument the schema does not name)
 * is `success: false`, never a thrown error.
 */
export function aiTools(e2b: E2BTools): Promise<Record<string, Tool>>;

/** Options of {@link createE2BTools}: loadE2BTools's, and a config. */
export interface CreateOptions extends LoadOptions {
  /** Given to `configure` before the tools are listed. */
  config?: Config;
}

/** A new instance (one sandbox) and its AI SDK tools. */
export function createE2BTools(options?: CreateOptions): Promise<{
  /** The tools, for `generateText({ tools })`. */
  tools: Record<string, Tool>;
  /** The instance they share. */
  e2b: E2BTools;
  /** Kills the sandbox and ends the instance. */
  close(): Promise<boolean>;
}>;
