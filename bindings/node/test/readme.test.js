// The main README's Node snippets, exactly as written: each code block
// tagged `js` runs as an ES module in this package's directory, with
// nothing naming an E2B server (so on the local server the package starts
// itself). run-tests runs this file on Node 20 and again on Node 22.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { script } from './server.js';

const README = process.env.E2B_TOOLS_README;
/** This environment without any E2B_*, as on a fresh machine; the CLI
 * only where the platform package (its own server) is not installed. */
const bare = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('E2B_')));
if (!process.env.E2B_TOOLS_NPM_PLATFORM_TARBALL) bare.E2B_TOOLS_CLI = process.env.E2B_TOOLS_CLI;

/** The README's code blocks tagged `lang`. */
export function codeBlocks(markdown, lang) {
  return [...markdown.matchAll(/^```(\S*)\n([\s\S]*?)^```$/gm)].filter((m) => m[1] === lang).map((m) => m[2]);
}

describe(`the README's js snippets on Node ${process.versions.node}`, { timeout: 120_000 }, () => {
  it('are there to run (E2B_TOOLS_README names the README)', () => {
    assert.ok(README, 'E2B_TOOLS_README is not set');
    assert.ok(codeBlocks(readFileSync(README, 'utf8'), 'js').length > 0, `no js block in ${README}`);
  });
  const blocks = README ? codeBlocks(readFileSync(README, 'utf8'), 'js') : [];
  blocks.forEach((block, i) => {
    it(`block ${i + 1} runs as written`, async () => {
      const done = await script(block, { baseEnv: bare }).exited;
      assert.equal(done.code, 0, `${block}\n--- stderr\n${done.stderr}`);
    });
  });
});
