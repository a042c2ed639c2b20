// A sandbox is a whole machine, through the official E2B JavaScript SDK
// (`e2b`, the version package.json pins): root writes /opt (kept by a
// snapshot and a fork), root's relative paths are under /root, metrics keep
// to their window, a filesystem-only pause (keepMemory: false) cold-boots
// with a new boot id while a memory pause keeps its processes. Run by the
// Rust test `js_sdk_machine`; prints `OK <n> checks` at the end.

import assert from 'node:assert/strict'

import { CommandExitError, Sandbox } from 'e2b'

let checks = 0
function eq(actual, expected, message) {
  assert.deepStrictEqual(actual, expected, message)
  checks++
}

const made = []
async function create(...args) {
  const sbx = await Sandbox.create(...args)
  made.push(sbx)
  return sbx
}

const asRoot = { user: 'root' }
const BOOT = '/proc/sys/kernel/random/boot_id'

async function out(sbx, cmd, opts = {}) {
  return (await sbx.commands.run(cmd, opts)).stdout
}

async function alive(sbx) {
  try {
    await sbx.commands.run("pgrep -f 'sleep 4343'")
    return true
  } catch (e) {
    if (e instanceof CommandExitError) return false
    throw e
  }
}

async function main() {
  const sbx = await create()
  await sbx.files.write('/opt/js/data.txt', 'from js', asRoot)
  eq(await out(sbx, 'cat /opt/js/data.txt'), 'from js', 'root writes /opt')
  await sbx.files.write('relative.txt', 'root', asRoot)
  eq(await out(sbx, 'cat /root/relative.txt', asRoot), 'root', "root's relative paths")
  eq((await out(sbx, 'pwd', asRoot)).trim(), '/root', "root's working directory")

  const longAgo = new Date('2001-01-01T00:00:00Z')
  const window = { start: longAgo, end: new Date('2001-01-02T00:00:00Z') }
  eq(await sbx.getMetrics(window), [], 'no metrics before the sandbox was')
  eq((await sbx.getMetrics()).length, 1, 'a sample now')

  const snapshot = await sbx.createSnapshot()
  const [fork] = await sbx.fork({ count: 1, timeoutMs: 60_000 })
  made.push(fork)
  eq(await fork.files.read('/opt/js/data.txt'), 'from js', 'the fork has it')
  const copy = await create(snapshot.snapshotId)
  eq(await copy.files.read('/opt/js/data.txt'), 'from js', 'the snapshot has it')

  // A memory pause keeps processes and the boot; a filesystem-only one does not.
  await sbx.commands.run('sleep 4343', { background: true })
  const boot = await out(sbx, `cat ${BOOT}`)
  await sbx.pause()
  await sbx.connect()
  eq([await alive(sbx), await out(sbx, `cat ${BOOT}`)], [true, boot], 'a memory pause')
  await sbx.pause({ keepMemory: false })
  await sbx.connect()
  eq(await alive(sbx), false, 'a filesystem-only pause: the process is gone')
  assert.notEqual(await out(sbx, `cat ${BOOT}`), boot, 'and the boot id is new')
  eq(await sbx.files.read('/opt/js/data.txt'), 'from js', 'the files stay')
  await Sandbox.deleteSnapshot(snapshot.snapshotId)
}

try {
  await main()
} finally {
  for (const sbx of made) {
    await sbx.kill()
  }
}
console.log(`OK ${checks} checks`)
