// JavaScript kernel driver of the local code interpreter (Node).
//
// Same line protocol as the Python driver: JSON requests on stdin
// ({"op":"execute",code,env_vars,count} / {"op":"interrupt"}), MAGIC-prefixed
// JSON messages on stdout (ready, stdout, stderr, result, error, done) and a
// "mark" on stderr when an execution ends. A worker thread reads stdin so an
// interrupt arrives while synchronous code runs (it raises SIGINT, which
// vm's breakOnSigint turns into an exception).
'use strict';
const vm = require('vm');
const util = require('util');
const fs = require('fs');
const { Worker } = require('worker_threads');
const { Writable } = require('stream');

const MAGIC = '\x1eE2B\x1f';
// Node's own top-level-await rewriter and its parser (need --expose-internals).
let processTopLevelAwait = null;
try { ({ processTopLevelAwait } = require('internal/repl/await')); } catch (_) { /* no top-level await */ }
let acorn = null;
try { acorn = require('internal/deps/acorn/acorn/dist/acorn'); } catch (_) { /* no import statements */ }

// A module's default export as `import x from` sees it: a CommonJS module
// (Node's built-ins among them) is its own default.
function importDefault(mod) { return mod && mod.__esModule ? mod.default : mod; }

// A cell with `import` statements (as E2B's JavaScript kernel takes them),
// each rewritten into a `require` of the same module with the same names
// (`var`, so a cell run again redeclares nothing); null if the cell has
// none or does not parse as a module.
function rewriteImports(code) {
  if (!acorn) return null;
  let ast;
  try {
    ast = acorn.parse(code, { ecmaVersion: 'latest', sourceType: 'module', allowAwaitOutsideFunction: true });
  } catch (_) { return null; }
  const imports = ast.body.filter((node) => node.type === 'ImportDeclaration');
  if (!imports.length) return null;
  let out = '';
  let at = 0;
  for (const node of imports) {
    const from = `require(${JSON.stringify(node.source.value)})`;
    const parts = [];
    const named = [];
    for (const spec of node.specifiers) {
      if (spec.type === 'ImportDefaultSpecifier') parts.push(`var ${spec.local.name} = __e2bImportDefault(${from});`);
      else if (spec.type === 'ImportNamespaceSpecifier') parts.push(`var ${spec.local.name} = ${from};`);
      else if (spec.imported.name === 'default') parts.push(`var ${spec.local.name} = __e2bImportDefault(${from});`);
      else named.push(`${spec.imported.name ?? spec.imported.value}: ${spec.local.name}`);
    }
    if (named.length) parts.push(`var { ${named.join(', ')} } = ${from};`);
    if (!node.specifiers.length) parts.push(`${from};`);
    out += code.slice(at, node.start) + parts.join(' ');
    at = node.end;
  }
  return out + code.slice(at);
}
const CHUNK = 16384;

function writeAll(fd, text) {
  const buf = Buffer.from(text, 'utf8');
  let off = 0;
  while (off < buf.length) {
    try {
      off += fs.writeSync(fd, buf, off);
    } catch (e) {
      if (e.code !== 'EAGAIN') throw e;
    }
  }
}
function send(msg) { writeAll(1, MAGIC + JSON.stringify(msg) + '\n'); }

function streamOf(kind) {
  return new Writable({
    write(chunk, _enc, cb) {
      const text = chunk.toString('utf8');
      for (let i = 0; i < text.length; i += CHUNK) send({ type: kind, text: text.slice(i, i + CHUNK) });
      cb();
    },
  });
}
const userConsole = new console.Console({ stdout: streamOf('stdout'), stderr: streamOf('stderr') });

if (process.argv[1]) {
  try { process.chdir(process.argv[1]); } catch (e) { process.stderr.write(`cannot enter ${process.argv[1]}: ${e.message}\n`); }
}

const sandbox = {
  console: userConsole,
  require,
  process,
  Buffer,
  setTimeout, clearTimeout, setInterval, clearInterval, setImmediate, clearImmediate,
  queueMicrotask, structuredClone, URL, URLSearchParams, TextEncoder, TextDecoder,
  AbortController, fetch: globalThis.fetch,
  display: (...objs) => { for (const o of objs) send({ type: 'result', main: false, data: bundle(o) }); },
  __e2bImportDefault: importDefault,
};
sandbox.global = sandbox;
sandbox.globalThis = sandbox;
const context = vm.createContext(sandbox);

