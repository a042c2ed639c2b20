"""No sandbox outlives its process: scripts that make a sandbox and never
close it (the end of the script, an instance dropped, an exception), or
get SIGTERM or SIGINT in the middle of a call (the one creating the
sandbox, or a later one), as it starts, or twice, leave no sandbox on the
server, and still end by the signal within 5 seconds; a handler the
script installed itself still runs. What an instance attached to
(``sandbox_id``) is left running at its end, unless ``kill_on_exit``; the
forks it made are killed."""

from __future__ import annotations

import gc
import signal
import subprocess
import textwrap
import time

import pytest

from conftest import poll, run_python, sandboxes, send_stop, spawn


def leaves_nothing(before):
    after = poll(sandboxes, lambda now: set(now) <= set(before), seconds=15)
    assert set(after) <= set(before), (before, after)


@pytest.mark.parametrize(
    "script",
    [
        # The one-liner: a temporary instance, never closed.
        'import e2b_tools\nprint(e2b_tools.load().call_tool("run_code", {"code": "x = 1"})["success"])',
        # Kept until the end of the script.
        "import e2b_tools\ne2b = e2b_tools.load()\nprint(e2b.run_command('true').exit_code == 0)",
        # Ended by an exception.
        "import e2b_tools\ne2b = e2b_tools.load()\nprint(e2b.call_tool('run_code', {'code': '1'})['success'])\n"
        "raise SystemExit(3)",
    ],
    ids=["temporary", "end-of-script", "exception"],
)
def test_a_script_that_never_closes_leaves_no_sandbox(server, script):
    before = sandboxes()
    done = run_python(script, env={}, timeout=120)
    assert done.stdout.strip() == "True", done.stderr
    assert done.returncode in (0, 3), done.stderr
    # Gone when the process is: no waiting for the sandbox's timeout.
    assert set(sandboxes()) <= set(before)


def test_an_instance_collected_without_close_has_its_sandbox_killed(component):
    e2b = component.instantiate()
    assert e2b.call_tool("run_command", {"command": "true"})["success"]
    sandbox = e2b.sandbox_id()
    seen = []
    e2b.subscribe(seen.append)
    del e2b
    gc.collect()
    # Killed while this process goes on, not only at its exit.
    assert sandbox not in poll(sandboxes, lambda now: sandbox not in now, seconds=15)
    poll(lambda: seen, lambda s: s)
    assert [(e.kind, e.detail, e.success) for e in seen] == [("sandbox_stop", "dropped", True)]


def sigterm_mid_call(extra: str = "") -> subprocess.Popen:
    script = textwrap.dedent(
        f"""
        import signal, sys
        import e2b_tools
        {extra}
        e2b = e2b_tools.load()
        e2b.run_command("true")
        print("ready", e2b.sandbox_id(), flush=True)
        e2b.run_code("import time; time.sleep(120)")
        print("the call returned", flush=True)
        """
    )
    return spawn(script)


def long_call(first: bool) -> subprocess.Popen:
    """A script whose long call (``sleep 60``) is its first (the one that
    creates the sandbox) or a later one."""
    script = textwrap.dedent(
        f"""
        import e2b_tools
        e2b = e2b_tools.load()
        if not {first}:
            e2b.run_command("true")
        print("calling", e2b.sandbox_id(), flush=True)
        e2b.run_command("sleep 60", timeout_seconds=120)
        print("the call returned", flush=True)
        """
    )
    return spawn(script)


def ended_by(child: subprocess.Popen, signum: int, started: float) -> str:
    """Waits for ``child``, which was sent ``signum``: it ended by that
    signal within 5 seconds, with no traceback but, for SIGINT with
    Python's own handler, the one of its KeyboardInterrupt. Returns its
    stdout."""
    out, err = child.communicate(timeout=30)
    took = time.monotonic() - started
    # Python ends a process whose KeyboardInterrupt went uncaught by
    # SIGINT (bpo-1054041), so both show as killed by their signal.
    assert child.returncode == -signum, (child.returncode, out, err)
    assert took < 5, (took, err)
    assert "Exception ignored" not in err and "Warning" not in err, err
    if signum == signal.SIGINT:
        assert err.count("Traceback") == 1 and err.rstrip().endswith("KeyboardInterrupt"), err
    else:
        assert err == "", err
    return out


