// The outbound allow-list: the hosts the component may reach. The same rules
// as the Rust host's (host/src/policy.rs) and the Python package's
// (_policy.py): the E2B API endpoint and the sandbox endpoints, and nothing
// else, so a buggy or compromised component cannot send the API key
// anywhere else.

/** E2B's public domain, used when neither the config nor `E2B_DOMAIN` names one. */
export const DEFAULT_DOMAIN = 'e2b.app';

/** The port a scheme implies when the authority names none. */
const DEFAULT_PORTS = { http: 80, https: 443 };

/** A URL given for the allow-list is not an absolute http(s) URL. */
export class PolicyError extends Error {
  constructor(setting, value) {
    super(`${setting} is not an absolute http(s) URL: ${JSON.stringify(value)}`);
    this.name = 'PolicyError';
    /** Which setting held the URL (`E2B_API_URL`, `E2B_SANDBOX_URL`). */
    this.setting = setting;
    /** The rejected value. */
    this.value = value;
  }
}

/**
 * One endpoint from an explicit URL: `{https, host, port}`. Throws a
 * PolicyError when the URL is not an absolute http(s) URL.
 */
function exactRule(setting, url) {
  let parsed;
  try {
    parsed = new URL(url.trim());
  } catch {
    parsed = undefined;
  }
  const scheme = parsed?.protocol.slice(0, -1);
  if (!parsed || !(scheme in DEFAULT_PORTS) || !parsed.hostname) {
    throw new PolicyError(setting, url);
  }
  return {
    https: scheme === 'https',
    host: parsed.hostname.replace(/\.+$/, '').toLowerCase(),
    port: parsed.port ? Number(parsed.port) : DEFAULT_PORTS[scheme],
  };
}

/** A rule's endpoint as a URL prefix, e.g. `http://127.0.0.1:3000`. */
function ruleText(rule) {
  return rule.domain === undefined
    ? `${rule.https ? 'https' : 'http'}://${rule.host}:${rule.port}`
    : `https://*.${rule.domain}:443`;
}

/** A policy's rules, for the worker thread (which rebuilds it from them). */
export let rulesOf;

/** The hosts one component instance may send requests to. */
export class OutboundPolicy {
  /**
   * Each rule is `{https, host, port}` (one endpoint) or `{domain}` (any
   * HTTPS host under `domain` on port 443). Use `forEndpoints`.
   */
  #rules;

  constructor(rules) {
    this.#rules = Object.freeze(rules.map((rule) => Object.freeze({ ...rule })));
  }

  static {
    rulesOf = (policy) => policy.#rules;
  }

  /**
   * The allow-list of these endpoints: the API URL and sandbox URL if given,
   * otherwise `api.<domain>` and the HTTPS hosts under `<domain>` (default
   * `e2b.app`). Throws a PolicyError for a URL that is not absolute http(s).
   */
  static forEndpoints({ apiUrl, sandboxUrl, domain } = {}) {
    const name = (domain ?? '').trim().replace(/\.+$/, '').toLowerCase() || DEFAULT_DOMAIN;
    const api = apiUrl
      ? exactRule('E2B_API_URL', apiUrl)
      : { https: true, host: `api.${name}`, port: 443 };
    const sandbox = sandboxUrl ? exactRule('E2B_SANDBOX_URL', sandboxUrl) : { domain: name };
    // One server often serves both (the local backend does).
    return new OutboundPolicy(ruleText(api) === ruleText(sandbox) ? [api] : [api, sandbox]);
  }

  /**
   * Whether a request to `authority` (`host[:port]`, as a `wasi:http`
   * request carries it) over HTTPS or plain HTTP may leave the host.
   */
  allows(https, authority) {
    // preview2-shim connects to exactly this host string (no URL
    // normalisation), so it is compared as it is, like the Rust host does.
    const parts =
      typeof authority === 'string' && /^([A-Za-z0-9.-]+)(?::(\d{1,5}))?$/.exec(authority);
    if (!parts) return false;
    const host = parts[1].replace(/\.+$/, '').toLowerCase();
    const port = parts[2] === undefined ? (https ? 443 : 80) : Number(parts[2]);
    return this.#rules.some((rule) =>
      rule.domain === undefined
        ? rule.https === https && rule.host === host && rule.port === port
        : // Sandbox hosts look like `49983-<sandbox-id>.<domain>`.
          https &&
          port === 443 &&
          host.length > rule.domain.length + 1 &&
          host.endsWith(`.${rule.domain}`),
    );
  }

  /** The allowed endpoints, e.g. `https://api.e2b.app:443, https://*.e2b.app:443`. */
  toString() {
    return this.#rules.map(ruleText).join(', ');
  }
}

/**
 * The allow-list the endpoints imply when the host gives none: each of the
 * API URL, sandbox URL and domain from `config` when set, else from `env`'s
 * `E2B_API_URL`, `E2B_SANDBOX_URL` and `E2B_DOMAIN` (as the Rust host's
 * `policy_for`).
 */
export function policyFor(config, env) {
  return OutboundPolicy.forEndpoints({
    apiUrl: config.apiUrl || env.E2B_API_URL,
    sandboxUrl: config.sandboxUrl || env.E2B_SANDBOX_URL,
    domain: config.domain || env.E2B_DOMAIN,
  });
}
