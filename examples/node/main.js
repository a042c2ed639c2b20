// A tour of the E2B tools component from Node: configure it (with all eight
// tools), hand its catalog to a model as function tools, run the tools the
// way a model's tool calls would, make one typed call, stop a background
// process with stop_background_command, and shut the sandbox down.
//
// Needs E2B_API_KEY (real E2B) or the three lines printed by
// `e2b-tools local serve` (E2B_API_URL, E2B_SANDBOX_URL, E2B_API_KEY).

import { e2bEnv, loadE2BTools } from './e2b-tools.js';

const env = e2bEnv();
if (!env.E2B_API_KEY) {
  console.error(
    'Set E2B_API_KEY (real E2B), or start `e2b-tools local serve` and export the variables it prints.',
  );
  process.exit(2);
}

const e2b = await loadE2BTools({ env });
// tools: ['all'] adds get_background_output and stop_background_command to
// e2b-adk's six (left out, the catalog has the six).
e2b.configure({
  timeoutSeconds: 120,
  metadata: [{ key: 'example', value: 'node' }],
  tools: ['all'],
});

// 1. What a chat-completions request would carry as `tools`.
const functionTools = e2b.functionTools();
console.log(`## ${functionTools.length} function tools for the model`);
for (const tool of functionTools) {
  const required = tool.function.parameters.required ?? [];
  console.log(`- ${tool.function.name}(${required.join(', ')})`);
}
console.log(JSON.stringify(functionTools[0], null, 2));

// 2. Tool calls as a model would make them: a name and JSON arguments.
const modelToolCalls = [
  { name: 'run_code', arguments: '{"code": "x = 41"}' },
  { name: 'run_code', arguments: '{"code": "x + 1"}' },
  { name: 'run_command', arguments: '{"command": "echo hello from $(uname -s)"}' },
  { name: 'write_file', arguments: '{"path": "notes/todo.txt", "content": "buy milk\\n"}' },
  { name: 'read_file', arguments: '{"path": "notes/todo.txt"}' },
  { name: 'list_files', arguments: '{"path": "notes"}' },
  // Under jco this call returns only when the process ends (see README), so
  // the example starts a short one.
  { name: 'start_background_command', arguments: '{"command": "sleep 2; echo finished"}' },
  { name: 'read_file', arguments: '{"path": "notes/missing.txt"}' },
];
console.log('\n## Tool calls through catalog.call-tool');
try {
  for (const call of modelToolCalls) {
    const result = e2b.callTool(call.name, call.arguments);
    // This object is what goes back to the model as the tool message.
    console.log(`${call.name} ${call.arguments}\n  -> ${JSON.stringify(result)}`);
  }

  // 3. The same component, typed: no JSON, errors as exceptions.
  console.log('\n## A typed call');
  const output = e2b.runCommand({ command: 'ls -1 notes', cwd: '/home/user' });
  console.log(`runCommand -> exit ${output.exitCode}, stdout ${JSON.stringify(output.stdout)}`);

  // 4. Stop a background process (and whatever it started): SIGTERM, then
  // SIGKILL if it is still there after 5 seconds.
  console.log('\n## stop_background_command');
  const started = e2b.callTool('start_background_command', { command: 'sleep 300' });
  console.log(`start_background_command sleep 300 -> pid ${started.pid}`);
  const stopped = e2b.callTool('stop_background_command', { pid: started.pid });
  console.log(`stop_background_command -> ${JSON.stringify(stopped)}`);
  const ps = e2b.runCommand({ command: `ps -o pid=,args= -p ${started.pid}` });
  console.log(`ps -p ${started.pid} -> exit ${ps.exitCode} (${ps.stdout ? 'still there' : 'gone'})`);
  console.log(`sandbox: ${e2b.sandboxId()}`);
} finally {
  console.log(`\nshutdown -> ${e2b.shutdown()}`);
}
