"""A terminal through the official SDK (`sandbox.pty`): echo, line editing,
resize seen by `tput`/`stty`, Ctrl-C interrupting the foreground job while
the shell lives on, the tty itself, and exit. Prints `pty scenario passed`.
"""

import threading
import time

from e2b import PtySize, Sandbox


def main() -> None:
    sandbox = Sandbox.create()
    try:
        handle = sandbox.pty.create(PtySize(rows=24, cols=80), timeout=120)
        out = bytearray()
        lock = threading.Lock()

        def collect(data: bytes) -> None:
            with lock:
                out.extend(data)

        ended = {}

        def reader() -> None:
            try:
                ended["result"] = handle.wait(on_pty=collect)
            except Exception as err:  # the exit code of `exit 7`
                ended["error"] = err

        thread = threading.Thread(target=reader, daemon=True)
        thread.start()

        def wait_for(text: str, timeout: float = 20) -> None:
            deadline = time.time() + timeout
            while time.time() < deadline:
                with lock:
                    if text.encode() in out:
                        return
                time.sleep(0.05)
            with lock:
                raise AssertionError(f"no {text!r} in the terminal's output: {bytes(out)!r}")

        def send(text: str) -> None:
            sandbox.pty.send_stdin(handle.pid, text.encode())

        send("echo hello-$((6*7))\n")
        wait_for("hello-42\r\n")
        # The terminal echoes what is typed (onlcr turns \n into \r\n).
        wait_for("echo hello-$((6*7))")

        # Line editing: the terminal erases the X before the shell reads it.
        send("echo abX\x7fc\n")
        wait_for("abc\r\n")

        sandbox.pty.resize(handle.pid, PtySize(rows=30, cols=123))
        send("stty size; tput cols\n")
        wait_for("30 123\r\n123\r\n")

        send("[ -t 0 ] && [ -t 1 ] && echo on-a-$(tty | cut -d/ -f2)\n")
        wait_for("on-a-dev")

        # Ctrl-C ends the foreground job, not the shell.
        send("sleep 100\n")
        time.sleep(1)
        send("\x03")
        send("echo after-$((1+1))\n")
        wait_for("after-2\r\n", timeout=10)

        send("exit 7\n")
        thread.join(20)
        assert not thread.is_alive(), "the terminal's process did not end"
        error = ended.get("error")
        assert error is not None and getattr(error, "exit_code", None) == 7, ended

        # Killing a terminal ends its whole session, the job it runs too
        # (the shell leads a session of its own, apart from envd's group).
        second = sandbox.pty.create(PtySize(rows=24, cols=80), timeout=120)
        sandbox.pty.send_stdin(second.pid, b"sleep 417\n")
        deadline = time.time() + 20
        while "sleep 417" not in sandbox.commands.run("ps -eo args").stdout:
            assert time.time() < deadline, "the terminal's job did not start"
            time.sleep(0.1)
        assert sandbox.pty.kill(second.pid)
        deadline = time.time() + 20
        while "sleep 417" in sandbox.commands.run("ps -eo args").stdout:
            assert time.time() < deadline, "the terminal's job outlived its kill"
            time.sleep(0.1)
    finally:
        sandbox.kill()
    print("pty scenario passed")


if __name__ == "__main__":
    main()
