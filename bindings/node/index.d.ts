// Types of the e2b-tools package (index.js). The component's contract is
// the WIT package e2b:tools@0.1.0; these are its types as this wrapper
// takes and returns them.

/**
 * Keeps the `E2B_*` variables of `env` (default: `process.env`). Only these
 * reach the component; the rest of the environment stays outside.
 */
export function e2bEnv(env?: Record<string, string | undefined>): Record<string, string>;

/** E2B's public domain, used when neither the config nor `E2B_DOMAIN` names one: `e2b.app`. */
export const DEFAULT_DOMAIN: string;

/**
 * Nothing names an E2B server (no `E2B_API_KEY`, no `E2B_API_URL`, no
 * endpoint given to `configure`) and no e2b-tools CLI was found to run the
 * local one (`$E2B_TOOLS_CLI`, or `e2b-tools` on `PATH`): its message says
 * what to set.
 */
export class LocalServerError extends Error {
  /** Always `LocalServerError`. */
  name: 'LocalServerError';
}

/** A URL given for the allow-list is not an absolute http(s) URL. */
export class PolicyError extends Error {
  constructor(setting: string, value: string);
  /** Always `PolicyError`. */
  name: 'PolicyError';
  /** Which setting held the URL: `E2B_API_URL` or `E2B_SANDBOX_URL`. */
  setting: string;
  /** The rejected value. */
  value: string;
}

/** The endpoints {@link OutboundPolicy.forEndpoints} allows. */
export interface Endpoints {
  /** The control-plane URL; its scheme, host and port are allowed. Default: `https://api.<domain>`. */
  apiUrl?: string;
  /** The one URL of all sandbox traffic; its scheme, host and port are allowed. Default: any HTTPS host under `<domain>`, port 443. */
  sandboxUrl?: string;
  /** The E2B domain. Default: `e2b.app`. */
  domain?: string;
}

/**
 * The outbound allow-list: the hosts an instance may send requests to. Every
 * request of the component is checked against it before a connection is
 * opened; a refused one fails the tool with kind `network`
 * (`HttpRequestDenied`). The same rules as the Rust host's and the Python
 * package's `OutboundPolicy`.
 */
export class OutboundPolicy {
  private constructor();

  /**
   * The allow-list of these endpoints: `apiUrl` and `sandboxUrl` if given,
   * otherwise `https://api.<domain>` and the HTTPS hosts under `<domain>`
   * (default `e2b.app`). Throws a {@link PolicyError} for a URL that is not
   * absolute http(s).
   */
  static forEndpoints(endpoints?: Endpoints): OutboundPolicy;

  /**
   * Whether a request to `authority` (`host[:port]`, as a `wasi:http`
   * request carries it) over HTTPS or plain HTTP may leave the host.
   */
  allows(https: boolean, authority: string): boolean;

  /** The allowed endpoints, e.g. `https://api.e2b.app:443, https://*.e2b.app:443`. */
  toString(): string;
}

/** Options of {@link loadE2BTools}. Unknown fields are refused. */
export interface LoadOptions {
  /**
   * The environment to take the component's variables from; only its
   * `E2B_*` entries are used (`E2B_API_KEY`, `E2B_DOMAIN`, `E2B_API_URL`,
   * `E2B_SANDBOX_URL`, `E2B_TOOLS_ENABLED`). Default: `process.env`.
   */
  env?: Record<string, string | undefined>;
  /**
   * The hosts the instance may reach, fixed for its lifetime: `configure`
   * does not change it. Default: the allow-list of the instance's effective
   * endpoints, each of `apiUrl`, `sandboxUrl` and `domain` taken from the
   * last {@link E2BTools.configure} config when set there, else from `env`'s
   * `E2B_API_URL`, `E2B_SANDBOX_URL` and `E2B_DOMAIN` (so with neither,
   * `https://api.e2b.app` and `https://*.e2b.app`), recomputed by each
   * `configure`.
   */
  policy?: OutboundPolicy;
}

/**
 * Loads a new instance of the component on a worker thread of its own (the
 * compiled component is shared by all instances of the process). The
 * instance creates its sandbox on its first tool call. Without a `policy`,
 * rejects with a {@link PolicyError} when `E2B_API_URL` or `E2B_SANDBOX_URL`
 * is not an absolute http(s) URL.
 */
export function loadE2BTools(options?: LoadOptions): Promise<E2BTools>;