function bundle(value) {
  const data = { 'text/plain': util.inspect(value) };
  if (value && typeof value === 'object') {
    for (const [key, mime] of [['_repr_html_', 'text/html'], ['_repr_png_', 'image/png'], ['_repr_svg_', 'image/svg+xml'], ['_repr_markdown_', 'text/markdown']]) {
      if (typeof value[key] === 'function') {
        try {
          const v = value[key]();
          if (v != null) data[mime] = Buffer.isBuffer(v) ? v.toString('base64') : String(v);
        } catch (_) { /* a failing representation is just left out */ }
      }
    }
  }
  return data;
}

// The stack without the driver's own frames (everything from vm's entry on).
function userStack(err) {
  const lines = String(err.stack || `${err.name}: ${err.message}`).split('\n');
  const cut = lines.findIndex((l) => /\(node:vm:|\[eval\]|sigintHandlersWrap/.test(l));
  return (cut > 0 ? lines.slice(0, cut) : lines).join('\n');
}

function sendError(err) {
  if (err instanceof Error || (err && typeof err === 'object' && 'stack' in err)) {
    send({ type: 'error', name: String(err.name || 'Error'), value: String(err.message ?? ''), traceback: userStack(err) });
  } else {
    const value = util.inspect(err);
    send({ type: 'error', name: 'Error', value, traceback: `Uncaught ${value}` });
  }
}

let interruptAwait = null;
process.on('SIGINT', () => { if (interruptAwait) interruptAwait(); });

async function execute(req) {
  const envVars = req.env_vars || {};
  const saved = {};
  for (const k of Object.keys(envVars)) { saved[k] = process.env[k]; process.env[k] = String(envVars[k]); }
  try {
    const filename = `<cell-${req.count}>`;
    let script;
    let wrapped = false;
    let code = req.code || '';
    try {
      script = new vm.Script(code, { filename });
    } catch (err) {
      if (!err || err.name !== 'SyntaxError') throw err;
      // `import` statements: the same names from `require`.
      code = rewriteImports(code) ?? code;
      try {
        script = new vm.Script(code, { filename });
      } catch (err2) {
        // Top-level await: rewrite the cell the way Node's REPL does
        // (declarations hoisted so they persist, last value returned).
        const rewritten = err2 && err2.name === 'SyntaxError' && processTopLevelAwait
          ? processTopLevelAwait(code) : null;
        if (!rewritten) throw err;
        script = new vm.Script(rewritten, { filename });
        wrapped = true;
      }
    }
    let value = script.runInContext(context, { breakOnSigint: true, displayErrors: false });
    if (value && typeof value.then === 'function') {
      value = await Promise.race([
        value,
        new Promise((_, reject) => { interruptAwait = () => reject(Object.assign(new Error('Script execution interrupted.'), { name: 'Error' })); }),
      ]);
      if (wrapped) value = value && value.value;
    }
    if (value !== undefined) send({ type: 'result', main: true, data: bundle(value) });
  } catch (err) {
    sendError(err);
  } finally {
    interruptAwait = null;
    for (const k of Object.keys(saved)) { if (saved[k] === undefined) delete process.env[k]; else process.env[k] = saved[k]; }
  }
}

const reader = new Worker(`
  const { parentPort } = require('worker_threads');
  const fs = require('fs');
  const buf = Buffer.alloc(65536);
  let pending = '';
  for (;;) {
    let n;
    try { n = fs.readSync(0, buf, 0, buf.length, null); } catch (e) { if (e.code === 'EAGAIN') continue; break; }
    if (n === 0) break;
    pending += buf.toString('utf8', 0, n);
    let i;
    while ((i = pending.indexOf('\\n')) >= 0) {
      const line = pending.slice(0, i);
      pending = pending.slice(i + 1);
      let req;
      try { req = JSON.parse(line); } catch (_) { continue; }
      if (req.op === 'interrupt') process.kill(process.pid, 'SIGINT');
      else parentPort.postMessage(req);
    }
  }
  parentPort.postMessage(null);
`, { eval: true });

const queue = [];
let busy = false;
async function pump() {
  if (busy) return;
  busy = true;
  while (queue.length) {
    const req = queue.shift();
    if (req === null) process.exit(0);
    try { await execute(req); } catch (e) { send({ type: 'stderr', text: `kernel error: ${e}\n` }); }
    send({ type: 'done' });
    writeAll(2, MAGIC + JSON.stringify({ type: 'mark' }) + '\n');
  }
  busy = false;
}
reader.on('message', (req) => { queue.push(req); pump(); });
send({ type: 'ready' });
