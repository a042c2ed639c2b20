"""The warm pool through the real component and the local server: an
instance taken from it runs in a sandbox made before it was taken; a
sandbox killed behind the pool's back is never handed out; the pool
refills; closing it, the end of the process, SIGTERM or SIGINT (while it
is making a sandbox, too, as it starts filling, and twice) leaves no
sandbox and ends the process by the signal within 5 seconds; the ADK
plugin takes its sandbox from a pool of its own options only."""

from __future__ import annotations

import json
import signal
import time

import pytest

import e2b_tools

from conftest import kill_behind_its_back as kill
from conftest import poll, run_python, sandboxes, send_stop, spawn


def waiting(pool: e2b_tools.WarmPool, n: int) -> None:
    stats = poll(lambda: pool.stats, lambda s: s.waiting >= n, seconds=60)
    assert stats.waiting >= n, stats


def test_a_taken_instance_runs_in_a_sandbox_made_ahead_and_the_pool_refills(component):
    with e2b_tools.WarmPool(1, component=component) as pool:
        waiting(pool, 1)
        made_ahead = sandboxes()
        e2b = pool.take()
        try:
            sandbox = e2b.sandbox_id()
            # No create on the first call's path: its sandbox was there before.
            assert sandbox in made_ahead
            result = e2b.call_tool("run_code", {"code": "print(6 * 7)"})
            assert result["success"], result
            assert e2b.sandbox_id() == sandbox
            stats = poll(lambda: pool.stats, lambda s: s.made >= 2 and s.waiting == 1, seconds=60)
            assert (stats.made, stats.waiting, stats.handed_out) == (2, 1, 1), stats
        finally:
            e2b.close()


def test_a_sandbox_killed_behind_the_pools_back_is_never_handed_out(component):
    with e2b_tools.WarmPool(1, component=component) as pool:
        waiting(pool, 1)
        (dead,) = set(sandboxes()) & {e2b.sandbox_id() for e2b in list(pool._waiting)}
        kill(dead)
        e2b = pool.take()
        try:
            assert e2b.sandbox_id() != dead
            result = e2b.call_tool("run_command", {"command": "echo alive"})
            assert result["success"] and result["stdout"] == "alive\n", result
            assert pool.stats.discarded == 1
        finally:
            e2b.close()


def test_closing_the_pool_kills_what_waits(component):
    before = set(sandboxes())
    pool = e2b_tools.WarmPool(2, component=component)
    waiting(pool, 2)
    made = set(sandboxes()) - before
    assert len(made) == 2
    pool.close()
    assert not made & set(sandboxes())
    # A closed pool still gives instances: fresh ones, as without a pool.
    e2b = pool.take()
    try:
        assert e2b.sandbox_id() is None
    finally:
        e2b.close()


@pytest.mark.parametrize("size", [0, 65, -1, True, "2"])
def test_a_size_out_of_range_is_refused(component, size):
    with pytest.raises(ValueError, match="a warm pool holds 1 to 64 sandboxes"):
        e2b_tools.WarmPool(size, component=component)


def test_bad_options_fail_at_construction_not_on_the_filler(component):
    with pytest.raises(ValueError, match="on_timeout must be one of kill, pause"):
        e2b_tools.WarmPool(1, component=component, on_timeout="explode")


def test_a_script_that_never_closes_its_pool_leaves_no_sandbox(server):
    before = set(sandboxes())
    script = (
        "import time, e2b_tools\n"
        "pool = e2b_tools.WarmPool(2)\n"
        "while pool.stats.waiting < 2: time.sleep(0.1)\n"
        "print(pool.take().call_tool('run_command', {'command': 'true'})['success'])\n"
    )
    done = run_python(script, env={}, timeout=120)
    assert done.stdout.strip() == "True", done.stderr
    assert done.returncode == 0, done.stderr
    assert set(sandboxes()) <= before


def test_the_adk_plugin_takes_its_sandbox_from_a_pool_of_its_options(component):
    from e2b_tools.adk import E2BPlugin

    with e2b_tools.WarmPool(1, component=component, timeout_seconds=120) as pool:
        with pytest.raises(ValueError, match="other options"):
            E2BPlugin(timeout=300, warm_pool=pool)
        waiting(pool, 1)
        made_ahead = sandboxes()
        plugin = E2BPlugin(timeout=120, warm_pool=pool)
        try:
            assert plugin._e2b.sandbox_id() in made_ahead
            (run_code,) = [tool for tool in plugin.get_tools() if tool.name == "run_code"]
            import asyncio

            result = asyncio.run(run_code.run_async(args={"code": "print(1 + 1)"}, tool_context=None))
            assert result["success"] and "2" in json.dumps(result), result
        finally:
            plugin._e2b.close()


@pytest.mark.parametrize(
    "when, twice",
    [("refilling", False), ("starting", False), ("starting", True)],
    ids=["refilling", "starting", "starting-twice"],
)
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_while_the_pool_fills_leaves_no_sandbox(server, signum, when, twice):
    before = set(sandboxes())
    script = (
        "import time, e2b_tools\n"
        "pool = e2b_tools.WarmPool(2)\n"
        # Refilling: the filler makes the replacement of the one taken.
        # Starting: it makes its first sandboxes.
        f"if {when == 'refilling'}:\n"
        "    while pool.stats.waiting < 2: time.sleep(0.05)\n"
        "    e2b = pool.take()\n"
        "print('ready', flush=True)\n"
        "time.sleep(120)\n"
    )
    child = spawn(script)
    line = child.stdout.readline()
    assert line.strip() == "ready", (line, child.stderr.read())
    started = send_stop(child, signum, twice)
    out, err = child.communicate(timeout=60)
    took = time.monotonic() - started
    assert child.returncode == -signum, (child.returncode, out, err)
    assert took < 5, (took, err)
    # No traceback but the KeyboardInterrupt's of Python's SIGINT handler.
    assert "Exception ignored" not in err, err
    assert err.count("Traceback") == (1 if signum == signal.SIGINT else 0), err
    left = poll(sandboxes, lambda now: set(now) <= before, seconds=15)
    assert set(left) <= before, err
