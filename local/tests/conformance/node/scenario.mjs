// Conformance scenario: the official E2B JavaScript SDKs (`e2b` and
// `@e2b/code-interpreter`, versions pinned in package.json) against the
// local server.
//
// Run with E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY pointing at the
// server (the Rust test `conformance_js` does this) after `npm ci` here.
// Exits non-zero on the first failed check; prints `OK <n> checks` at the end.

import assert from 'node:assert/strict'
import { createHash, randomUUID } from 'node:crypto'

import {
  Sandbox,
  CommandExitError,
  FileType,
  NotFoundError,
  SandboxNotFoundError,
} from '@e2b/code-interpreter'

for (const name of ['E2B_API_URL', 'E2B_SANDBOX_URL', 'E2B_API_KEY']) {
  if (!process.env[name]) {
    console.error(`scenario: ${name} is not set (point it at the local server)`)
    process.exit(2)
  }
}
if ((process.env.E2B_DEBUG || '').toLowerCase() === 'true') {
  console.error('scenario: unset E2B_DEBUG (the SDK fakes sandboxes in debug mode)')
  process.exit(2)
}

let checks = 0
let current = 'start'

/** Runs one named step; its assertions count as checks. */
async function step(name, fn) {
  current = name
  await fn()
  console.log(`ok: ${name}`)
}

function ok(value, message) {
  assert.ok(value, message)
  checks++
}

function eq(actual, expected, message) {
  assert.deepStrictEqual(actual, expected, message)
  checks++
}

/** Awaits `promise`, which must reject with an instance of `type`. */
async function rejects(promise, type, message) {
  let error
  try {
    await promise
  } catch (e) {
    error = e
  }
  assert.ok(error !== undefined, `${message}: did not throw`)
  assert.ok(error instanceof type, `${message}: threw ${error?.constructor?.name}: ${error?.message}`)
  checks++
  return error
}

const tag = randomUUID().replaceAll('-', '')
const suite = `conformance-js-${tag}`
let sbx
let other

