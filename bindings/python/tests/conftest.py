"""Fixtures: the local server run-tests started (its E2B_* variables), a
compiled component with a private cache, a look at the server's sandboxes,
and helpers the test modules share."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, TypeVar

import pytest

import e2b_tools

T = TypeVar("T")

#: e2b-adk's six tools, the default catalog.
SIX = ["run_code", "run_command", "write_file", "read_file", "list_files", "start_background_command"]
#: The background tools, opt-in.
BACKGROUND = ["get_background_output", "stop_background_command"]
#: The opt-in tools that ``tools="all"`` adds.
OPT_IN = BACKGROUND + ["create_snapshot", "fork_sandbox"]


@pytest.fixture(scope="session")
def server() -> dict:
    """The local server's E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY."""
    env = {name: os.environ.get(name, "") for name in ("E2B_API_URL", "E2B_SANDBOX_URL", "E2B_API_KEY")}
    if not all(env.values()):
        pytest.skip("set E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY (bindings/python/run-tests does)")
    return env


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A compile cache of the test session's own."""
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="session")
def component(server: dict, cache_dir: Path) -> e2b_tools.ToolsComponent:
    """The packaged component, compiled once for the session."""
    return e2b_tools.ToolsComponent(cache_dir=cache_dir)


@pytest.fixture
def e2b(component: e2b_tools.ToolsComponent) -> Iterator[e2b_tools.E2BTools]:
    """A fresh instance (and so a fresh sandbox), shut down afterwards."""
    with component.instantiate() as instance:
        yield instance


def sandboxes() -> List[str]:
    """The IDs of the local server's running sandboxes."""
    request = urllib.request.Request(
        os.environ["E2B_API_URL"].rstrip("/") + "/sandboxes",
        headers={"X-API-Key": os.environ["E2B_API_KEY"]},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return sorted(entry["sandboxID"] for entry in json.load(response))


def kill_behind_its_back(sandbox: str) -> None:
    """Kills a sandbox through the server's API, as someone else would."""
    request = urllib.request.Request(
        os.environ["E2B_API_URL"].rstrip("/") + f"/sandboxes/{sandbox}",
        headers={"X-API-Key": os.environ["E2B_API_KEY"]},
        method="DELETE",
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status in (200, 204)


def _stop_signals_by_default() -> None:
    # A suite started in the background (a shell's `&`, some CI runners)
    # inherits SIGINT ignored, and Python keeps an ignored SIGINT: the
    # child gets the defaults a program in a terminal has.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def spawn(code: str) -> subprocess.Popen:
    """Starts ``code`` in a fresh Python process (this one's environment,
    SIGINT and SIGTERM at their defaults), its stdout and stderr piped as
    text."""
    return subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ,
        preexec_fn=_stop_signals_by_default,
    )


def run_python(code: str, *, env: Dict[str, Optional[str]], timeout: float = 300) -> subprocess.CompletedProcess:
    """Runs ``code`` in a fresh Python process, in this one's environment
    with ``env`` added (a None value removes the variable); its stdout and
    stderr are captured as text."""
    merged = {**os.environ, **env}
    return subprocess.run(
        [sys.executable, "-c", code],
        env={name: value for name, value in merged.items() if value is not None},
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=_stop_signals_by_default,
    )


def poll(read: Callable[[], T], done: Callable[[T], Any], seconds: float = 15.0) -> T:
    """Calls ``read()`` until ``done(answer)`` or ``seconds`` pass; returns
    the last answer."""
    deadline = time.monotonic() + seconds
    while True:
        answer = read()
        if done(answer) or time.monotonic() > deadline:
            return answer
        time.sleep(0.2)


class Ticker:
    """Counts the event loop's turns: a coroutine that wakes every
    ``period`` seconds while started; a blocked loop counts none."""

    def __init__(self, period: float) -> None:
        self.period = period
        self.ticks = 0
        self._task: Optional[asyncio.Future] = None

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.period)
            self.ticks += 1

    def start(self) -> None:
        self._task = asyncio.ensure_future(self._run())

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()


def send_stop(child: Any, signum: int, twice: bool = False) -> float:
    """Sends ``signum`` to ``child`` (``twice``: again 50 ms later), 50 ms
    after it said it was ready; when it was first sent (monotonic)."""
    time.sleep(0.05)
    started = time.monotonic()
    child.send_signal(signum)
    if twice:
        time.sleep(0.05)
        child.send_signal(signum)
    return started