/** Why a typed call failed: a class a host can branch on. */
export type ErrorKind =
  /** The arguments were missing, of the wrong type or out of range; nothing was sent. */
  | 'invalid-argument'
  /** The sandbox could not be created or reached. */
  | 'sandbox-unavailable'
  /** The sandbox has expired or was killed; `shutdown()`, then any tool starts a new one. */
  | 'sandbox-expired'
  /** The operation ran past its timeout; `partialOutput` holds what it printed. */
  | 'timeout'
  /** A file, directory, process or sandbox named in the call does not exist. */
  | 'not-found'
  /** The sandbox refused the operation. */
  | 'permission-denied'
  /** E2B rate-limited the request. */
  | 'rate-limited'
  /** The API key or the sandbox access token was missing or rejected. */
  | 'auth'
  /** A request could not be sent or answered, or the outbound allow-list refused it. */
  | 'network'
  /** The host cancelled the call. */
  | 'cancelled'
  /** Anything else, including an answer that breaks the protocol. */
  | 'internal';

/** The fields of a component `tool-error`. */
export interface ToolErrorFields {
  /** The class of failure. */
  kind: ErrorKind;
  /** A message for people, prefixed as e2b-adk prefixes it. */
  message: string;
  /** Output captured before the failure, truncated; empty when none. */
  partialOutput?: string;
  /** The path the call was about, if any. */
  path?: string;
  /** The command the call was about, if any. */
  command?: string;
}

/**
 * A failed typed call (`runCode`, `readFile`, `configure`, …). Secrets (the
 * API key, the sandbox's access token) never appear in it.
 */
export class ToolError extends Error {
  /** Builds one from a component `tool-error`. */
  constructor(error: ToolErrorFields);
  /** Always `ToolError`. */
  name: 'ToolError';
  /** The class of failure. */
  kind: ErrorKind;
  /** Output captured before the failure, truncated; empty when none. */
  partialOutput: string;
  /** The path the call was about, if any. */
  path?: string;
  /** The command the call was about, if any. */
  command?: string;
}

/** Outbound network rules of the sandbox, passed to E2B as given. */
export interface NetworkRules {
  /** CIDRs or domains the sandbox may reach even when denied below. */
  allowOut?: string[];
  /** CIDRs the sandbox may not reach (`0.0.0.0/0` denies all). */
  denyOut?: string[];
  /** Whether preview URLs are reachable without the traffic token. */
  allowPublicTraffic?: boolean;
  /** Host header sent to the sandbox's services (`${PORT}` is replaced by the port). */
  maskRequestHost?: string;
}

/** A volume mounted into the sandbox at creation. */
export interface VolumeMount {
  /** The volume's name. */
  name: string;
  /** Where it is mounted inside the sandbox. */
  path: string;
}

/**
 * Options of an instance (the WIT `config` record). Every field is
 * optional; an unset one falls back to the environment variable the E2B SDK
 * reads, then to E2B's default. Unknown fields are refused.
 */
