"""Lifecycle events from the installed package against the local server,
as the component reports them: in order with their fields (the first
``exec_start`` already carries the sandbox it created), while the call
still runs, a snapshot, forks, a sandbox killed behind the instance's back
(``gone``); from sync and async callbacks; callbacks that raise or never
return lose their events (counted) and nothing else."""

from __future__ import annotations

import asyncio
import textwrap
import threading
import time
from typing import List

import e2b_tools

from conftest import kill_behind_its_back, poll, run_python, sandboxes


def kinds(events: List[e2b_tools.Event]) -> List[str]:
    return [event.kind for event in events]


def test_events_arrive_in_order_with_their_fields(component, server):
    seen: List[e2b_tools.Event] = []
    e2b = component.instantiate(on_event=seen.append)
    secret = "marker-in-arguments-5521"
    assert e2b.call_tool("run_code", {"code": f"s = '{secret}'"})["success"]
    try:
        e2b.read_file("/home/user/missing.txt")
        raise AssertionError("read_file of a missing file succeeded")
    except e2b_tools.ToolError as err:
        assert err.kind == "not-found"
    assert e2b.call_tool("read_file", {"path": "missing.txt"})["success"] is False
    e2b.close()

    poll(lambda: len(seen), lambda n: n >= 8)
    assert kinds(seen) == [
        "sandbox_start",
        "exec_start",
        "exec_end",
        "exec_start",
        "exec_end",
        "exec_start",
        "exec_end",
        "sandbox_stop",
    ]
    created, start, first_end, _, typed_end, _, json_end, stop = seen
    sandbox = created.sandbox_id
    assert sandbox and created.detail == "created"
    # Told once the sandbox exists: the first call's start carries it.
    assert (start.tool, start.sandbox_id) == ("run_code", sandbox)
    assert (first_end.tool, first_end.success, first_end.sandbox_id) == ("run_code", True, sandbox)
    assert first_end.duration is not None and first_end.duration > 0
    assert (typed_end.tool, typed_end.success, typed_end.error_kind) == ("read_file", False, "not-found")
    assert (json_end.tool, json_end.success, json_end.error_kind) == ("read_file", False, "not-found")
    assert (stop.detail, stop.success, stop.sandbox_id) == ("shutdown", True, sandbox)
    assert stop.duration is not None and stop.duration > 0
    for event in seen:
        assert secret not in repr(event), event
        assert server["E2B_API_KEY"] not in repr(event), event
    assert e2b.dropped_events == 0
    assert [e.time for e in seen] == sorted(e.time for e in seen)


def test_a_call_is_told_while_it_runs(component):
    seen: List[e2b_tools.Event] = []
    e2b = component.instantiate(on_event=seen.append)
    call = threading.Thread(target=e2b.run_command, args=("sleep 3",))
    call.start()
    try:
        poll(lambda: kinds(seen), lambda k: "exec_start" in k)
        # Before the call returns: the component reported it as it began.
        assert call.is_alive()
        assert kinds(seen) == ["sandbox_start", "exec_start"]
        assert seen[1].sandbox_id == seen[0].sandbox_id
    finally:
        call.join()
        e2b.close()


def test_snapshots_and_forks_are_told_by_the_component(component):
    seen: List[e2b_tools.Event] = []
    e2b = component.instantiate(on_event=seen.append)
    e2b.configure(tools=["default", "create_snapshot", "fork_sandbox"])
    typed = e2b.create_snapshot()
    by_json = e2b.call_tool("create_snapshot", {})
    assert by_json["success"], by_json
    owned = e2b.fork_sandbox(count=1).sandbox_ids[0]
    kept = e2b.fork_sandbox(count=1, keep=True).sandbox_ids[0]
    sandbox = e2b.sandbox_id()
    e2b.close()
    try:
        poll(lambda: kinds(seen), lambda k: k.count("sandbox_stop") >= 3)
        snapshots = [e for e in seen if e.kind == "snapshot"]
        assert [(e.tool, e.sandbox_id, e.detail) for e in snapshots] == [
            ("create_snapshot", sandbox, typed.snapshot_id),
            ("create_snapshot", sandbox, by_json["snapshot_id"]),
        ]
        # Each after its call's end.
        for snapshot in snapshots:
            before = seen[seen.index(snapshot) - 1]
            assert (before.kind, before.tool, before.success) == ("exec_end", "create_snapshot", True)
        forks = [(e.sandbox_id, e.detail) for e in seen if e.kind == "sandbox_start"]
        assert forks == [(sandbox, "created"), (owned, "forked"), (kept, "forked")]
        # The fork made with `keep` lives on; the other ended with the instance.
        stops = [(e.sandbox_id, e.detail, e.success) for e in seen if e.kind == "sandbox_stop"]
        assert stops == [(owned, "shutdown", True), (kept, "released", False), (sandbox, "shutdown", True)]
        assert kept in sandboxes() and owned not in sandboxes()
    finally:
        kill_behind_its_back(kept)


