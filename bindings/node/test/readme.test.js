// The READMEs' Node snippets, exactly as written: each code block tagged
// `js` (the main README's and this package's) runs as an ES module in this
// package's directory, with nothing naming an E2B server (so on the local
// server the package starts itself). The agent snippets talk to a scripted
// model (bindings/testing/model_double.py) through the official SDKs' own
// base-URL variables; each answer it gave must be in the snippet's output,
// which proves the tool call it asked for ran in a sandbox. run-tests runs
// this file on Node 20 and again on Node 22.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { basename, dirname, delimiter } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, it } from 'node:test';
import { script } from './server.js';

/** The READMEs, separated by the path delimiter (run-tests sets it). */
const READMES = (process.env.E2B_TOOLS_READMES ?? '').split(delimiter).filter(Boolean);
/** This environment without any E2B_*, as on a fresh machine; the CLI
 * only where the platform package (its own server) is not installed. */
const bare = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('E2B_')));
if (!process.env.E2B_TOOLS_NPM_PLATFORM_TARBALL) bare.E2B_TOOLS_CLI = process.env.E2B_TOOLS_CLI;

/** The Markdown's fenced code blocks tagged `lang`, indented ones (in a
 * list item) dedented. */
export function codeBlocks(markdown, lang) {
  return [...markdown.matchAll(/^( *)```(\S*)\n([\s\S]*?)^\1```$/gm)]
    .filter((m) => m[2] === lang)
    .map((m) => m[3].replace(new RegExp(`^${m[1]}`, 'gm'), ''));
}

const blocks = READMES.flatMap((path) =>
  codeBlocks(readFileSync(path, 'utf8'), 'js').map((block, i) => ({
    name: `${basename(dirname(path))} block ${i + 1}`,
    block,
  })),
);

describe(`the READMEs' js snippets on Node ${process.versions.node}`, { timeout: 120_000 }, () => {
  let double;
  let base;
  before(async () => {
    assert.ok(process.env.E2B_TOOLS_MODEL_DOUBLE, 'E2B_TOOLS_MODEL_DOUBLE is not set');
    double = spawn('python3', [process.env.E2B_TOOLS_MODEL_DOUBLE], { stdio: ['ignore', 'pipe', 'inherit'] });
    const { value: line } = await createInterface({ input: double.stdout })[Symbol.asyncIterator]().next();
    assert.match(line ?? '', /^port \d+$/, `the model double said ${line}`);
    base = `http://127.0.0.1:${line.split(' ')[1]}`;
  });
  after(() => double?.kill());
  const answersGiven = async () => (await fetch(`${base}/log`)).json();

  it('are there to run (E2B_TOOLS_READMES names the READMEs)', () => {
    assert.ok(READMES.length, 'E2B_TOOLS_READMES is not set');
    for (const path of READMES) {
      assert.ok(codeBlocks(readFileSync(path, 'utf8'), 'js').length, `no js block in ${path}`);
    }
  });
  for (const { name, block } of blocks) {
    it(`${name} runs as written`, async () => {
      await answersGiven();
      const model = {
        OPENAI_BASE_URL: `${base}/v1`,
        OPENAI_API_KEY: 'double',
        ANTHROPIC_BASE_URL: base,
        ANTHROPIC_API_KEY: 'double',
      };
      const done = await script(block, { baseEnv: bare, env: model }).exited;
      assert.equal(done.code, 0, `${block}\n--- stdout\n${done.stdout}\n--- stderr\n${done.stderr}`);
      const answers = await answersGiven();
      if (/gpt-5|claude|gemini/.test(block)) {
        assert.ok(answers.length, `the snippet names a model but the model answered nothing\n${done.stderr}`);
      }
      for (const answer of answers) {
        assert.ok(answer.startsWith('The answer is '), `${answer}\n--- stderr\n${done.stderr}`);
        assert.ok(done.stdout.includes(answer), `the model answered ${answer}\n--- stdout\n${done.stdout}`);
      }
    });
  }
});
