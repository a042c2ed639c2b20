"""Escape attempts through the official E2B Python SDK, as a model's code
would make them. Each must fail; exits non-zero on the first that does not.

Arguments: a variable name that is in the server's environment and must not
be seen, a host file the server can read, and host loopback ports (a
listener of the test's and the control plane).
"""

import sys

from e2b import CommandExitException, Sandbox, SandboxException

canary, host_file, *ports = sys.argv[1:]


def refused(call, what):
    try:
        out = call()
    except SandboxException as e:  # NotFoundException, InvalidArgument…
        print(f"refused: {what} ({type(e).__name__})")
        return
    raise SystemExit(f"{what} succeeded: {str(out)[:300]!r}")


def fails(command, what):
    try:
        r = sbx.commands.run(command)
    except CommandExitException as e:
        assert canary not in e.stdout, (what, e.stdout[:300])
        print(f"refused: {what} (exit {e.exit_code})")
        return
    raise SystemExit(f"{what} succeeded: {r.stdout[:300]!r}")


sbx = Sandbox.create()
try:
    # The server's environment, through the files API and through /proc.
    for path in ["/proc/self/environ", "/proc/1/environ"]:
        try:
            text = sbx.files.read(path)
        except SandboxException:
            continue
        assert canary not in text, (path, text[:300])
    out = sbx.commands.run("cat /proc/*/environ | tr '\\0' '\\n'").stdout
    assert canary not in out, out[:300]
    print("the server's environment is not in the sandbox")

    # Host files, by path and through symlinks the sandbox makes.
    refused(lambda: sbx.files.read(host_file), "reading a host file")
    refused(lambda: sbx.files.read("/etc/shadow"), "reading /etc/shadow")
    sbx.commands.run(f"ln -s {host_file} /home/user/abs && ln -s ../../../..{host_file} /home/user/rel")
    refused(lambda: sbx.files.read("/home/user/abs"), "reading through an absolute symlink")
    refused(lambda: sbx.files.read("/home/user/rel"), "reading through a relative symlink")
    fails(f"cat {host_file}", "cat of a host file")
    assert [e.name for e in sbx.files.list("/root", user="root")] == [], "the host's /root is not there"
    assert [e.name for e in sbx.files.list("/home")] == ["user"], "nor the host's homes"

    # Devices and FIFOs are refused, and nothing hangs.
    refused(lambda: sbx.files.read("/dev/zero"), "reading /dev/zero")
    sbx.commands.run("mkfifo /tmp/fifo")
    refused(lambda: sbx.files.read("/tmp/fifo"), "reading a FIFO")
    refused(lambda: sbx.files.write("/proc/sys/kernel/hostname", "pwned"), "writing /proc/sys")

    # The host's loopback (a listener of the test's, the control plane).
    for port in ports:
        fails(
            f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 3)\"",
            f"connecting to the host's 127.0.0.1:{port}",
        )

    # Not host root; `user="root"` is root inside only.
    assert sbx.commands.run("whoami").stdout.strip() == "user"
    print("escape scenario passed")
finally:
    sbx.kill()
