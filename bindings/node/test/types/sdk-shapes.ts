// Type-level test (`tsc --noEmit`, run by ../../run-tests): the tool lists
// fit the OpenAI and Anthropic SDKs' own types, and the wrapper's public
// types hold together. Nothing here runs.

import type Anthropic from '@anthropic-ai/sdk';
import type OpenAI from 'openai';
import {
  loadE2BTools,
  OutboundPolicy,
  PolicyError,
  ToolError,
  type AnthropicTool,
  type E2BTools,
  type ErrorKind,
  type OpenAIChatTool,
  type OpenAIResponsesTool,
  type ToolResult,
} from 'e2b-tools';

export async function shapes(e2b: E2BTools): Promise<void> {
  const chat: OpenAI.Chat.Completions.ChatCompletionTool[] = await e2b.openaiChatTools();
  const responses: OpenAI.Responses.FunctionTool[] = await e2b.openaiResponsesTools();
  const anthropic: Anthropic.Messages.Tool[] = await e2b.anthropicTools();

  // As the request parameters take them.
  const chatParams: OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming = {
    model: 'gpt-5',
    messages: [{ role: 'user', content: 'hi' }],
    tools: chat,
  };
  const responsesParams: OpenAI.Responses.ResponseCreateParamsNonStreaming = {
    model: 'gpt-5',
    input: 'hi',
    tools: responses,
  };
  const messageParams: Anthropic.Messages.MessageCreateParamsNonStreaming = {
    model: 'claude-sonnet-4-5',
    max_tokens: 1024,
    messages: [{ role: 'user', content: 'hi' }],
    tools: anthropic,
  };
  void [chatParams, responsesParams, messageParams];
}

export async function dispatch(
  e2b: E2BTools,
  call: OpenAI.Chat.Completions.ChatCompletionMessageFunctionToolCall,
): Promise<string> {
  const result: ToolResult = await e2b.callTool(call.function.name, call.function.arguments);
  if (!result.success) {
    const error: string = result.error;
    const partial: string = result.partial_output;
    void [error, partial];
  }
  return JSON.stringify(result);
}

export async function typed(): Promise<void> {
  const e2b = await loadE2BTools({ env: { E2B_API_KEY: 'e2b_key', HOME: '/root' } });
  await e2b.configure({ timeoutSeconds: 600, tools: ['all'], envs: { A: 'b' }, onTimeout: 'kill' });
  const code = await e2b.runCode({ code: 'print(1)', language: 'python' });
  const text: string = code.stdout + code.text + code.error;
  const command = await e2b.runCommand({ command: 'ls', cwd: '/tmp' });
  const exit: number = command.exitCode;
  await e2b.writeFile('a.txt', 'x');
  const content: string = await e2b.readFile('a.txt');
  const names: string[] = (await e2b.listFiles()).map((entry) => `${entry.name}:${entry.type}`);
  const started = await e2b.startBackgroundCommand({ command: 'sleep 9', port: 8000 });
  const output = await e2b.getBackgroundOutput(started.pid, { stdout: 0n });
  const next: number = output.nextSince.stdout;
  const stopped = await e2b.stopBackgroundCommand(started.pid, 'SIGINT');
  const id: string | undefined = await e2b.sandboxId();
  const killed: boolean = await e2b.shutdown();
  const closed: boolean = await e2b.close();
  const prompt: string = await e2b.instructions();
  void [text, exit, content, names, next, stopped.signal, id, killed, closed, prompt];

  try {
    await e2b.readFile('missing');
  } catch (err) {
    if (err instanceof ToolError) {
      const kind: ErrorKind = err.kind;
      const partial: string = err.partialOutput;
      void [kind, partial, err.path, err.command];
    }
  }

  const fixed = await loadE2BTools({
    policy: OutboundPolicy.forEndpoints({ apiUrl: 'http://127.0.0.1:3000', domain: 'e2b.app' }),
  });
  const allowed: boolean = fixed.policy.allows(true, 'api.e2b.app');
  const listed: string = fixed.policy.toString();
  void [allowed, listed];
  try {
    await fixed.configure({ apiUrl: 'ftp://x' });
  } catch (err) {
    if (err instanceof PolicyError) void [err.setting, err.value];
  }
  // @ts-expect-error: a policy is built by OutboundPolicy.forEndpoints.
  await loadE2BTools({ policy: 'https://api.e2b.app' });
  // @ts-expect-error: the constructor is private.
  void new OutboundPolicy();

  // @ts-expect-error: `code` is required.
  await e2b.runCode({ language: 'python' });
  // @ts-expect-error: not an option (the SDK's `timeout` is `timeoutSeconds` here).
  await e2b.configure({ timeout: 5 });
  // @ts-expect-error: not a signal.
  await e2b.stopBackgroundCommand(1, 'sigfoo');
  await e2b.configure({ sandboxId: 'sbx', killOnExit: true });
  // @ts-expect-error: a boolean.
  await e2b.configure({ killOnExit: 'yes' });
}

// Each shape keeps its literal `type`, so a mixed list still narrows.
export const literal: [
  OpenAIChatTool['type'],
  OpenAIResponsesTool['type'],
  AnthropicTool['input_schema']['type'],
] = ['function', 'function', 'object'];
