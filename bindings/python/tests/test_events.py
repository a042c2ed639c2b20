"""Lifecycle events from the installed package against the local server:
in order with their fields, from sync and async callbacks; callbacks that
raise or never return lose their events (counted) and nothing else."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import List

import e2b_tools

from conftest import poll


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
        "exec_start",
        "sandbox_start",
        "exec_end",
        "exec_start",
        "exec_end",
        "exec_start",
        "exec_end",
        "sandbox_stop",
    ]
    start, created, first_end, _, typed_end, _, json_end, stop = seen
    sandbox = created.sandbox_id
    assert sandbox and created.detail == "created"
    assert (start.tool, start.sandbox_id) == ("run_code", None)
    assert (first_end.tool, first_end.success, first_end.sandbox_id) == ("run_code", True, sandbox)
    assert first_end.duration is not None and first_end.duration > 0
    assert (typed_end.tool, typed_end.success, typed_end.error_kind) == ("read_file", False, "not-found")
    assert (json_end.tool, json_end.success) == ("read_file", False)
    assert (stop.detail, stop.success, stop.sandbox_id) == ("shutdown", True, sandbox)
    assert stop.duration is not None and stop.duration > 0
    for event in seen:
        assert secret not in repr(event), event
        assert server["E2B_API_KEY"] not in repr(event), event
    assert e2b.dropped_events == 0
    assert [e.time for e in seen] == sorted(e.time for e in seen)


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
    assert good == ["exec_start", "sandbox_start", "exec_end", "sandbox_stop"]
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

    assert asyncio.run(main()) == ["exec_start", "sandbox_start", "exec_end", "sandbox_stop"]


def test_a_callback_that_is_not_callable_is_refused(component):
    e2b = component.instantiate()
    try:
        e2b.subscribe("print")  # type: ignore[arg-type]
        raise AssertionError("a str was accepted as a callback")
    except TypeError as err:
        assert "callable" in str(err)
