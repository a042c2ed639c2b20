"""No sandbox outlives its process: scripts that make a sandbox and never
close it (the end of the script, an instance dropped, an exception), or
get SIGTERM in the middle of a call, leave no sandbox on the server; a
handler the script installed itself still runs, and SIGTERM still ends
the process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import poll, run_python, sandboxes


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
    import gc

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
    return subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ
    )


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_mid_call_kills_the_sandbox_and_still_ends_the_process(server, signum):
    before = sandboxes()
    child = sigterm_mid_call()
    line = child.stdout.readline()
    assert line.startswith("ready "), (line, child.stderr.read())
    sandbox = line.split()[1]
    assert sandbox in sandboxes()
    time.sleep(1)  # well inside the 120-second call
    started = time.monotonic()
    child.send_signal(signum)
    out, err = child.communicate(timeout=30)
    # Ended by the signal, as without the package (Python ends an
    # uncaught KeyboardInterrupt by SIGINT), within a few seconds.
    assert child.returncode == -signum, (child.returncode, out, err)
    assert time.monotonic() - started < 15
    assert "the call returned" not in out
    assert sandbox not in sandboxes()
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
