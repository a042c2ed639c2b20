// One component instance, on a worker thread of its own. preview2-shim runs
// wasi:http synchronously (it blocks its thread until each answer arrives),
// so the component runs here and the application's event loop stays free.
//
// The worker answers one request at a time, in the order they arrive: a
// request is `{op, args}`, an answer `{value}`, `{toolError}` (a failed
// typed call's tool-error) or `{error}` (a trap or a bug), each with the
// component's `sandboxId` after the call (the main thread's events and its
// exit cleanup follow it).
//
// Started with `workerData.reap`, it is a reaper instead: it attaches to
// that sandbox, shuts it down and says so through a SharedArrayBuffer, for
// a main thread that waits synchronously (in process.on('exit')).

import { parentPort, workerData } from 'node:worker_threads';
import { WASIShim } from '@bytecodealliance/preview2-shim/instantiation';
import { instantiate } from './generated/e2b_tools.js';
import { OutboundPolicy } from './policy.js';

const { env, rules, coreModules, reap } = workerData;
/** The allow-list; `configure` replaces it unless the host fixed it. */
let policy = new OutboundPolicy(rules);

// `sandbox.env` is the whole environment the guest sees. The component
// imports no wasi:filesystem, so there is nothing to preopen.
const imports = new WASIShim({ sandbox: { env } }).getImportObject();
const http = imports['wasi:http/outgoing-handler'];
imports['wasi:http/outgoing-handler'] = {
  ...http,
  handle(request, options) {
    // No scheme means HTTPS to preview2-shim; "other" schemes are never allowed.
    const scheme = request.scheme();
    const https = scheme === undefined || scheme.tag === 'HTTPS';
    const allowed = (https || scheme.tag === 'HTTP') && policy.allows(https, request.authority());
    if (!allowed) {
      // The guest reports this as a `network` tool failure naming the host.
      throw { tag: 'HTTP-request-denied' };
    }
    return http.handle(request, options);
  },
};

const component = await instantiate((name) => coreModules[name], imports);

/** The operations the main thread may ask for, by name. */
const ops = {
  // `next`: the allow-list of the new endpoints (null when the host fixed
  // it), in force once the component has taken the config, so before its
  // next request.
  configure: (config, next) => {
    component.lifecycle.configure(config);
    if (next) policy = new OutboundPolicy(next);
  },
  sandboxId: () => component.lifecycle.sandboxId(),
  prepare: (timeoutSeconds) => component.lifecycle.prepare(timeoutSeconds),
  shutdown: () => component.lifecycle.shutdown(),
  listTools: () => component.catalog.listTools(),
  callTool: (name, json) => component.catalog.callTool(name, json),
  instructions: () => component.catalog.instructions(),
  runCode: (args) => component.tools.runCode(args),
  runCommand: (args) => component.tools.runCommand(args),
  writeFile: (path, content) => component.tools.writeFile(path, content),
  readFile: (path) => component.tools.readFile(path),
  listFiles: (path) => component.tools.listFiles(path),
  startBackgroundCommand: (args) => component.tools.startBackgroundCommand(args),
  getBackgroundOutput: (pid, since) => component.tools.getBackgroundOutput(pid, since),
  stopBackgroundCommand: (pid, signal) => component.tools.stopBackgroundCommand(pid, signal),
  createSnapshot: (name) => component.tools.createSnapshot(name),
  forkSandbox: (args) => component.tools.forkSandbox(args),
};

/** The sandbox the component holds now (undefined if it cannot say). */
function currentSandbox() {
  try {
    return component.lifecycle.sandboxId() ?? null;
  } catch {
    return undefined;
  }
}

if (reap) {
  // A listing connects to the sandbox; the shutdown then kills it.
  const done = new Int32Array(reap.flag);
  try {
    component.lifecycle.configure({ ...reap.config, sandboxId: reap.sandboxId });
    component.catalog.callTool('list_files', '{"path": "/"}');
    Atomics.store(done, 0, component.lifecycle.shutdown() ? 1 : 2);
  } catch {
    Atomics.store(done, 0, 3);
  }
  Atomics.notify(done, 0);
  process.exit(0);
}

parentPort.on('message', ({ op, args }) => {
  try {
    const value = ops[op](...args);
    parentPort.postMessage({ value, sandboxId: currentSandbox() });
  } catch (err) {
    // jco throws a typed export's `err` as a ComponentError with `payload`.
    if (err?.payload && typeof err.payload === 'object' && 'kind' in err.payload) {
      parentPort.postMessage({ toolError: { ...err.payload }, sandboxId: currentSandbox() });
    } else {
      parentPort.postMessage({
        error: { name: err?.name ?? 'Error', message: String(err?.message ?? err) },
      });
    }
  }
});
parentPort.postMessage({ ready: true });