@pytest.mark.parametrize("first", [True, False], ids=["first-call", "later-call"])
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_mid_call_kills_the_sandbox_and_still_ends_the_process(server, signum, first):
    before = set(sandboxes())
    child = long_call(first)
    line = child.stdout.readline().split()
    assert line[:1] == ["calling"], (line, child.stderr.read())
    if first:
        # The call being interrupted is the one that created the sandbox.
        assert line[1] == "None", line
        made = poll(sandboxes, lambda now: set(now) - before, seconds=60)
        (sandbox,) = set(made) - before
    else:
        sandbox = line[1]
        assert sandbox in sandboxes()
    time.sleep(1)  # well inside the 60-second call
    started = time.monotonic()
    child.send_signal(signum)
    out = ended_by(child, signum, started)
    assert "the call returned" not in out
    assert sandbox not in sandboxes()
    leaves_nothing(before)


@pytest.mark.parametrize("twice", [False, True], ids=["once", "twice"])
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_while_the_first_call_starts_leaves_no_sandbox(server, signum, twice):
    # Sent as the first call begins: its sandbox is being created (or not
    # yet), so the kill must wait for the component to report it.
    before = set(sandboxes())
    child = long_call(first=True)
    line = child.stdout.readline()
    assert line.startswith("calling"), (line, child.stderr.read())
    started = send_stop(child, signum, twice)
    ended_by(child, signum, started)
    leaves_nothing(before)


def test_a_sigterm_handler_of_the_script_still_runs(server):
    before = sandboxes()
    child = sigterm_mid_call(
        extra="signal.signal(signal.SIGTERM, lambda n, f: (print('own handler', flush=True), sys.exit(7)))"
    )
    line = child.stdout.readline()
    assert line.startswith("ready "), (line, child.stderr.read())
    time.sleep(1)
    child.send_signal(signal.SIGTERM)
    out, err = child.communicate(timeout=30)
    assert "own handler" in out, (out, err)
    assert child.returncode == 7, (child.returncode, out, err)
    leaves_nothing(before)


def test_an_ignored_sigterm_stays_ignored():
    done = run_python(
        "import signal, os, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nimport e2b_tools\n"
        "e2b = e2b_tools.load()\nos.kill(os.getpid(), signal.SIGTERM)\ntime.sleep(0.2)\nprint('alive')",
        env={},
    )
    assert done.stdout.strip() == "alive", done.stderr


@pytest.mark.parametrize("kill_on_exit", [False, True], ids=["left", "kill_on_exit"])
def test_an_attached_sandbox_is_left_at_exit_unless_told_and_forks_are_killed(component, kill_on_exit):
    owner = component.instantiate()
    try:
        sandbox = owner.prepare()
        script = textwrap.dedent(
            f"""
            import e2b_tools
            e2b = e2b_tools.load()
            e2b.configure(sandbox_id={sandbox!r}, tools="all", kill_on_exit={kill_on_exit})
            print(e2b.run_command("echo attached").stdout.strip(), flush=True)
            print(e2b.fork_sandbox(count=1).sandbox_ids[0], flush=True)
            """
        )
        done = run_python(script, env={}, timeout=120)
        assert done.returncode == 0, done.stderr
        attached, fork = done.stdout.split()
        assert attached == "attached", done.stdout
        # The kills at exit are done before the process ends.
        now = sandboxes()
        assert fork not in now, "the fork the instance made outlived it"
        if kill_on_exit:
            assert sandbox not in now
        else:
            assert sandbox in now
            assert owner.run_command("echo still here").stdout == "still here\n"
    finally:
        owner.close()
    assert sandbox not in sandboxes()


@pytest.mark.parametrize("kill_on_exit", [False, True], ids=["left", "kill_on_exit"])
def test_an_attached_sandbox_is_left_at_garbage_collection_unless_told(component, kill_on_exit):
    from e2b_tools import _reaper

    owner = component.instantiate()
    try:
        sandbox = owner.prepare()
        e2b = component.instantiate()
        e2b.configure(sandbox_id=sandbox, kill_on_exit=kill_on_exit)
        assert e2b.run_command("echo attached").stdout == "attached\n"
        seen = []
        e2b.subscribe(seen.append)
        del e2b
        gc.collect()
        # The collected instance's reaper thread ends once it has decided
        # (and killed, if it was told to).
        poll(lambda: [t for t in _reaper._running if t.is_alive()], lambda alive: not alive)
        if kill_on_exit:
            assert sandbox not in sandboxes()
            poll(lambda: seen, lambda s: s)
            assert [(e.kind, e.detail, e.success, e.sandbox_id) for e in seen] == [
                ("sandbox_stop", "dropped", True, sandbox)
            ]
        else:
            assert sandbox in sandboxes()
            assert owner.run_command("echo still here").stdout == "still here\n"
            assert seen == []
    finally:
        owner.close()
