// One component instance, on a worker thread of its own. preview2-shim runs
// wasi:http synchronously (it blocks its thread until each answer arrives),
// so the component runs here and the application's event loop stays free.
//
// The worker answers one request at a time, in the order they arrive: a
// request (on parentPort) is `{op, args}`, an answer `{value}`,
// `{toolError}` (a failed typed call's tool-error) or `{error}` (a trap or a
// bug). What the component reports through its `events` import (a sandbox
// started or stopped, a call began or ended, a snapshot) is sent the moment
// it is reported, as `{report}`, while the call still runs. Answers and
// reports go out on one port (`workerData.port`, so in order), and each
// message bumps `workerData.seq` (a SharedArrayBuffer): a main thread that
// cannot wait for an event (in process.on('exit'), in a signal's cleanup)
// reads them with receiveMessageOnPort and waits with Atomics.wait.
//
// Started with `workerData.reap`, it is a reaper instead: configured like
// the instance it stands in for, it kills sandboxes by id (the component's
// `kill`, one DELETE each, no attaching) and says how it went through a
// SharedArrayBuffer, for a main thread that waits synchronously.

import { parentPort, workerData } from 'node:worker_threads';
import { WASIShim } from '@bytecodealliance/preview2-shim/instantiation';
import { instantiate } from './generated/e2b_tools.js';
import { OutboundPolicy } from './policy.js';

const { env, rules, coreModules, reap, port, seq } = workerData;
const sent = seq && new Int32Array(seq);

/** Sends one message to the main thread, and says so on `seq`. */
function send(message) {
  port.postMessage(message);
  Atomics.add(sent, 0, 1);
  Atomics.notify(sent, 0);
}
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

// The component's lifecycle reports. `report` must return promptly and
// never fail the call: a reaper (no port) keeps none, and one that cannot
// be sent is lost.
function report(event) {
  if (!port) return;
  try {
    const { tag, val } = event;
    const fields = { ...val };
    if (typeof fields.durationMs === 'bigint') fields.durationMs = Number(fields.durationMs);
    send({ report: { type: tag, ...fields } });
  } catch {
    // Lost: the call goes on.
  }
}
// jco's instantiate reads the import by its unversioned name; the
// versioned one is the key its ImportObject type names.
imports['e2b:tools/events'] = imports['e2b:tools/events@0.1.0'] = { report };

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

if (reap) {
  // state[0]: 1 when done; state[1 + i]: 1 once sandboxIds[i] is killed
  // (or E2B no longer knew it).
  const state = new Int32Array(reap.state);
  try {
    component.lifecycle.configure(reap.config);
    reap.sandboxIds.forEach((id, i) => {
      try {
        component.lifecycle.kill(id);
        Atomics.store(state, 1 + i, 1);
      } catch {
        // Left at 0: not killed.
      }
    });
  } catch {
    // Not configurable: none killed.
  }
  Atomics.store(state, 0, 1);
  Atomics.notify(state, 0);
  process.exit(0);
}

parentPort.on('message', ({ op, args }) => {
  try {
    send({ value: ops[op](...args) });
  } catch (err) {
    // jco throws a typed export's `err` as a ComponentError with `payload`.
    if (err?.payload && typeof err.payload === 'object' && 'kind' in err.payload) {
      send({ toolError: { ...err.payload } });
    } else {
      send({ error: { name: err?.name ?? 'Error', message: String(err?.message ?? err) } });
    }
  }
});
send({ ready: true });