export interface Config {
  /** E2B API key. Default: `E2B_API_KEY`. */
  apiKey?: string;
  /** The sandbox's template. Default: `code-interpreter-v1`. */
  template?: string;
  /** Metadata attached to the sandbox (visible when listing sandboxes). */
  metadata?: Record<string, string>;
  /** Environment variables of every process in the sandbox. */
  envs?: Record<string, string>;
  /** Sandbox timeout in seconds: it dies this long after the last activity. Default: 300. */
  timeoutSeconds?: number;
  /**
   * E2B domain. Default: `E2B_DOMAIN`, then `e2b.app`. Unless the instance
   * was loaded with an explicit `policy`, the outbound allow-list follows
   * `domain`, `apiUrl` and `sandboxUrl` (see {@link LoadOptions.policy}).
   */
  domain?: string;
  /** Control-plane URL. Default: `E2B_API_URL`, then `https://api.<domain>`. */
  apiUrl?: string;
  /** One URL for all sandbox traffic. Default: `E2B_SANDBOX_URL`, then E2B's sandbox hosts. */
  sandboxUrl?: string;
  /** Timeout of each HTTP request that is not an execution, in ms; 0 disables it. Default: 60000. */
  requestTimeoutMs?: number;
  /** Whether the sandbox may reach the internet. Default: E2B's (yes). */
  allowInternetAccess?: boolean;
  /** Outbound network rules of the sandbox. */
  network?: NetworkRules;
  /** What happens at the timeout. Default: E2B's (`kill`). */
  onTimeout?: 'kill' | 'pause';
  /** Resume a paused sandbox when it is used again (only with `onTimeout: 'pause'`). */
  autoResume?: boolean;
  /** Volumes to mount, passed through to E2B. */
  volumeMounts?: VolumeMount[];
  /** Bytes kept of each output field before the truncation marker. Default: 10000. */
  maxOutputBytes?: number;
  /** Return images, HTML and JSON produced by `runCode` as well as text. Default: false. */
  richResults?: boolean;
  /** How long `startBackgroundCommand` waits for its port, in ms. Default: 10000. */
  readinessTimeoutMs?: number;
  /**
   * Attach to this existing sandbox instead of creating one. It is not the
   * instance's own: `shutdown()` and `close()` kill it, but the end of the
   * process leaves it running unless `killOnExit`.
   */
  sandboxId?: string;
  /**
   * This package's option, not the component's: the end of the process (or
   * a signal) kills the instance's sandbox even when it is not its own: one
   * attached to (`sandboxId`), or one left to pause (`onTimeout: 'pause'`).
   * Default: false. Forks the instance made are its own either way (but
   * those made with `keep`).
   */
  killOnExit?: boolean;
  /**
   * The tools offered (listed, described, callable), by name; `default`
   * (e2b-adk's six) and `all` (adds the two background-process tools) stand
   * for sets. A single string is one name. Default: `E2B_TOOLS_ENABLED`
   * (comma-separated), then `default`.
   */
  tools?: string | string[];
}

/** What calling a tool does, as MCP's tool annotations say it. */
export interface ToolHints {
  /** It changes nothing in the sandbox. */
  readOnly: boolean;
  /** It may overwrite or delete (meaningful when not read-only). */
  destructive: boolean;
  /** Repeating it with the same arguments has no further effect. */
  idempotent: boolean;
  /** It may reach beyond the sandbox. */
  openWorld: boolean;
}

/** A JSON Schema of a tool's arguments: always an object schema. */
export interface JsonSchemaObject {
  /** Always `object`. */
  type: 'object';
  /** The arguments, by name. */
  properties?: Record<string, unknown>;
  /** The names of the required arguments. */
  required?: string[];
  /** Any other JSON Schema keyword. */
  [keyword: string]: unknown;
}

/** One enabled tool as the component describes it. */
export interface ToolSpec {
  /** The tool's name, e.g. `run_code`. */
  name: string;
  /** A short human title, e.g. `Run code`. */
  title: string;
  /** What it does, written for a model. */
  description: string;
  /** JSON Schema of its arguments object. */
  parameters: JsonSchemaObject;
  /** JSON Schema of the result `callTool` returns (success and failure shapes). */
  resultSchema: Record<string, unknown>;
  /** Behaviour hints. */
  hints: ToolHints;
}

/** A tool for OpenAI chat completions (`tools` of `chat.completions.create`). */
export interface OpenAIChatTool {
  /** Always `function`. */
  type: 'function';
  /** The function the model may call. */
  function: {
    /** The tool's name. */
    name: string;
    /** What it does, written for a model. */
    description: string;
    /** JSON Schema of its arguments. */
    parameters: JsonSchemaObject;
  };
}

/** A tool for the OpenAI Responses API (`tools` of `responses.create`). */
export interface OpenAIResponsesTool {
  /** Always `function`. */
  type: 'function';
  /** The tool's name. */
  name: string;
  /** What it does, written for a model. */
  description: string;
  /** JSON Schema of its arguments. */
  parameters: JsonSchemaObject;
  /** Always false: strict mode needs every argument required, and most are optional. */
  strict: boolean;
}

/** A tool for Anthropic's Messages API (`tools` of `messages.create`). */
export interface AnthropicTool {
  /** The tool's name. */
  name: string;
  /** What it does, written for a model. */
  description: string;
  /** JSON Schema of its arguments. */
  input_schema: JsonSchemaObject;
}

/** A successful `callTool`: e2b-adk's result dict, tool fields then `success: true`. */
export interface ToolSuccess {
  /** Always true. */
  success: true;
  /** The tool's fields (`stdout`, `content`, `entries`, `pid`, …). */
  [field: string]: unknown;
}