async function main() {
  await step('create with metadata', async () => {
    sbx = await Sandbox.create({ metadata: { suite, tag }, timeoutMs: 120_000 })
    other = await Sandbox.create({ metadata: { suite, tag: 'other' }, timeoutMs: 120_000 })
    ok(typeof sbx.sandboxId === 'string' && sbx.sandboxId.length > 0, `sandbox id ${sbx.sandboxId}`)
    ok(sbx.sandboxId !== other.sandboxId, 'two distinct sandboxes')
    const info = await sbx.getInfo()
    eq(info.sandboxId, sbx.sandboxId, 'getInfo id')
    eq(info.metadata, { suite, tag }, 'getInfo metadata')
    eq(info.state, 'running', 'getInfo state')
  })

  await step('list by metadata', async () => {
    const found = await Sandbox.list({ query: { metadata: { tag } } }).nextItems()
    eq(found.map((s) => s.sandboxId), [sbx.sandboxId], 'list by tag')
    eq(found[0].metadata, { suite, tag }, 'listed metadata')
    const both = await Sandbox.list({ query: { metadata: { suite } } }).nextItems()
    eq(new Set(both.map((s) => s.sandboxId)), new Set([sbx.sandboxId, other.sandboxId]), 'list by suite')
    const none = await Sandbox.list({ query: { metadata: { tag: `none-${tag}` } } }).nextItems()
    eq(none, [], 'list by an unused value')
  })

  await step('connect by id', async () => {
    const again = await Sandbox.connect(sbx.sandboxId)
    eq(again.sandboxId, sbx.sandboxId, 'connected id')
    eq((await again.commands.run('echo connected')).stdout, 'connected\n', 'command through the connection')
  })

  await step('commands.run with stdout/stderr callbacks', async () => {
    const out = []
    const err = []
    const r = await sbx.commands.run('echo one; echo two >&2; echo three', {
      onStdout: (d) => out.push(d),
      onStderr: (d) => err.push(d),
    })
    eq(r.exitCode, 0, 'exit code')
    eq(r.stdout, 'one\nthree\n', 'stdout')
    eq(r.stderr, 'two\n', 'stderr')
    eq(out.join(''), 'one\nthree\n', 'onStdout data')
    eq(err.join(''), 'two\n', 'onStderr data')
    const env = await sbx.commands.run('echo $LOCAL_VAR; pwd', { envs: { LOCAL_VAR: 'local' } })
    eq(env.stdout, 'local\n/home/user\n', 'command envs and working directory')
  })

  await step('a failing command throws CommandExitError', async () => {
    const e = await rejects(sbx.commands.run('echo out; echo err >&2; exit 3'), CommandExitError, 'exit 3')
    eq(e.exitCode, 3, 'exitCode')
    eq(e.stdout, 'out\n', 'stdout of the failed command')
    eq(e.stderr, 'err\n', 'stderr of the failed command')
  })

  await step('background command and kill of its handle', async () => {
    const h = await sbx.commands.run('sleep 100', { background: true })
    ok(h.pid > 0, `pid ${h.pid}`)
    const pids = (await sbx.commands.list()).map((p) => p.pid)
    ok(pids.includes(h.pid), `${h.pid} in ${pids}`)
    eq(await h.kill(), true, 'kill of a running command')
    const e = await rejects(h.wait(), CommandExitError, 'wait of a killed command')
    eq(e.exitCode, -1, 'killed exit code')
    await new Promise((r) => setTimeout(r, 300))
    ok(!(await sbx.commands.list()).some((p) => p.pid === h.pid), 'killed command is gone from the list')
    eq(await sbx.commands.kill(h.pid), false, 'kill of a finished command')
  })

  await step('stdin: sendStdin then wait', async () => {
    const h = await sbx.commands.run('cat', { background: true, stdin: true })
    await sbx.commands.sendStdin(h.pid, 'hello ')
    await h.sendStdin('stdin\n')
    await h.closeStdin()
    const r = await h.wait()
    eq(r.exitCode, 0, 'cat exit code')
    eq(r.stdout, 'hello stdin\n', 'cat echoed stdin')
  })

  await step('files: text, binary, list, exists, makeDir, rename, remove', async () => {
    const info = await sbx.files.write('/home/user/dir/a.txt', 'héllo wörld')
    eq(info.path, '/home/user/dir/a.txt', 'written path')
    eq(await sbx.files.read('/home/user/dir/a.txt'), 'héllo wörld', 'text read')
    eq(await sbx.files.read('dir/a.txt'), 'héllo wörld', 'relative read')

    const bytes = new Uint8Array(256 * 4)
    for (let i = 0; i < bytes.length; i++) bytes[i] = i % 256
    await sbx.files.write('/home/user/bin.dat', bytes)
    const back = await sbx.files.read('/home/user/bin.dat', { format: 'bytes' })
    ok(back instanceof Uint8Array, `bytes read is a Uint8Array, not ${back?.constructor?.name}`)
    eq(back.length, bytes.length, 'binary length')
    const diff = bytes.findIndex((b, i) => back[i] !== b)
    eq(diff, -1, `every byte value 0..255 round-trips (first difference at ${diff}: ${back[diff]} for ${bytes[diff]})`)
    eq(
      (await sbx.commands.run('sha256sum /home/user/bin.dat | cut -c1-64')).stdout.trim(),
      createHash('sha256').update(bytes).digest('hex'),
      'the sandbox sees the same bytes',
    )

    const entries = await sbx.files.list('/home/user/dir')
    eq(entries.map((e) => [e.name, e.type]), [['a.txt', FileType.FILE]], 'list')
    eq(await sbx.files.exists('/home/user/dir/a.txt'), true, 'exists')
    eq(await sbx.files.exists('/home/user/dir/nope.txt'), false, 'does not exist')
    eq(await sbx.files.makeDir('/home/user/newdir'), true, 'makeDir')
    eq(await sbx.files.makeDir('/home/user/newdir'), false, 'makeDir of an existing directory')
    ok(
      (await sbx.files.list('/home/user')).some((e) => e.name === 'newdir' && e.type === FileType.DIR),
      'new directory listed',
    )
    const moved = await sbx.files.rename('/home/user/dir/a.txt', '/home/user/newdir/b.txt')
    eq(moved.path, '/home/user/newdir/b.txt', 'renamed path')
    eq(await sbx.files.exists('/home/user/newdir/b.txt'), true, 'rename target exists')
    eq(await sbx.files.exists('/home/user/dir/a.txt'), false, 'rename source gone')
    eq(await sbx.files.read('/home/user/newdir/b.txt'), 'héllo wörld', 'renamed content')
    await sbx.files.remove('/home/user/newdir')
    eq(await sbx.files.exists('/home/user/newdir'), false, 'removed directory')
    await rejects(sbx.files.read('/home/user/missing.txt'), NotFoundError, 'read of a missing file')
  })

  await step('runCode keeps state; JavaScript; logs; errors', async () => {
    let ex = await sbx.runCode("x = 41\nprint('hi')")
    eq(ex.error, undefined, 'no error')
    eq(ex.logs.stdout.join(''), 'hi\n', 'stdout in logs')
    ex = await sbx.runCode('x + 1')
    eq(ex.text, '42', 'state across calls')

    const streamed = []
    ex = await sbx.runCode("import sys\nprint('out')\nprint('err', file=sys.stderr)", {
      onStdout: (m) => streamed.push(m.line),
    })
    eq(ex.logs.stdout.join(''), 'out\n', 'stdout log')
    eq(ex.logs.stderr.join(''), 'err\n', 'stderr log')
    eq(streamed.join(''), 'out\n', 'onStdout of runCode')

    ex = await sbx.runCode('const y = 20; console.log("js says", y); y * 2 + 2', { language: 'js' })
    eq(ex.error, undefined, `no JavaScript error: ${JSON.stringify(ex.error)}`)
    eq(ex.logs.stdout.join(''), 'js says 20\n', 'JavaScript stdout')
    eq(ex.text, '42', 'JavaScript result')

    ex = await sbx.runCode('1 / 0')
    ok(ex.error !== undefined, 'an error result')
    eq(ex.error.name, 'ZeroDivisionError', 'error name')
    eq(ex.error.value, 'division by zero', 'error value')
    ok(ex.error.traceback.includes('ZeroDivisionError'), 'traceback')
  })

  await step('kill; connect of the killed id fails', async () => {
    const id = sbx.sandboxId
    eq(await sbx.isRunning(), true, 'running before kill')
    await sbx.kill()
    eq(await sbx.isRunning(), false, 'not running after kill')
    await rejects(Sandbox.connect(id), SandboxNotFoundError, 'connect of a killed sandbox')
    eq(await Sandbox.kill(id), false, 'second kill')
    await other.kill()
    eq(await Sandbox.list({ query: { metadata: { suite } } }).nextItems(), [], 'no sandbox of the suite left')
  })
}

try {
  await main()
} catch (e) {
  console.error(`FAILED at step "${current}" after ${checks} checks:`)
  console.error(e?.stack ?? e)
  for (const s of [sbx, other]) await s?.kill().catch(() => {})
  process.exit(1)
}
console.log(`OK ${checks} checks`)
process.exit(0)
