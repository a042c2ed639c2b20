// Lifecycle events and the exit cleanup of the e2b-tools package.
//
// Events: each instance is an EventEmitter, but its listeners are called
// from a bounded queue drained on a later tick, each in a try/catch, so a
// listener that throws (or returns a promise that rejects or never
// settles) loses that event, counted, and never breaks or delays a call.
//
// Cleanup: the sandboxes an instance owns (those the component reported
// as its own: the one it created and its forks, not one it attached to
// unless `killOnExit`) are killed when the process ends (process 'exit', so
// also a script that just ends) and on SIGTERM, SIGINT and SIGHUP, even in
// the middle of a call: the reports arrive while the call runs. A running
// call that is making a sandbox is given up to MAKING_WAIT_MS to report it.
// Fresh reaper workers kill them by id (the component's `kill`: no
// attaching, so the busy instance is not needed) while the main thread
// waits on a SharedArrayBuffer (an 'exit' listener must be synchronous), at
// most KILL_TIMEOUT_MS at exit and SIGNAL_TIMEOUT_MS in all on a signal. A
// signal listener the application added keeps the signal its own (then
// only the exit hook cleans up); otherwise the signal is raised again with
// Node's default action after the cleanup, so the process still ends by it.

import { writeSync } from 'node:fs';
import { Worker } from 'node:worker_threads';

/** The event kinds, as every host spells them. */
export const EVENT_KINDS = [
  'sandbox_start',
  'sandbox_stop',
  'exec_start',
  'exec_end',
  'snapshot',
  'error',
];

/** Undelivered events an instance holds; past that they are dropped, counted. */
export const QUEUE_CAPACITY = 1024;

/** The longest the exit cleanup takes (process 'exit'). */
export const KILL_TIMEOUT_MS = 10_000;

/** The longest a signal's cleanup takes, so the signal ends the process within 5 s. */
export const SIGNAL_TIMEOUT_MS = 4_000;

/** The longest the cleanup waits for a sandbox a running call is making. */
const MAKING_WAIT_MS = 2_000;

/** The most sandboxes one reaper worker kills (one after the other). */
const REAP_BATCH = 8;

/**
 * Delivers events to an emitter's listeners of `event.kind` and of
 * `'event'`, off the caller's stack. `onDrop(event, why)` counts a loss.
 */
export class EventQueue {
  #emitter;
  #onDrop;
  #queue = [];
  #scheduled = false;

  constructor(emitter, onDrop) {
    this.#emitter = emitter;
    this.#onDrop = onDrop;
  }

  push(event) {
    if (this.#queue.length >= QUEUE_CAPACITY) {
      this.#onDrop(event, 'the queue is full');
      return;
    }
    this.#queue.push(event);
    if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(() => this.#drain());
    }
  }