/** A failed `callTool`: e2b-adk's failure dict. */
export interface ToolFailure {
  /** Always false. */
  success: false;
  /** What went wrong, for the model. */
  error: string;
  /** Output printed before the failure (truncated); empty when none. */
  partial_output: string;
  /** The path of a file tool, echoed. */
  path?: string;
  /** The command of a command tool, echoed. */
  command?: string;
  /** Other fields, for the model. */
  [field: string]: unknown;
}

/** What `callTool` returns; send it back to the model as `JSON.stringify(result)`. */
export type ToolResult = ToolSuccess | ToolFailure;

/** Arguments of {@link E2BTools.runCode}. */
export interface RunCodeArgs {
  /** The source code to execute. */
  code: string;
  /** `python` (default), `javascript`, `typescript`, `r`, `java` or `bash`; case-insensitive. */
  language?: string;
  /** Environment variables for this execution only. */
  envs?: Record<string, string>;
  /** Timeout of the execution in seconds; 0 disables it. Default: 300. */
  timeoutSeconds?: number;
}

/** A rich result of `runCode` (only with `richResults`). */
export interface RichResult {
  /** MIME type: `image/png`, `text/html`, `application/json`, …. */
  mimeType: string;
  /** The data: base64 for images, text otherwise. */
  data: string;
  /** Whether this is the value of the code's last expression. */
  isMainResult: boolean;
}

/** What `runCode` produced. A raised exception is not a failure: it is in `error`. */
export interface RunCodeOutput {
  /** Everything printed to stdout. */
  stdout: string;
  /** Everything printed to stderr. */
  stderr: string;
  /** The last expression's value as text, as Jupyter shows it. */
  text: string;
  /** `<name>: <value>\n<traceback>` if the code raised, else empty. */
  error: string;
  /** Images, HTML and JSON, when `richResults` is on. */
  rich: RichResult[];
}

/** Arguments of {@link E2BTools.runCommand}. */
export interface RunCommandArgs {
  /** The shell command, run by `bash -l -c`. */
  command: string;
  /** Working directory. Default: `/home/user`. */
  cwd?: string;
  /** Environment variables for this command only. */
  envs?: Record<string, string>;
  /** Timeout in seconds; 0 disables it. Default: 60. */
  timeoutSeconds?: number;
}

/** What `runCommand` produced. A non-zero exit is not a failure. */
export interface CommandOutput {
  /** The command, echoed. */
  command: string;
  /** Its stdout. */
  stdout: string;
  /** Its stderr. */
  stderr: string;
  /** Its exit code (-1 when killed by a signal). */
  exitCode: number;
}

/** The type of a directory entry. */
export type EntryType = 'file' | 'dir' | 'symlink' | 'unknown';

/** One entry of a directory listing. */
export interface DirEntry {
  /** The entry's name (not its path). */
  name: string;
  /** Its type. */
  type: EntryType;
}

/** Arguments of {@link E2BTools.startBackgroundCommand}. */
export interface BackgroundArgs {
  /** The command to start. */
  command: string;
  /** A port the command listens on: its preview URL is returned and its readiness probed. */
  port?: number;
  /** Working directory. Default: `/home/user`. */
  cwd?: string;
  /** Environment variables for this command only. */
  envs?: Record<string, string>;
  /** Lifetime of the process in seconds; 0 or unset: until the sandbox ends. */
  timeoutSeconds?: number;
}

/** Whether a started background process is ready. */
export type Readiness = 'ready' | 'exited' | 'not-listening';

/** A started background process. */
export interface BackgroundProcess {
  /** The command, echoed. */
  command: string;
  /** Its process id inside the sandbox. */
  pid: number;
  /** `https://<port>-<sandbox>.<domain>` when a port was given. */
  previewUrl?: string;
  /** Readiness when a port was given, or `exited` when the process died at once. */
  readiness?: Readiness;
  /** The exit code when the process already exited. */
  exitCode?: number;
  /** Output captured while waiting (truncated). */
  stdout: string;
  /** Error output captured while waiting (truncated). */
  stderr: string;
}

/** Byte offsets into a background process's stdout and stderr. */
export interface OutputOffsets {
  /** Into stdout. */
  stdout: number;
  /** Into stderr. */
  stderr: number;
}

