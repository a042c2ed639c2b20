"""The boundary invariant through the official E2B Python SDK: a library a
sandbox wrote, named by LD_PRELOAD or LD_AUDIT in a command's envs or a
sandbox's envs (also through the host's /proc/<pid>/root), never loads on
the host; sandbox root cannot remount /usr writable, and neither it nor the
files API changes a host file. Exits non-zero on the first that does not
hold.

Arguments: the library (a host file), the marker its constructor creates,
and a host file under /usr to leave alone (or "-" when the server is not
root, so sandboxes have no root).
"""

import os
import sys
import time

from e2b import CommandExitException, Sandbox, SandboxException

library, marker, host_file = sys.argv[1:]


def host_pid_of(argv):
    want = b"".join(a.encode() + b"\0" for a in argv)
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if f.read() == want:
                    return int(entry)
        except (OSError, ValueError):
            continue
    return None


def not_on_host(what):
    assert not os.path.exists(marker), f"{what} loaded the library on the host"
    print(f"held: {what}")


a = Sandbox.create()
sandboxes = [a]
try:
    with open(library, "rb") as f:
        a.files.write("/home/user/e.so", f.read())
    a.commands.run("sleep 987605", background=True)
    deadline = time.time() + 5
    while (pid := host_pid_of(["sleep", "987605"])) is None:
        assert time.time() < deadline, "the sandbox's sleep never showed"
        time.sleep(0.02)
    through_host = f"/proc/{pid}/root/home/user/e.so"

    for var in ["LD_PRELOAD", "LD_AUDIT"]:
        for path in ["/home/user/e.so", through_host]:
            a.commands.run("true", envs={var: path})
            not_on_host(f"{var}={path} in a command's envs")
    loaded = a.commands.run(f"cat {marker}").stdout
    assert "loaded" in loaded, f"the library never loaded in the sandbox: {loaded!r}"

    b = Sandbox.create(envs={"LD_PRELOAD": through_host, "LD_AUDIT": through_host})
    sandboxes.append(b)
    assert b.commands.run("echo ran").stdout == "ran\n"
    not_on_host("LD_PRELOAD and LD_AUDIT in a sandbox's envs")

    if host_file != "-":
        inside = host_file
        try:
            a.commands.run("mount -o remount,bind,rw /usr", user="root")
            raise SystemExit("sandbox root remounted /usr writable")
        except CommandExitException as e:
            print(f"refused: remounting /usr ({e.stderr.strip()})")
        # Root writes its own copy-on-write root (or is refused, where
        # roots are read-only); the host's file never changes.
        try:
            a.commands.run(f"echo pwned > {inside}", user="root")
            assert a.files.read(inside, user="root") == "pwned\n"
        except CommandExitException as e:
            assert "Read-only file system" in e.stderr, e.stderr
        a.commands.run(f"ln -sf {inside} /home/user/link", user="root")
        for path in [inside, "/home/user/link"]:
            try:
                a.files.write(path, "pwned\n", user="root")
                print(f"the sandbox's own: writing {path}")
            except SandboxException as e:
                print(f"refused: writing {path} ({type(e).__name__})")
        with open(host_file) as f:
            assert f.read() == "host\n", "the host file changed"
        print("held: /usr is not remounted and the host file unchanged")
    print("boundary scenario passed")
finally:
    for s in sandboxes:
        s.kill()
