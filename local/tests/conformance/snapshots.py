"""Snapshots, forks and idempotent creates through the official SDK:
`create_snapshot` (named and not, `mode="full"` served as the filesystem),
`list_snapshots` (in pages, by sandbox, by name), `Sandbox.create` from a
snapshot with its files and environment, `fork(count=2)` with files of
their own, `delete_snapshot` (then False, and a create from it refused
with 404), and `Sandbox.create(idempotency_key=...)` twice making one
sandbox. Prints `snapshot scenario passed`.
"""

import time

from e2b import Sandbox, SandboxException

tag = f"t{time.time_ns()}"
made = []


def step(name: str) -> None:
    print(f"ok: {name}", flush=True)


def create(*args, **kwargs) -> Sandbox:
    sbx = Sandbox.create(*args, **kwargs)
    made.append(sbx)
    return sbx


def all_pages(**query):
    pages = Sandbox.list_snapshots(limit=1, **query)
    items = []
    while pages.has_next:
        items += pages.next_items()
    return items


try:
    source = create(envs={"FROM_SOURCE": "source"}, timeout=120)
    source.files.make_dir("/home/user/app")
    source.files.write("/home/user/app/data.txt", "snapshot me")

    plain = source.create_snapshot()
    assert plain.snapshot_id.endswith(":default") and plain.names == [], plain
    name = f"conformance-{tag}"
    named = Sandbox.create_snapshot(source.sandbox_id, name=name, mode="full")
    assert named.snapshot_id == f"local/{name}:default", named
    assert named.names == [named.snapshot_id], named
    assert source.is_running()
    step("create_snapshot, named and not; the source runs on")

    listed = all_pages(sandbox_id=source.sandbox_id)
    assert [s.snapshot_id for s in listed] == [named.snapshot_id, plain.snapshot_id], listed
    by_name = Sandbox.list_snapshots(name=name).next_items()
    assert [s.snapshot_id for s in by_name] == [named.snapshot_id], by_name
    assert Sandbox.list_snapshots(name=f"local/{name}:default").next_items() == by_name
    assert Sandbox.list_snapshots(name=f"{name}-missing").next_items() == []
    assert [s.snapshot_id for s in source.list_snapshots().next_items()] == [
        named.snapshot_id,
        plain.snapshot_id,
    ]
    step("list_snapshots in pages, by sandbox and by name")

    for snapshot_id in (plain.snapshot_id, name):
        started = create(snapshot_id)
        assert started.files.read("/home/user/app/data.txt") == "snapshot me"
        env = started.commands.run("echo $FROM_SOURCE").stdout.strip()
        assert env == "source", env
    step("Sandbox.create from a snapshot, by id and by name, files and envs intact")

    forks = source.fork(count=2, timeout=60)
    assert len(forks) == 2 and all(isinstance(f, Sandbox) for f in forks), forks
    made.extend(forks)
    assert len({f.sandbox_id for f in forks} | {source.sandbox_id}) == 3
    forks[0].files.write("/home/user/app/data.txt", "changed in a fork")
    assert forks[1].files.read("/home/user/app/data.txt") == "snapshot me"
    assert source.files.read("/home/user/app/data.txt") == "snapshot me"
    assert all(f.is_running() for f in forks)
    step("fork(count=2): files of their own")

    assert Sandbox.delete_snapshot(plain.snapshot_id) is True
    assert Sandbox.delete_snapshot(plain.snapshot_id) is False
    try:
        Sandbox.create(plain.snapshot_id)
        raise AssertionError("a deleted snapshot started a sandbox")
    except SandboxException as err:
        assert "404" in str(err), err
    assert Sandbox.delete_snapshot(named.snapshot_id) is True
    assert Sandbox.list_snapshots(sandbox_id=source.sandbox_id).next_items() == []
    step("delete_snapshot, then False and a 404 create")

    key = f"conformance-{tag}"
    first = create(idempotency_key=key)
    again = create(idempotency_key=key)
    assert first.sandbox_id == again.sandbox_id
    step("an idempotency key makes one sandbox")
finally:
    for sbx in made:
        sbx.kill()

print("snapshot scenario passed")
