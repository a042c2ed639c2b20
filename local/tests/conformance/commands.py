"""Commands as E2B's own SDK tests expect them, through the official SDK:
environment variables scoped to one command, input streamed to a
command (`StreamInput`), a background command killed
through the async SDK, a sandbox killed under a running command, and pause
keeping what runs (a background server, the kernel's variables).
Prints `commands scenario passed`.
"""

import asyncio
import threading
import time

from e2b import AsyncSandbox, Sandbox
from e2b_code_interpreter import Sandbox as CodeSandbox
from e2b.exceptions import SandboxNotFoundException, SandboxNotRunningException


def scoped_envs() -> None:
    sandbox = Sandbox.create(envs={"GLOBAL_VAR": "everywhere"})
    try:
        ran = sandbox.commands.run('echo "$SCOPED_VAR|$GLOBAL_VAR"', envs={"SCOPED_VAR": "once"})
        assert ran.stdout == "once|everywhere\n", ran.stdout
        again = sandbox.commands.run('echo "${SCOPED_VAR:-unset}|$GLOBAL_VAR"')
        assert again.stdout == "unset|everywhere\n", again.stdout
    finally:
        sandbox.kill()


async def async_background_kill() -> None:
    sandbox = await AsyncSandbox.create()
    try:
        handle = await sandbox.commands.run("sleep 321", background=True)
        listed = [p.pid for p in await sandbox.commands.list()]
        assert handle.pid in listed, listed
        assert await handle.kill() is True
        result = None
        try:
            result = await handle.wait()
        except Exception as err:  # CommandExitError: killed by SIGKILL
            result = err
        assert getattr(result, "exit_code", None) != 0, result
        listed = [p.pid for p in await sandbox.commands.list()]
        assert handle.pid not in listed, listed
        # A second kill of a finished process answers False, not an error.
        assert await sandbox.commands.kill(handle.pid) is False
    finally:
        await sandbox.kill()


def killed_under_a_command() -> None:
    sandbox = Sandbox.create()
    outcome = {}

    def run() -> None:
        try:
            sandbox.commands.run("sleep 60", timeout=120)
            outcome["result"] = "returned"
        except Exception as err:
            outcome["result"] = err

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    time.sleep(1.5)
    sandbox.kill()
    thread.join(30)
    assert not thread.is_alive(), "the command did not end with its sandbox"
    err = outcome.get("result")
    assert isinstance(err, (SandboxNotRunningException, SandboxNotFoundException)), repr(err)


def pause_keeps_what_runs() -> None:
    sandbox = CodeSandbox.create()
    try:
        assert sandbox.run_code("x = 41").error is None
        sandbox.commands.run(
            "cd /tmp && echo served > index.html && python3 -m http.server 8765",
            background=True,
        )
        fetch = "curl -s --retry 20 --retry-delay 0 --retry-connrefused http://127.0.0.1:8765/"
        assert sandbox.commands.run(fetch).stdout == "served\n"
        sandbox.pause()
        resumed = CodeSandbox.connect(sandbox.sandbox_id)
        # The same server process, and the kernel's state.
        assert resumed.commands.run("curl -s http://127.0.0.1:8765/").stdout == "served\n"
        assert resumed.run_code("x + 1").text == "42"
    finally:
        sandbox.kill()


def streamed_input() -> None:
    sandbox = Sandbox.create()
    try:
        handle = sandbox.commands.run("cat > /tmp/streamed && wc -c < /tmp/streamed", background=True, stdin=True)
        sandbox.commands.stream_input(handle.pid, ["first ", b"second ", "third\n"])
        sandbox.commands.close_stdin(handle.pid)
        result = handle.wait()
        assert result.stdout.strip() == "19", result.stdout
        assert sandbox.files.read("/tmp/streamed") == "first second third\n"
    finally:
        sandbox.kill()


def main() -> None:
    scoped_envs()
    streamed_input()
    pause_keeps_what_runs()
    asyncio.run(async_background_kill())
    killed_under_a_command()
    print("commands scenario passed")


if __name__ == "__main__":
    main()