def test_a_sandbox_killed_behind_the_instances_back_is_told_gone(component):
    seen: List[e2b_tools.Event] = []
    e2b = component.instantiate(on_event=seen.append)
    assert e2b.call_tool("run_command", {"command": "true"})["success"]
    sandbox = e2b.sandbox_id()
    kill_behind_its_back(sandbox)
    poll(lambda: len(seen), lambda n: n >= 3)
    del seen[:]
    result = e2b.call_tool("run_command", {"command": "true"})
    assert result["success"] is False, result
    e2b.close()
    poll(lambda: len(seen), lambda n: n >= 3)
    start, gone, end = seen
    assert (start.kind, start.tool, start.sandbox_id) == ("exec_start", "run_command", sandbox)
    assert (gone.kind, gone.sandbox_id, gone.detail, gone.success) == ("sandbox_stop", sandbox, "gone", False)
    assert gone.duration is not None and gone.duration > 0
    assert (end.kind, end.success, end.error_kind) == ("exec_end", False, "sandbox-expired")
    # Told once: the shutdown that found it gone says nothing more.
    assert len(seen) == 3, seen


def test_an_interrupted_call_is_told_once_and_its_dropped_instance_killed_mid_call(server):
    # A script catches the KeyboardInterrupt of a call still running in the
    # component, then drops the instance: its sandbox is killed through
    # another instance while the call runs on, and that call's own end,
    # when it comes, is not told again.
    script = textwrap.dedent(
        """
        import gc, os, signal, threading, time
        import e2b_tools
        seen = []
        e2b = e2b_tools.load(on_event=seen.append)
        threading.Timer(2.0, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        try:
            e2b.run_command("sleep 60", timeout_seconds=120)
        except KeyboardInterrupt:
            pass
        del e2b
        gc.collect()
        time.sleep(5)
        for e in seen:
            print(e.kind, e.tool, e.sandbox_id, e.detail, e.success, e.error_kind)
        """
    )
    done = run_python(script, env={}, timeout=120)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    lines = [line.split() for line in done.stdout.splitlines()]
    sandbox = lines[0][2]
    assert lines == [
        ["sandbox_start", "None", sandbox, "created", "None", "None"],
        ["exec_start", "run_command", sandbox, "None", "None", "None"],
        ["exec_end", "run_command", sandbox, "None", "False", "interrupted"],
        ["sandbox_stop", "None", sandbox, "dropped", "True", "None"],
    ], done.stdout


def test_a_raising_or_stuck_callback_breaks_nothing_and_is_counted(component):
    good: List[str] = []
    release = threading.Event()
    e2b = component.instantiate()
    raising = e2b.subscribe(lambda event: 1 / 0)
    stuck = e2b.subscribe(lambda event: release.wait())
    e2b.subscribe(lambda event: good.append(event.kind))
    started = time.monotonic()
    result = e2b.call_tool("run_command", {"command": "echo hi"})
    assert result["stdout"] == "hi\n", result
    e2b.close()
    # The stuck callback held no call up.
    assert time.monotonic() - started < 30
    poll(lambda: raising.dropped, lambda n: n >= 4)
    assert raising.dropped == 4 and raising.delivered == 0
    # Each subscriber has its own delivery thread: wait for this one too.
    poll(lambda: len(good), lambda n: n >= 4)
    assert good == ["sandbox_start", "exec_start", "exec_end", "sandbox_stop"]
    # The stuck one got one event (still inside it) and queued the rest.
    assert stuck.delivered == 0 and stuck.dropped == 0
    assert e2b.dropped_events == 4
    release.set()
    poll(lambda: stuck.delivered, lambda n: n >= 4)
    assert stuck.delivered == 4


def test_a_full_queue_drops_and_counts(component, monkeypatch):
    from e2b_tools import _events

    monkeypatch.setattr(_events, "QUEUE_CAPACITY", 2)
    release = threading.Event()
    e2b = component.instantiate()
    stuck = e2b.subscribe(lambda event: release.wait())
    assert e2b.call_tool("run_command", {"command": "true"})["success"]
    e2b.close()
    # One in the callback, two queued, the fourth dropped.
    poll(lambda: stuck.dropped, lambda n: n >= 1)
    assert stuck.dropped == 1 and e2b.dropped_events == 1
    release.set()


def test_async_callbacks_run_on_the_loop_they_were_subscribed_from(component):
    async def main() -> List[str]:
        seen: List[str] = []
        loop = asyncio.get_running_loop()
        on_loop: List[bool] = []

        async def callback(event: e2b_tools.Event) -> None:
            on_loop.append(asyncio.get_running_loop() is loop)
            await asyncio.sleep(0)
            seen.append(event.kind)

        async def never(event: e2b_tools.Event) -> None:
            await asyncio.Event().wait()

        e2b = component.instantiate(on_event=callback)
        e2b.subscribe(never)
        result = await asyncio.to_thread(e2b.call_tool, "run_code", {"code": "1 + 1"})
        assert result["text"] == "2"
        await asyncio.to_thread(e2b.close)
        for _ in range(200):
            if len(seen) >= 4:
                break
            await asyncio.sleep(0.05)
        assert all(on_loop) and on_loop
        return seen

    assert asyncio.run(main()) == ["sandbox_start", "exec_start", "exec_end", "sandbox_stop"]


def test_a_callback_that_is_not_callable_is_refused(component):
    e2b = component.instantiate()
    try:
        e2b.subscribe("print")  # type: ignore[arg-type]
        raise AssertionError("a str was accepted as a callback")
    except TypeError as err:
        assert "callable" in str(err)
