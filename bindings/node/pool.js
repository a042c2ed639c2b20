// A warm pool: instances whose sandboxes are made ahead, so an agent
// session's first tool call does not wait for one (on E2B, ~400 ms at the
// median and a second at the tail). The same pool as the Rust host
// library's WarmPool: each waiting instance has its sandbox made (`prepare`)
// on a short timeout that the filler refreshes, so E2B's timeout is the
// backstop if the process dies; `take()` gives it the configured timeout
// and proves it lives (a dead one is dropped and the next taken); a pool
// that cannot fill backs off and `take()` gives a fresh instance. Waiting
// instances are tracked like any (lifecycle.js), their sandboxes known from
// the component's reports: the end of the process (or a signal) kills them
// too, the one the filler is making included.

import { loadE2BTools } from './index.js';

/** The timeout of a waiting sandbox, in seconds: short, so a dead process costs little. */
export const WAITING_TIMEOUT = 60;
/** The most instances one pool holds. */
export const MAX_POOL_SIZE = 64;
/** The longest wait between two attempts to fill a pool that fails, in ms. */
const MAX_BACKOFF_MS = 60_000;
/** How long `take()` waits for a sandbox being made, in ms. */
const TAKE_WAIT_MS = 30_000;

/** A config without its unset options, as pools compare them. */
function canonical(config = {}) {
  return JSON.stringify(
    Object.entries(config)
      .filter(([, value]) => value != null)
      .sort(([a], [b]) => (a < b ? -1 : 1)),
  );
}

export class WarmPool {
  #size;
  #options;
  #key;
  #waiting = [];
  #filling = false;
  #closed = false;
  /** Wakes the filler (an instance was taken, or the pool closes). */
  #wake = () => {};
  /** Wakes `take()` calls waiting for a sandbox being made. */
  #ready = [];
  #filler;
  #counts = { made: 0, handedOut: 0, discarded: 0, failed: 0 };

  /** Use `WarmPool.start`. */
  constructor(size, options) {
    this.#size = size;
    this.#options = options;
    this.#key = canonical(options.config);
  }

  static async start(size, { env, policy, config = {} } = {}) {
    if (!Number.isInteger(size) || size < 1 || size > MAX_POOL_SIZE) {
      throw new RangeError(`a warm pool holds 1 to ${MAX_POOL_SIZE} sandboxes, not ${size}`);
    }
    const pool = new WarmPool(size, { env, policy, config });
    // Options the component rejects fail here, not on the filler.
    const probe = await pool.#instance();
    await probe.close();
    pool.#filler = pool.#fill();
    return pool;
  }

  serves(config = {}) {
    return canonical(config) === this.#key;
  }

  get stats() {
    return { waiting: this.#waiting.length, ...this.#counts };
  }

  async take() {
    const deadline = Date.now() + TAKE_WAIT_MS;
    while (!this.#closed) {
      const next = this.#waiting.shift();
      if (next === undefined) {
        if (!this.#filling || Date.now() >= deadline) break;
        // A sandbox is being made: sooner than making another.
        await new Promise((resolve) => {
          this.#ready.push(resolve);
          setTimeout(resolve, Math.max(0, deadline - Date.now())).unref();
        });
        continue;
      }
      this.#wake();
      try {
        // The configured timeout, and the proof it still lives.
        await next.prepare();
      } catch {
        this.#counts.discarded += 1;
        await closeQuietly(next);
        continue;
      }
      this.#counts.handedOut += 1;
      return next;
    }
    return this.#instance();
  }

  async close() {
    this.#closed = true;
    this.#wake();
    this.#notifyReady();
    await this.#filler;
    await this.#drain();
  }

  async #instance() {
    const { env, policy, config } = this.#options;
    const e2b = await loadE2BTools({ env, policy });
    try {
      await e2b.configure(config);
    } catch (err) {
      await closeQuietly(e2b);
      throw err;
    }
    return e2b;
  }

  #notifyReady() {
    const waiters = this.#ready;
    this.#ready = [];
    for (const resolve of waiters) resolve();
  }

  async #drain() {
    const waiting = this.#waiting;
    this.#waiting = [];
    await Promise.all(waiting.map(closeQuietly));
  }

  /** An instance with its sandbox made on the waiting timeout, or null. */
  async #make() {
    let e2b;
    try {
      e2b = await this.#instance();
      await e2b.prepare(WAITING_TIMEOUT);
      return e2b;
    } catch {
      if (e2b) await closeQuietly(e2b);
      return null;
    }
  }

  /** Puts every waiting sandbox back on the waiting timeout; a failing one is dropped. */
  async #refresh() {
    const waiting = this.#waiting;
    this.#waiting = [];
    for (const e2b of waiting) {
      try {
        await e2b.prepare(WAITING_TIMEOUT);
      } catch {
        this.#counts.discarded += 1;
        await closeQuietly(e2b);
        continue;
      }
      if (this.#closed) await closeQuietly(e2b);
      else this.#waiting.push(e2b);
    }
  }

  /** Sleeps `ms` or until woken; the timer does not keep Node alive. */
  #sleep(ms) {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      timer.unref();
      this.#wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  async #fill() {
    let backoff = 250;
    const refreshEvery = (WAITING_TIMEOUT * 1000) / 3;
    let lastRefresh = Date.now();
    while (!this.#closed) {
      if (Date.now() - lastRefresh >= refreshEvery) {
        await this.#refresh();
        lastRefresh = Date.now();
      }
      if (this.#waiting.length >= this.#size) {
        // Full: until one is taken, the pool closes, or the next refresh.
        await this.#sleep(Math.max(0, refreshEvery - (Date.now() - lastRefresh)));
        continue;
      }
      this.#filling = true;
      const e2b = await this.#make();
      this.#filling = false;
      if (e2b === null) {
        this.#counts.failed += 1;
        this.#notifyReady();
        await this.#sleep(backoff);
        backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
        continue;
      }
      this.#counts.made += 1;
      backoff = 250;
      if (this.#closed) await closeQuietly(e2b);
      else this.#waiting.push(e2b);
      this.#notifyReady();
    }
    await this.#drain();
  }
}

/** Closes an instance the pool drops; a failed kill is left to its (short) timeout. */
async function closeQuietly(e2b) {
  try {
    await e2b.close();
  } catch {
    // Its sandbox ends at its timeout.
  }
}
