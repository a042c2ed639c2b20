// Lifecycle events and the exit cleanup of the e2b-tools package.
//
// Events: each instance is an EventEmitter, but its listeners are called
// from a bounded queue drained on a later tick, each in a try/catch, so a
// listener that throws (or returns a promise that rejects or never
// settles) loses that event, counted, and never breaks or delays a call.
//
// Cleanup: the sandbox of an instance never closed is killed when the
// process ends (process 'exit', so also a script that just ends) and on
// SIGTERM, SIGINT and SIGHUP: a reaper worker per sandbox attaches to it
// and shuts it down while the main thread waits on a SharedArrayBuffer
// (an 'exit' listener must be synchronous), at most KILL_TIMEOUT_MS. A
// signal listener the application added keeps the signal its own (then
// only the exit hook cleans up); otherwise the signal is raised again with
// Node's default action after the cleanup, so the process still ends by it.

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

/** The longest the exit cleanup waits for the kills. */
export const KILL_TIMEOUT_MS = 10_000;

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

/** Instances whose sandbox the exit cleanup kills: instance -> reap info. */
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
 * Keeps `info()` (→ `{sandboxId, env, rules, config}` or null when there is
 * nothing of its own to kill) of `instance` for the exit cleanup.
 */
export function track(instance, info) {
  live.set(instance, info);
  install();
}

export function untrack(instance) {
  live.delete(instance);
}

/** Kills every tracked sandbox, waiting at most KILL_TIMEOUT_MS in all. */
export function reapAllSync() {
  const waits = [];
  for (const [instance, info] of live) {
    live.delete(instance);
    const target = info();
    if (!target || !modules) continue;
    const flag = new SharedArrayBuffer(4);
    try {
      const worker = new Worker(new URL('./worker.js', import.meta.url), {
        workerData: {
          env: target.env,
          rules: target.rules,
          coreModules: modules,
          reap: { sandboxId: target.sandboxId, config: target.config, flag },
        },
        env: target.env,
        execArgv: workerExecArgv(),
      });
      worker.unref();
      waits.push(new Int32Array(flag));
    } catch {
      // No worker can start (the process is going down): the timeout ends it.
    }
  }
  const deadline = Date.now() + KILL_TIMEOUT_MS;
  for (const done of waits) {
    const left = deadline - Date.now();
    if (left > 0) Atomics.wait(done, 0, 0, left);
  }
}

function install() {
  if (installed) return;
  installed = true;
  process.on('exit', reapAllSync);
  for (const signal of SIGNALS) {
    const handler = () => {
      if (process.listeners(signal).some((listener) => listener !== handler)) return;
      reapAllSync();
      process.removeListener(signal, handler);
      process.kill(process.pid, signal);
    };
    process.on(signal, handler);
  }
}
