// E2B sandbox tools for an agent, from Node, with the e2b-tools package.
//
//   npm install e2b-tools-0.1.0.tgz   # bindings/node/build or scripts/dist makes it
//   export E2B_API_KEY=e2b_...        # or the variables `e2b-tools local serve` prints
//   node main.js
//
// A session (one instance, one sandbox), typed calls (runCode keeping state,
// a file round trip), the tool lists for OpenAI and Anthropic, and tool calls
// answered as they come from a model. `answerOpenAI` and `answerAnthropic`
// are the part to copy into an agent loop.

import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ToolError, e2bEnv, loadE2BTools } from 'e2b-tools';

/**
 * The `role: 'tool'` messages answering a chat completion's
 * `message.tool_calls`. A failing tool is an answer too (`success: false`),
 * never a rejection.
 */
export async function answerOpenAI(e2b, toolCalls) {
  const messages = [];
  for (const call of toolCalls) {
    // The arguments arrive as JSON text; callTool takes it as is.
    const result = await e2b.callTool(call.function.name, call.function.arguments);
    messages.push({ role: 'tool', tool_call_id: call.id, content: JSON.stringify(result) });
  }
  return messages;
}

/**
 * The `tool_result` blocks answering the `tool_use` blocks of an Anthropic
 * message's `content`; send them back as the next user message.
 */
export async function answerAnthropic(e2b, content) {
  const results = [];
  for (const block of content) {
    if (block.type !== 'tool_use') continue;
    const result = await e2b.callTool(block.name, block.input);
    results.push({
      type: 'tool_result',
      tool_use_id: block.id,
      content: JSON.stringify(result),
      is_error: !result.success,
    });
  }
  return results;
}

async function main() {
  if (!e2bEnv().E2B_API_KEY) {
    console.error(
      'Set E2B_API_KEY (real E2B), or start `e2b-tools local serve` and export the variables it prints.',
    );
    return 2;
  }

  // One instance is one session: its sandbox is created by the first tool
  // call and killed by close(). The component runs on a worker thread of
  // its own, sees only the E2B_* variables, and may reach only the E2B
  // hosts they name.
  const e2b = await loadE2BTools();
  try {
    await e2b.configure({ timeoutSeconds: 120, metadata: { example: 'node' } });

    // What a model is given: a system prompt fragment and the tools.
    console.log(`instructions: ${(await e2b.instructions()).length} characters`);
    const openaiTools = await e2b.openaiChatTools(); // chat.completions.create({ tools })
    const anthropicTools = await e2b.anthropicTools(); // messages.create({ tools })
    console.log(`tools: ${openaiTools.map((tool) => tool.function.name).join(', ')}`);
    console.log(`${JSON.stringify(anthropicTools[0]).slice(0, 100)} ...`);

    // Typed calls: plain objects back, failures rejected as ToolError.
    await e2b.runCode({ code: 'x = 41' });
    console.log(`runCode x + 1 -> ${(await e2b.runCode({ code: 'x + 1' })).text}`);
    await e2b.writeFile('notes/todo.txt', 'buy milk\n');
    console.log(`readFile -> ${JSON.stringify(await e2b.readFile('notes/todo.txt'))}`);
    const entries = await e2b.listFiles('notes');
    console.log(`listFiles -> ${JSON.stringify(entries.map((entry) => entry.name))}`);
    try {
      await e2b.readFile('notes/missing.txt');
    } catch (err) {
      if (!(err instanceof ToolError)) throw err;
      console.log(`readFile missing -> ToolError ${err.kind}: ${err.message}`);
    }

    // Tool calls as a model sends them, answered with the JSON it expects.
    const openaiCalls = [
      { id: 'call_1', type: 'function', function: { name: 'run_code', arguments: '{"code": "x * 2"}' } },
      { id: 'call_2', type: 'function', function: { name: 'read_file', arguments: '{"path": "nope"}' } },
    ];
    for (const message of await answerOpenAI(e2b, openaiCalls)) {
      console.log(`openai tool message -> ${JSON.stringify(message)}`);
    }
    const anthropicContent = [
      { type: 'text', text: 'Let me look.' },
      { type: 'tool_use', id: 'toolu_1', name: 'run_command', input: { command: 'ls notes' } },
    ];
    for (const block of await answerAnthropic(e2b, anthropicContent)) {
      console.log(`anthropic tool_result -> ${JSON.stringify(block)}`);
    }
    console.log(`sandbox: ${await e2b.sandboxId()}`);
  } finally {
    // Kills the sandbox and ends the worker.
    console.log(`close -> ${await e2b.close()}`);
  }
  return 0;
}

// Run as a script (not imported, as the tests import it).
if (process.argv[1] && realpathSync(process.argv[1]) === realpathSync(fileURLToPath(import.meta.url))) {
  process.exitCode = await main();
}
