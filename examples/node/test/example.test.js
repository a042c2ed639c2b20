// The Node example and the e2b-tools package it uses, against the server
// named by the E2B_* variables (`e2b-tools local serve`, started by
// examples/run-tests, which installs the packed tarball into a fresh
// directory and runs these tests from a copy of this one).
//
// Optional: E2B_TOOLS_EXPECTED names the output of `e2b-tools batch` for
// ../parity-calls.jsonl (E2B_TOOLS_PARITY_CALLS names the calls when this
// directory is not beside it); the parity tests then check that the
// example's answers carry the same results as the Rust host's, through both
// of its dispatchers.
//
// The package's own tests (bindings/node/test) cover its API and the
// component's behaviour through it; what is here are the example and the
// parity with the Rust host.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { before, describe, it } from 'node:test';
import { e2bEnv, loadE2BTools } from 'e2b-tools';
import { answerAnthropic, answerOpenAI } from '../main.js';

if (!e2bEnv().E2B_API_KEY) {
  throw new Error('set E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY (see examples/run-tests)');
}

const LIMIT = { timeout: 120_000 };

/** Result fields that legitimately differ between two sandboxes. */
function normalise(value) {
  if (Array.isArray(value)) return value.map(normalise);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([key, field]) => [
        key,
        key === 'pid' && typeof field === 'number' ? '<pid>' : normalise(field),
      ]),
    );
  }
  return value;
}

/** Runs `use(e2b)` with a fresh instance (a fresh sandbox), closed after. */
async function withInstance(use) {
  const e2b = await loadE2BTools();
  try {
    return await use(e2b);
  } finally {
    await e2b.close();
  }
}

describe('the example', LIMIT, () => {
  it('main.js runs the tour and closes the sandbox', async () => {
    const main = fileURLToPath(new URL('../main.js', import.meta.url));
    const names = await withInstance(async (e2b) => (await e2b.anthropicTools()).map((t) => t.name));
    const { stdout } = await promisify(execFile)(process.execPath, [main], { timeout: 120_000 });
    const lines = stdout.split('\n');
    const line = (prefix) => lines.find((l) => l.startsWith(prefix));
    assert.equal(line('tools: '), `tools: ${names.join(', ')}`);
    assert.match(line('{"name":'), /^\{"name":"run_code","description":"/);
    assert.equal(line('runCode x + 1 -> '), 'runCode x + 1 -> 42');
    assert.equal(line('readFile -> '), 'readFile -> "buy milk\\n"');
    assert.equal(line('listFiles -> '), 'listFiles -> ["todo.txt"]');
    assert.match(line('readFile missing -> '), /^readFile missing -> ToolError not-found: Failed to read file: /);
    const messages = lines
      .filter((l) => l.startsWith('openai tool message -> '))
      .map((l) => JSON.parse(l.slice('openai tool message -> '.length)));
    assert.deepEqual(
      messages.map((m) => [m.role, m.tool_call_id, JSON.parse(m.content).success]),
      [
        ['tool', 'call_1', true],
        ['tool', 'call_2', false],
      ],
    );
    assert.equal(JSON.parse(messages[0].content).text, '82');
    const block = JSON.parse(line('anthropic tool_result -> ').slice('anthropic tool_result -> '.length));
    assert.deepEqual([block.type, block.tool_use_id, block.is_error], ['tool_result', 'toolu_1', false]);
    assert.equal(JSON.parse(block.content).stdout, 'todo.txt\n');
    assert.equal(line('close -> '), 'close -> true');
  });

  it("answers in each API's shape", async () => {
    await withInstance(async (e2b) => {
      const [message] = await answerOpenAI(e2b, [
        { id: 'c1', type: 'function', function: { name: 'no_such_tool', arguments: '{}' } },
      ]);
      assert.deepEqual(Object.keys(message), ['role', 'tool_call_id', 'content']);
      assert.equal(JSON.parse(message.content).success, false);
      const blocks = await answerAnthropic(e2b, [
        { type: 'text', text: 'thinking' },
        { type: 'tool_use', id: 't1', name: 'run_code', input: { code: '6 * 7' } },
        { type: 'tool_use', id: 't2', name: 'read_file', input: { path: 'nope' } },
      ]);
      assert.deepEqual(
        blocks.map((b) => [b.type, b.tool_use_id, b.is_error]),
        [
          ['tool_result', 't1', false],
          ['tool_result', 't2', true],
        ],
      );
      assert.equal(JSON.parse(blocks[0].content).text, '42');
    });
  });
});

describe('parity with the Rust host', { ...LIMIT, skip: !process.env.E2B_TOOLS_EXPECTED }, () => {
  const lines = (file) =>
    readFileSync(file, 'utf8')
      .split('\n')
      .filter((line) => line.trim())
      .map((line) => JSON.parse(line));
  let calls;
  let expected;
  before(() => {
    calls = lines(
      process.env.E2B_TOOLS_PARITY_CALLS ||
        fileURLToPath(new URL('../../parity-calls.jsonl', import.meta.url)),
    );
    expected = lines(process.env.E2B_TOOLS_EXPECTED);
    assert.equal(expected.length, calls.length, 'one batch result per call');
  });
  const check = (results) => {
    assert.equal(results.length, calls.length);
    results.forEach((result, i) => {
      assert.deepEqual(
        normalise(result),
        normalise(expected[i]),
        `call ${i + 1}: ${JSON.stringify(calls[i])}`,
      );
    });
  };

  it('the OpenAI tool messages carry the same results as `e2b-tools batch`', async () => {
    const messages = await withInstance(async (e2b) => {
      const out = [];
      for (const [i, call] of calls.entries()) {
        const toolCall = {
          id: `call_${i}`,
          type: 'function',
          function: { name: call.tool, arguments: JSON.stringify(call.args ?? {}) },
        };
        out.push(...(await answerOpenAI(e2b, [toolCall])));
      }
      return out;
    });
    assert.deepEqual(
      messages.map((m) => m.tool_call_id),
      calls.map((_, i) => `call_${i}`),
    );
    check(messages.map((m) => JSON.parse(m.content)));
  });

  it('the Anthropic tool results carry the same results as `e2b-tools batch`', async () => {
    const blocks = await withInstance(async (e2b) => {
      const out = [];
      for (const [i, call] of calls.entries()) {
        const toolUse = { type: 'tool_use', id: `toolu_${i}`, name: call.tool, input: call.args ?? {} };
        out.push(...(await answerAnthropic(e2b, [toolUse])));
      }
      return out;
    });
    const results = blocks.map((block) => JSON.parse(block.content));
    assert.deepEqual(
      blocks.map((block) => block.is_error),
      results.map((result) => !result.success),
    );
    check(results);
  });
});
