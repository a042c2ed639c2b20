"""The local backend, for a process that names no E2B server.

An instance whose environment has neither ``E2B_API_KEY`` nor
``E2B_API_URL``, and which is configured with none of ``api_key``,
``api_url``, ``sandbox_url`` or ``domain``, runs its sandboxes on this
machine: the first such instance starts a local server, once per process,
and every such instance is configured with its endpoints and key. The
server is ``$E2B_TOOLS_CLI local serve --ephemeral --stop-at-eof`` when that
variable names an ``e2b-tools`` CLI, else the ``e2b-local`` server this
package ships in its Linux x86-64 wheel (``e2b-local serve …``), else
``e2b-tools`` on ``PATH``. The server's standard input is a pipe from this process,
so when the process ends, however it ends, the server stops and its
sandboxes go with it; it keeps nothing.
"""

from __future__ import annotations

import os
import select
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Dict, List, Mapping, Optional

#: The variable naming the ``e2b-tools`` binary to start.
CLI_ENV = "E2B_TOOLS_CLI"
#: The local server the platform wheel ships (absent from the pure one).
BUNDLED = Path(__file__).parent / "_bin" / "e2b-local"
#: How long the server may take to print its endpoints (its self-test
#: starts a sandbox).
START_TIMEOUT = 60.0

_lock = threading.Lock()
_server: Optional[subprocess.Popen] = None
_endpoints: Dict[str, str] = {}


class LocalServerError(RuntimeError):
    """No E2B server is named and the local one cannot be started."""


def needed(env: Mapping[str, str]) -> bool:
    """Whether ``env`` names no E2B server (neither a key nor an API URL)."""
    return not env.get("E2B_API_KEY") and not env.get("E2B_API_URL")


def server_command() -> Optional[List[str]]:
    """The command that runs the local server until its stdin ends:
    ``$E2B_TOOLS_CLI``'s, else the bundled ``e2b-local``'s, else that of
    ``e2b-tools`` on ``PATH``; ``None`` without any."""
    flags = ["serve", "--ephemeral", "--stop-at-eof"]
    named = os.environ.get(CLI_ENV)
    if named:
        return [named, "local", *flags]
    if os.access(BUNDLED, os.X_OK):
        return [str(BUNDLED), *flags]
    cli = shutil.which("e2b-tools")
    return None if cli is None else [cli, "local", *flags]


def endpoints() -> Dict[str, str]:
    """The local server's ``E2B_API_URL``, ``E2B_SANDBOX_URL`` and
    ``E2B_API_KEY``, starting it the first time (or again, if it died)."""
    global _server, _endpoints
    with _lock:
        if _server is not None and _server.poll() is None:
            return dict(_endpoints)
        command = server_command()
        if command is None:
            raise LocalServerError(
                "no E2B_API_KEY is set, and no local server was found to run sandboxes on this "
                "machine: set E2B_API_KEY (https://e2b.dev/dashboard) to use E2B, or install "
                "the Linux x86-64 wheel (it ships one), or put the e2b-tools CLI on PATH (or "
                f"name it in ${CLI_ENV}) for local sandboxes"
            )
        _server, _endpoints = _start(command)
        return dict(_endpoints)


def server_pid() -> Optional[int]:
    """The local server's process id, if this process started one."""
    return None if _server is None else _server.pid


def _start(command: List[str]) -> "tuple[subprocess.Popen, Dict[str, str]]":
    # Its own E2B_* would confuse it; the rest of the environment it needs.
    env = {name: value for name, value in os.environ.items() if not name.startswith("E2B_")}
    # stderr to a file: a pipe nobody reads would stop it once full.
    log = tempfile.TemporaryFile()
    try:
        server = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            env=env,
            # Not in this process's group: a Ctrl-C reaches this process,
            # whose exit (the pipe's end) stops the server after this
            # process's own clean-up has used it.
            start_new_session=True,
        )
    except OSError as err:
        raise LocalServerError(f"cannot start the local server {command[0]!r}: {err}") from err
    assert server.stdout is not None
    found: Dict[str, str] = {}
    buffered = b""
    deadline = time.monotonic() + START_TIMEOUT
    names = ("E2B_API_URL", "E2B_SANDBOX_URL", "E2B_API_KEY")
    while not all(name in found for name in names):
        left = deadline - time.monotonic()
        ready, _, _ = select.select([server.stdout], [], [], max(left, 0))
        chunk = os.read(server.stdout.fileno(), 4096) if ready else b""
        if not chunk:
            server.kill()
            server.wait()
            log.seek(0)
            why = log.read().decode(errors="replace").strip() or "it printed nothing"
            raise LocalServerError(f"the local server ({' '.join(command[:-2])}) did not start: {why}")
        buffered += chunk
        *lines, buffered = buffered.split(b"\n")
        for line in lines:
            text = line.decode(errors="replace").strip()
            if text.startswith("export ") and "=" in text:
                name, value = text[len("export ") :].split("=", 1)
                found[name] = value.strip("'")
    return server, {name: found[name] for name in names}