/** What a background process printed, and its state. */
export interface ProcessOutput {
  /** The process. */
  pid: number;
  /** Whether it still runs. */
  state: 'running' | 'exited';
  /** Its exit code once exited (-1 when killed by a signal), if it left one. */
  exitCode?: number;
  /** Its stdout from the requested offset (truncated). */
  stdout: string;
  /** Its stderr from the requested offset (truncated). */
  stderr: string;
  /** The offsets just past what was returned: pass them as `since` to read only newer output. */
  nextSince: OutputOffsets;
}

/** The signal `stopBackgroundCommand` sends first. */
export type StopSignal = 'sigterm' | 'sigint' | 'sighup' | 'sigquit' | 'sigkill';

/** A stopped background process. */
export interface StoppedProcess {
  /** The process. */
  pid: number;
  /** Its exit code (-1 when killed by a signal), if known. */
  exitCode?: number;
  /** The signal that ended it; unset if it had exited already. */
  signal?: StopSignal;
}

/** A snapshot made by `createSnapshot`: new sandboxes start from it as their template. */
export interface Snapshot {
  /** The snapshot's id (`configure({ template: snapshotId })`). */
  snapshotId: string;
  /** Its full names (team, name and tag); empty when unnamed. */
  names: string[];
}

/** Arguments of `forkSandbox`. */
export interface ForkArgs {
  /** How many forks, 1 to 8. Default: 1. */
  count?: number;
  /** Each fork's timeout in seconds after its last use. Default: the instance's. */
  timeoutSeconds?: number;
  /** Hand the forks on: they outlive this instance's `shutdown`. Default: false. */
  keep?: boolean;
}

/** A fork that did not start (each fork starts or fails on its own). */
export interface ForkFailure {
  /** The error kind, as `ToolError`'s. */
  kind: string;
  /** Why. */
  message: string;
}

/** What `forkSandbox` made. */
export interface Forks {
  /** The forks that started: `callTool` addresses one by `sandbox_id`. */
  sandboxIds: string[];
  /** The forks that did not start, and why. */
  failures: ForkFailure[];
}

/** The lifecycle event kinds, as every host spells them. */
export type EventKind =
  | 'sandbox_start'
  | 'sandbox_stop'
  | 'exec_start'
  | 'exec_end'
  | 'snapshot'
  | 'error';

/** The six kinds, in that order. */
export const EVENT_KINDS: readonly EventKind[];

/** Undelivered events an instance holds before it drops (and counts) new ones. */
export const QUEUE_CAPACITY: number;

/**
 * One lifecycle event. Argument values are never in it; `detail` comes from
 * the component, which redacts secrets from all it returns.
 */
export interface E2BEvent {
  kind: EventKind;
  /** `Date.now()` when it happened. */
  time: number;
  /** The tool, for `exec_*` and `snapshot`. */
  tool?: string;
  /**
   * The sandbox: the one started or stopped, the one a call works in (the
   * first call's `exec_start` already has the sandbox it made), the one a
   * snapshot was taken of; none for a call that failed before it had one.
   */
  sandboxId?: string;
  /**
   * Milliseconds the call took, as the component measured it (`exec_end`),
   * or the instance had its sandbox (`sandbox_stop`; none for a fork).
   */
  duration?: number;
  /** Whether the call succeeded (`exec_end`), or the sandbox was killed (`sandbox_stop`). */
  success?: boolean;
  /** Why a call failed (`not-found`, `timeout`, …; `trapped` or `session` for `error`). */
  errorKind?: string;
  /**
   * `sandbox_start`: `created`, `resumed` (attached to) or `forked`;
   * `sandbox_stop`: `shutdown` (killed), `released` (left to pause, or a
   * fork handed on) or `gone` (found expired or killed elsewhere, at the
   * next call); `snapshot`: the snapshot id; `error`: what failed.
   */
  detail?: string;
}

/**
 * One instance of the component, on its own worker thread; it owns at most
 * one sandbox, created by the first tool call. Every method returns a
 * promise, and calls on one instance run one at a time, in the order they
 * were made. Typed calls reject with a {@link ToolError} when the tool
 * fails, and with a `TypeError` for arguments of the wrong type.
 *
 * It is an `EventEmitter` of lifecycle events: listen to a kind
 * (`e2b.on('exec_end', …)`) or to all (`e2b.on('event', …)`). Listeners
 * run on a later tick, from a bounded queue, each guarded: one that throws
 * or returns a rejected promise loses that event (counted in
 * {@link E2BTools.droppedEvents}, one process warning) and never breaks
 * or delays a call. `error` events go only to `error` listeners there are.
 *
 * An instance never closed has its sandboxes (the one it created, and its
 * forks) killed when the process exits (its end, `process.exit()`, or
 * SIGTERM, SIGINT and SIGHUP when the application has no listener of its
 * own for them; the signal then still ends the process, within 5 s), also
 * in the middle of a call: the component reports each sandbox the moment it
 * has it, and a fresh worker kills them by id. One attached to
 * (`sandboxId`) or left to pause is left running, unless `killOnExit`.
 */
