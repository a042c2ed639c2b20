"""The component's behaviour through the package, beyond its API: a
background process's output paged with ``next_since`` (JSON and typed), a
long-running background command returning while it runs, the keep-alive
during a call longer than the sandbox timeout, and the JavaScript kernel.
(Moved here from the Python example's tests, which now test the example.)"""

from __future__ import annotations

import time
from typing import Any, Dict, Iterator, Optional

import pytest

import e2b_tools

from conftest import poll

# Prints a line to each stream, waits for the file `go`, prints another.
WAITS_FOR_GO = "echo first; echo oops >&2; while [ ! -e {go} ]; do sleep 0.1; done; echo second"


@pytest.fixture(scope="module")
def every(component: e2b_tools.ToolsComponent) -> Iterator[e2b_tools.E2BTools]:
    """One instance with all eight tools, for the module."""
    with component.instantiate() as instance:
        instance.configure(tools="all", timeout_seconds=120)
        yield instance


def test_background_output_through_call_tool_then_only_the_new_output(every):
    started = every.call_tool("start_background_command", {"command": WAITS_FOR_GO.format(go="go-json")})
    assert started["success"], started
    pid = started["pid"]

    def read(since: Optional[Dict[str, int]] = None) -> Dict[str, Any]:
        args: Dict[str, Any] = {"pid": pid} if since is None else {"pid": pid, "since": since}
        return every.call_tool("get_background_output", args)

    first = poll(read, lambda out: out.get("stdout") == "first\n" and out.get("stderr") == "oops\n")
    assert first == {
        "pid": pid,
        "state": "running",
        "exit_code": None,
        "stdout": "first\n",
        "stderr": "oops\n",
        "next_since": {"stdout": 6, "stderr": 5},
        "success": True,
    }
    # Nothing new yet.
    idle = read(first["next_since"])
    assert (idle["state"], idle["stdout"], idle["stderr"]) == ("running", "", ""), idle
    assert idle["next_since"] == first["next_since"]

    assert every.call_tool("run_command", {"command": "touch go-json"})["exit_code"] == 0
    done = poll(lambda: read(first["next_since"]), lambda out: out.get("state") == "exited")
    assert done == {
        "pid": pid,
        "state": "exited",
        "exit_code": 0,
        "stdout": "second\n",
        "stderr": "",
        "next_since": {"stdout": 13, "stderr": 5},
        "success": True,
    }
    # From the start again: all of it.
    assert read()["stdout"] == "first\nsecond\n"


def test_background_output_typed_with_since_from_next_since(every):
    pid = every.start_background_command(WAITS_FOR_GO.format(go="go-typed")).pid
    first = poll(lambda: every.get_background_output(pid), lambda out: out.stdout == "first\n")
    assert first == e2b_tools.ProcessOutput(
        pid=pid,
        state="running",
        exit_code=None,
        stdout="first\n",
        stderr="oops\n",
        next_since=e2b_tools.OutputOffsets(stdout=6, stderr=5),
    )
    every.run_command("touch go-typed")
    done = poll(lambda: every.get_background_output(pid, since=first.next_since), lambda out: out.state == "exited")
    assert (done.state, done.exit_code, done.stdout, done.stderr, done.next_since) == (
        "exited",
        0,
        "second\n",
        "",
        e2b_tools.OutputOffsets(stdout=13, stderr=5),
    )
    # An offset past the end reads nothing.
    assert every.get_background_output(pid, since=e2b_tools.OutputOffsets(13, 5)).stdout == ""


def test_a_long_running_background_command_returns_a_pid_while_it_runs(e2b):
    started = time.monotonic()
    result = e2b.call_tool("start_background_command", {"command": "sleep 30", "timeout": 10})
    assert result["success"], result
    assert isinstance(result["pid"], int) and result["pid"] > 0, result
    assert result.get("readiness") is None, result
    assert time.monotonic() - started < 5

    typed = e2b.start_background_command("sleep 30", timeout_seconds=10)
    assert typed.pid > 0 and typed.readiness is None, typed


def test_a_call_longer_than_the_sandbox_timeout_keeps_the_sandbox_alive(e2b):
    e2b.configure(timeout_seconds=4)
    result = e2b.call_tool("run_code", {"code": "import time\ntime.sleep(8)\nprint('alive')"})
    assert result.get("stdout") == "alive\n", result
    assert e2b.call_tool("run_command", {"command": "true"})["success"]


def test_the_javascript_kernel_values_console_output_state_and_errors(e2b):
    def js(code: str, language: str = "javascript") -> Dict[str, Any]:
        return e2b.call_tool("run_code", {"code": code, "language": language})

    assert js("1 + 1", "js") == {"stdout": "", "stderr": "", "text": "2", "error": "", "success": True}
    assert js("console.log(6 * 7)") == {"stdout": "42\n", "stderr": "", "text": "", "error": "", "success": True}
    first = js('let n = 40; console.error("to stderr"); n + 2')
    assert (first["stderr"], first["text"]) == ("to stderr\n", "42"), first
    assert js("n * 2")["text"] == "80"
    # As in e2b-adk, an exception is a successful call with `error` set: the
    # name and value, then the stack.
    thrown = js("null.x")
    assert thrown["success"], thrown
    assert thrown["error"].startswith("TypeError: Cannot read properties of null (reading 'x')\n"), thrown
    assert thrown["text"] == ""
