// Snapshots and forks through the official E2B JavaScript SDK (`e2b`, the
// version package.json pins): createSnapshot (named and not),
// listSnapshots (in pages, by sandbox, by name), Sandbox.create from a
// snapshot with its files, fork({ count: 2 }) with files of their own, and
// deleteSnapshot (then false). Run by the Rust test `js_sdk_snapshots`;
// prints `OK <n> checks` at the end.

import assert from 'node:assert/strict'

import { Sandbox } from 'e2b'

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

async function allPages(opts) {
  const pages = Sandbox.listSnapshots({ ...opts, limit: 1 })
  const items = []
  while (pages.hasNext) {
    items.push(...(await pages.nextItems()))
  }
  return items.map((s) => s.snapshotId)
}

async function main() {
  const source = await create({ timeoutMs: 120_000 })
  await source.files.write('/home/user/data.txt', 'from js')
  const plain = await source.createSnapshot()
  eq(plain.names, [], 'an unnamed snapshot has no names')
  const name = `js-${Date.now()}`
  const named = await Sandbox.createSnapshot(source.sandboxId, { name })
  eq(named, { snapshotId: `local/${name}:default`, names: [`local/${name}:default`] }, 'named')
  eq(await allPages({ sandboxId: source.sandboxId }), [named.snapshotId, plain.snapshotId], 'pages')
  const byName = await Sandbox.listSnapshots({ name }).nextItems()
  eq(byName.map((s) => s.snapshotId), [named.snapshotId], 'by name')

  const started = await create(named.snapshotId)
  eq(await started.files.read('/home/user/data.txt'), 'from js', 'a sandbox from a snapshot')

  const forks = await source.fork({ count: 2, timeoutMs: 60_000 })
  eq(forks.length, 2, 'two forks')
  for (const fork of forks) {
    assert.ok(fork instanceof Sandbox, `a fork failed: ${fork}`)
    made.push(fork)
  }
  await forks[0].files.write('/home/user/data.txt', 'changed')
  eq(await forks[1].files.read('/home/user/data.txt'), 'from js', 'forks apart')
  eq(await source.files.read('/home/user/data.txt'), 'from js', 'the source apart')

  eq(await Sandbox.deleteSnapshot(plain.snapshotId), true, 'deleted')
  eq(await Sandbox.deleteSnapshot(plain.snapshotId), false, 'deleted already')
  eq(await Sandbox.deleteSnapshot(named.snapshotId), true, 'named deleted')
  eq(await source.listSnapshots().nextItems(), [], 'none left')
}

try {
  await main()
} finally {
  for (const sbx of made) {
    await sbx.kill()
  }
}
console.log(`OK ${checks} checks`)