  #drain() {
    this.#scheduled = false;
    const events = this.#queue.splice(0);
    for (const event of events) {
      // 'error' is only delivered to listeners there are (EventEmitter
      // would throw for none).
      const listeners = [
        ...this.#emitter.rawListeners(event.kind),
        ...this.#emitter.rawListeners('event'),
      ];
      for (const listener of listeners) {
        try {
          const result = listener.call(this.#emitter, event);
          if (result && typeof result.then === 'function') {
            result.then(undefined, (err) => this.#onDrop(event, err));
          }
        } catch (err) {
          this.#onDrop(event, err);
        }
      }
    }
  }
}

/** Instances the exit cleanup answers for: instance -> its hooks (see `track`). */
const live = new Map();
/** The compiled core modules, once known (a reaper worker needs them). */
let modules;
let installed = false;
const SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP'];

/**
 * The process's Node options for a worker, less those a worker refuses
 * (`--input-type`, given with `node -e`).
 */
export function workerExecArgv() {
  return process.execArgv.filter((arg) => !arg.startsWith('--input-type'));
}

export function setCoreModules(compiled) {
  modules = compiled;
}

/**
 * Keeps `instance` for the exit cleanup, which calls its hooks
 * synchronously: `drain()` takes in what its worker sent, `making()` says
 * whether its running call may be making a sandbox not reported yet,
 * `wait(ms)` waits for its worker's next message, and `targets()` gives
 * `{sandboxIds, env, rules, config}` (null when nothing is its to kill).
 */
export function track(instance, hooks) {
  live.set(instance, hooks);
  install();
}

export function untrack(instance) {
  live.delete(instance);
}

/**
 * Kills every tracked instance's sandboxes, taking at most `budget` ms in
 * all; a sandbox not killed by then is named on stderr (one line) and
 * ends at its timeout.
 */
export function reapAllSync(budget = KILL_TIMEOUT_MS) {
  const deadline = Date.now() + budget;
  const instances = [...live.values()];
  live.clear();
  for (const hooks of instances) hooks.drain();
  // A call making a sandbox reports it once made (or answers): wait for
  // that, all of them at once (each instance runs on its own thread).
  const makingUntil = Math.min(deadline - budget / 2, Date.now() + MAKING_WAIT_MS);
  for (;;) {
    const making = instances.filter((hooks) => hooks.making());
    const left = makingUntil - Date.now();
    if (making.length === 0 || left <= 0) break;
    making[0].wait(left);
    for (const hooks of making) hooks.drain();
  }
  // One reaper per configuration (a pool's instances share theirs), at
  // most REAP_BATCH sandboxes each.
  const groups = new Map();
  for (const hooks of instances) {
    const target = hooks.targets();
    if (!target) continue;
    const key = JSON.stringify([target.env, target.rules, target.config]);
    const group = groups.get(key) ?? { ...target, sandboxIds: [] };
    group.sandboxIds.push(...target.sandboxIds);
    groups.set(key, group);
  }
  const reapers = [];
  for (const group of groups.values()) {
    for (let i = 0; i < group.sandboxIds.length; i += REAP_BATCH) {
      const sandboxIds = group.sandboxIds.slice(i, i + REAP_BATCH);
      // state[0]: 1 once the reaper is done; state[1 + i]: 1 once
      // sandboxIds[i] is killed (or was gone already).
      const state = new Int32Array(new SharedArrayBuffer(4 * (1 + sandboxIds.length)));
      const reaper = { sandboxIds, state, started: false };
      reapers.push(reaper);
      if (!modules) continue;
      try {
        const worker = new Worker(new URL('./worker.js', import.meta.url), {
          workerData: {
            env: group.env,
            rules: group.rules,
            coreModules: modules,
            reap: { sandboxIds, config: group.config, state: state.buffer },
          },
          env: group.env,
          execArgv: workerExecArgv(),
        });
        worker.unref();
        // A reaper that fails is counted below, not thrown at the process.
        worker.on('error', () => {});
        reaper.started = true;
      } catch {
        // No worker can start (the process is going down).
      }
    }
  }
  const missed = [];
  for (const { sandboxIds, state, started } of reapers) {
    const left = deadline - Date.now();
    if (started && left > 0) Atomics.wait(state, 0, 0, left);
    missed.push(...sandboxIds.filter((_, i) => Atomics.load(state, 1 + i) !== 1));
  }
  if (missed.length > 0) {
    try {
      writeSync(
        2,
        `e2b-tools: sandboxes not killed as the process ended ` +
          `(they end at their timeout): ${missed.join(', ')}\n`,
      );
    } catch {
      // No stderr.
    }
  }
}

function install() {
  if (installed) return;
  installed = true;
  process.on('exit', () => reapAllSync(KILL_TIMEOUT_MS));
  for (const signal of SIGNALS) {
    const handler = () => {
      if (process.listeners(signal).some((listener) => listener !== handler)) return;
      reapAllSync(SIGNAL_TIMEOUT_MS);
      process.removeListener(signal, handler);
      process.kill(process.pid, signal);
    };
    process.on(signal, handler);
  }
}
