// e2b-tools/ai with the real AI SDK: its mock language model drives
// generateText through two tool calls that share one sandbox; the tools'
// schemas; an unknown argument; the sandbox killed by close.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { generateText, stepCountIs } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { aiTools, createE2BTools } from 'e2b-tools/ai';
import { liveSandboxes } from './server.js';


const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};

/** A model answering each step with the next of `steps`. */
function scripted(steps) {
  return new MockLanguageModelV4({
    doGenerate: steps.map((step) => ({
      content: [step],
      finishReason: { unified: step.type === 'tool-call' ? 'tool-calls' : 'stop', raw: undefined },
      usage,
      warnings: [],
    })),
  });
}

const call = (id, toolName, input) => ({
  type: 'tool-call',
  toolCallId: id,
  toolName,
  input: JSON.stringify(input),
});

describe('e2b-tools/ai', { timeout: 90_000 }, () => {
  it('drives generateText through two tool calls in one sandbox', async () => {
    const before = await liveSandboxes();
    const { tools, e2b, close } = await createE2BTools({ config: { timeoutSeconds: 120 } });
    assert.deepEqual(Object.keys(tools), (await e2b.listTools()).map((t) => t.name));
    const model = scripted([
      call('c1', 'write_file', { path: 'notes.txt', content: 'shared\n' }),
      call('c2', 'run_code', { code: "print(open('notes.txt').read().strip(), 6 * 7)" }),
      { type: 'text', text: 'done' },
    ]);
    const result = await generateText({
      model,
      tools,
      prompt: 'Write a note, then read it from code.',
      stopWhen: stepCountIs(5),
    });
    assert.equal(result.text, 'done');
    const outputs = result.steps.flatMap((step) => step.toolResults).map((r) => r.output);
    assert.deepEqual(outputs[0], { path: 'notes.txt', success: true });
    assert.equal(outputs[1].stdout, 'shared 42\n');
    // The model was offered the catalog's JSON Schemas.
    const offered = model.doGenerateCalls[0].tools.find((t) => t.name === 'run_code');
    assert.deepEqual(offered.inputSchema, (await e2b.listTools())[0].parameters);
    assert.equal((await liveSandboxes()).filter((s) => !before.includes(s)).length, 1);
    assert.equal(await close(), true);
    assert.deepEqual((await liveSandboxes()).filter((s) => !before.includes(s)), []);
  });

  it('answers an unknown argument with a clear failure, and refuses a non-instance', async () => {
    const { tools, close } = await createE2BTools();
    const refused = await tools.read_file.execute({ path: 'x', bogus: 1 }, { toolCallId: 't', messages: [] });
    assert.equal(refused.success, false);
    assert.match(refused.error, /Unknown argument\(s\) for read_file: bogus/);
    await close();
    await assert.rejects(aiTools({}), TypeError);
  });
});