export class E2BTools {
  private constructor();

  /** Events lost over all listeners. */
  readonly droppedEvents: number;

  // The EventEmitter methods (the class extends node:events' EventEmitter;
  // declared here so that no @types/node is needed).
  /** Adds a listener of one event kind, or of all (`'event'`). */
  on(name: EventKind | 'event', listener: (event: E2BEvent) => unknown): this;
  /** {@link E2BTools.on}, for the next event only. */
  once(name: EventKind | 'event', listener: (event: E2BEvent) => unknown): this;
  /** Removes a listener. */
  off(name: EventKind | 'event', listener: (event: E2BEvent) => unknown): this;
  /** {@link E2BTools.on}. */
  addListener(name: EventKind | 'event', listener: (event: E2BEvent) => unknown): this;
  /** {@link E2BTools.off}. */
  removeListener(name: EventKind | 'event', listener: (event: E2BEvent) => unknown): this;
  /** Removes every listener (of one name). */
  removeAllListeners(name?: EventKind | 'event'): this;
  /** How many listeners a name has. */
  listenerCount(name: EventKind | 'event'): number;

  /**
   * Sets the instance's options. Call it before the first tool call: with
   * a sandbox open it fails with `invalid-argument`. Contacts nobody.
   * Unless the instance was loaded with an explicit `policy`, the outbound
   * allow-list becomes that of the new endpoints (`domain`, `apiUrl` and
   * `sandboxUrl`, each falling back to the environment), in force from the
   * component's next request; a URL that is not absolute http(s) rejects
   * with a {@link PolicyError} and changes nothing.
   */
  configure(config?: Config): Promise<void>;

  /** The hosts this instance may send requests to (see {@link LoadOptions.policy}). */
  readonly policy: OutboundPolicy;

  /** The ID of the instance's sandbox, if one is open. */
  sandboxId(): Promise<string | undefined>;

  /**
   * Makes the instance's sandbox now (or resumes the one it holds) and
   * returns its ID; `timeoutSeconds` sets its timeout (none: the
   * configured one). A {@link WarmPool} makes sandboxes ahead with this.
   * Rejects with a {@link ToolError} when the sandbox cannot be made.
   */
  prepare(timeoutSeconds?: number): Promise<string>;

  /**
   * Kills the sandbox (with `onTimeout: 'pause'`, leaves it to pause) and
   * forgets it: true if one was killed. The instance stays usable; its next
   * tool call creates a new sandbox.
   */
  shutdown(): Promise<boolean>;

  /**
   * Shuts the sandbox down, then ends the worker thread: true if a sandbox
   * was killed (a failed kill rejects with its `ToolError`; the worker ends
   * all the same, and the end of the process tries the kill again). Later
   * calls reject; closing again gives false. An instance that is never
   * closed does not keep Node running; the end of the process kills its
   * sandboxes.
   */
  close(): Promise<boolean>;

  /** The enabled tools (`config.tools`), as the component describes them. */
  listTools(): Promise<ToolSpec[]>;

  /** The enabled tools for OpenAI chat completions (`ChatCompletionTool[]`). */
  openaiChatTools(): Promise<OpenAIChatTool[]>;

  /** The enabled tools for the OpenAI Responses API (`FunctionTool[]`). */
  openaiResponsesTools(): Promise<OpenAIResponsesTool[]>;

  /** The enabled tools for Anthropic's Messages API (`Tool[]`). */
  anthropicTools(): Promise<AnthropicTool[]>;

  /** A system-prompt fragment describing the tools and the sandbox. */
  instructions(): Promise<string>;

  /**
   * Runs a tool call as a model makes it: `args` is the arguments object or
   * the JSON text the model produced (default `{}`). Resolves to e2b-adk's
   * result dict; a failed, unknown or disabled tool and malformed JSON give
   * `success: false`, never a rejection.
   */
  callTool(name: string, args?: string | Record<string, unknown>): Promise<ToolResult>;

  /** Executes code in the sandbox's stateful kernel: variables persist across calls. */
  runCode(args: RunCodeArgs): Promise<RunCodeOutput>;

  /** Runs a shell command and waits for it to exit. */
  runCommand(args: RunCommandArgs): Promise<CommandOutput>;

  /**
   * Writes a text file, creating parent directories and replacing any old
   * content (at most 32 MiB). Relative paths are under `/home/user`.
   */
  writeFile(path: string, content: string): Promise<void>;

  /** Reads a text file (invalid UTF-8 is replaced by U+FFFD). */
  readFile(path: string): Promise<string>;

  /** Lists a directory, one level deep. Default: the home directory, `/home/user`. */
  listFiles(path?: string): Promise<DirEntry[]>;

  /**
   * Starts a long-running command and resolves once it has started (and,
   * with a port, once it listens or the readiness wait ends).
   */
  startBackgroundCommand(args: BackgroundArgs): Promise<BackgroundProcess>;

  /**
   * What a process started by `startBackgroundCommand` printed, from
   * `since` (default: the start), and whether it still runs. Only when
   * enabled by `configure({ tools })`, else `invalid-argument`.
   */
  getBackgroundOutput(
    pid: number,
    since?: { stdout?: number | bigint; stderr?: number | bigint },
  ): Promise<ProcessOutput>;

  /**
   * Stops a process started by `startBackgroundCommand` and the processes
   * it started: `signal` (default SIGTERM; any case), then SIGKILL after 5
   * seconds. Only when enabled by `configure({ tools })`.
   */
  stopBackgroundCommand(
    pid: number,
    signal?: StopSignal | Uppercase<StopSignal>,
  ): Promise<StoppedProcess>;

  /**
   * Saves the sandbox's state as a snapshot that outlives it (its files;
   * on E2B its memory too). Only when enabled by `configure({ tools })`.
   */
  createSnapshot(name?: string): Promise<Snapshot>;

  /**
   * Branches the sandbox into new ones, each starting with its state;
   * they end with this instance's `shutdown` unless `keep`. Only when
   * enabled by `configure({ tools })`.
   */
  forkSandbox(args?: ForkArgs): Promise<Forks>;
}

/** The timeout of a sandbox waiting in a {@link WarmPool}, in seconds. */
export const WAITING_TIMEOUT: number;
/** The most instances one {@link WarmPool} holds. */
export const MAX_POOL_SIZE: number;

/** What a {@link WarmPool} did so far. */
export interface PoolStats {
  /** Instances waiting now. */
  waiting: number;
  /** Sandboxes the pool made. */
  made: number;
  /** Instances handed out ready. */
  handedOut: number;
  /** Waiting sandboxes found dead (or failing to refresh) and dropped. */
  discarded: number;
  /** Attempts to make a sandbox that failed. */
  failed: number;
}

/** The options of {@link WarmPool.start}. */
export interface WarmPoolOptions {
  /** `loadE2BTools`'s `env`. */
  env?: Record<string, string | undefined>;
  /** `loadE2BTools`'s `policy`. */
  policy?: OutboundPolicy;
  /** What each instance is configured with ({@link E2BTools.configure}). */
  config?: Config;
}

/**
 * Instances of one configuration whose sandboxes are made ahead, so an
 * agent session's first tool call does not wait for one (on E2B, ~400 ms
 * at the median). Each waits on a short timeout ({@link WAITING_TIMEOUT})
 * that the pool refreshes; `take()` gives it the configured timeout and
 * proves it lives (a dead one is dropped, never handed out); a pool that
 * cannot fill backs off and `take()` gives a fresh instance. `close()`
 * kills what waits; so does the end of the process.
 */
export class WarmPool {
  /** Starts a pool of `size` (1 to {@link MAX_POOL_SIZE}) instances. */
  static start(size: number, options?: WarmPoolOptions): Promise<WarmPool>;
  /** Whether instances configured with `config` may come from this pool. */
  serves(config?: Config): boolean;
  /** A waiting instance made ready, else a fresh one (its sandbox made on its first call). */
  take(): Promise<E2BTools>;
  /** What the pool did so far. */
  readonly stats: PoolStats;
  /** Stops filling and kills every waiting sandbox. */
  close(): Promise<void>;
}
