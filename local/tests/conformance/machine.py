"""A sandbox is a whole machine, through the official SDK: every path is
writable by root (`/0/...`, `/opt`, `/usr/local`), `pip install` as `user`
goes into the template's Python, `dpkg -i` and `npm install -g` as root
install system-wide, and all of it survives a pause and a snapshot while a
new sandbox has none of it. Offline: the packages are made in the sandbox
(a wheel, a .deb, an npm tarball), so no registry is needed. Prints the
marker line the server test looks for, then `machine scenario passed`.
"""

import datetime
import io
import sys
import time
import zipfile

from e2b import CommandExitException, Sandbox

made = []
MARKER = f"m{time.time_ns()}"
# "internet": the server gives sandboxes internet (its isolation line says so).
INTERNET = sys.argv[1:] == ["internet"]


def step(name: str) -> None:
    print(f"ok: {name}", flush=True)


def create(*args, **kwargs) -> Sandbox:
    sbx = Sandbox.create(*args, **kwargs)
    made.append(sbx)
    return sbx


def run(sbx: Sandbox, cmd: str, user: str = "user") -> str:
    result = sbx.commands.run(cmd, user=user, timeout=120)
    assert result.exit_code == 0, (cmd, result)
    return result.stdout


def wheel() -> bytes:
    """A minimal wheel of the module `e2b_machine_pkg`."""
    name, version = "e2b_machine_pkg", "1.0"
    info = f"{name}-{version}.dist-info"
    files = {
        f"{name}.py": f"MARKER = {MARKER!r}\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{path},,\n" for path in files) + f"{info}/RECORD,,\n"
    files[f"{info}/RECORD"] = record
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for path, text in files.items():
            zf.writestr(path, text)
    return out.getvalue()


def check_installed(sbx: Sandbox) -> None:
    assert run(sbx, "cat /0/multi_test_file0.txt", "root") == MARKER
    assert run(sbx, "python -c 'import e2b_machine_pkg as m; print(m.MARKER)'").strip() == MARKER
    assert run(sbx, "e2b-machine-tool").strip() == MARKER
    assert "Status: install ok installed" in run(sbx, "dpkg -s e2b-machine-deb")
    assert run(sbx, "e2b-machine-npm").strip() == MARKER


try:
    sbx = create(template="code-interpreter-v1", timeout=300)
    # Root writes anywhere: the SDK's files API and a shell.
    sbx.files.write("/0/multi_test_file0.txt", MARKER, user="root")
    assert sbx.files.read("/0/multi_test_file0.txt", user="root") == MARKER
    run(sbx, "mkdir /opt/tool && touch /usr/local/share/e2b-machine && ls /opt/tool", "root")
    step("root writes /0, /opt and /usr/local")

    # Root's relative paths and commands start in its home, /root.
    sbx.files.write("relative.txt", "root's", user="root")
    assert run(sbx, "cat /root/relative.txt", "root") == "root's"
    assert run(sbx, "pwd", "root").strip() == "/root"
    assert run(sbx, "pwd").strip() == "/home/user"
    step("root's relative paths and working directory are /root")

    # Metrics in a window: none before the sandbox existed, one now.
    long_ago = datetime.datetime(2001, 1, 1, tzinfo=datetime.timezone.utc)
    assert sbx.get_metrics(start=long_ago, end=long_ago + datetime.timedelta(days=1)) == []
    assert len(sbx.get_metrics()) == 1
    step("metrics keep to their window")

    sbx.files.write("/tmp/e2b_machine_pkg-1.0-py3-none-any.whl", wheel())
    out = run(sbx, "pip install --no-index /tmp/e2b_machine_pkg-1.0-py3-none-any.whl 2>&1")
    assert "Successfully installed e2b-machine-pkg-1.0" in out, out
    site = run(sbx, "python -c 'import e2b_machine_pkg as m; print(m.__file__)'").strip()
    print(f"site-packages: {site}", flush=True)
    step("pip install as user, into the template's Python")

    # A Debian package made and installed in the sandbox.
    run(
        sbx,
        "set -e; d=/tmp/deb; mkdir -p $d/DEBIAN $d/usr/bin; "
        "printf 'Package: e2b-machine-deb\\nVersion: 1.0\\nArchitecture: all\\n"
        "Maintainer: t <t@e2b.local>\\nDescription: test\\n' > $d/DEBIAN/control; "
        f"printf '#!/bin/sh\\necho {MARKER}\\n' > $d/usr/bin/e2b-machine-tool; "
        "chmod 755 $d/usr/bin/e2b-machine-tool; "
        "dpkg-deb --build $d /tmp/e2b-machine-deb.deb >/dev/null; "
        "dpkg -i /tmp/e2b-machine-deb.deb",
        "root",
    )
    step("dpkg -i as root")

    run(
        sbx,
        "set -e; d=/tmp/npmpkg; mkdir -p $d; cd $d; "
        "printf '{\"name\":\"e2b-machine-npm\",\"version\":\"1.0.0\",\"bin\":{\"e2b-machine-npm\":\"cli.js\"}}' > package.json; "
        f"printf '#!/usr/bin/env node\\nconsole.log(\"{MARKER}\")\\n' > cli.js; "
        "npm pack --silent >/dev/null; npm install -g --offline ./e2b-machine-npm-1.0.0.tgz >/dev/null 2>&1",
        "root",
    )
    step("npm install -g as root")
    check_installed(sbx)

    snapshot = sbx.create_snapshot()
    sbx.pause()
    sbx = Sandbox.connect(sbx.sandbox_id)
    check_installed(sbx)
    step("all of it survives a pause")

    copy = create(snapshot.snapshot_id)
    check_installed(copy)
    step("and a snapshot")

    (fork,) = copy.fork(count=1, timeout=120)
    made.append(fork)
    check_installed(fork)
    run(fork, "rm -rf /opt/tool && echo forked > /opt/fork.txt", "root")
    assert run(copy, "ls /opt/tool && test ! -e /opt/fork.txt && echo apart", "root") == "apart\n"
    step("and a fork, which then goes its own way")

    if INTERNET:
        out = run(copy, "pip install --disable-pip-version-check cowsay 2>&1")
        assert "Successfully installed cowsay" in out, out
        assert run(copy, "python -c 'import cowsay; print(cowsay.__name__)'") == "cowsay\n"
        step("pip install from the registry, with internet")

    # Bad input breaks only the sandbox that gave it.
    full = copy.commands.run("fallocate -l 64G /opt/huge 2>&1; echo rc=$?", user="root", timeout=60)
    assert "No space left on device" in full.stdout and "rc=1" in full.stdout, full
    try:
        copy.commands.run("rm -rf /usr 2>/dev/null; /usr/bin/true", user="root", timeout=60)
        raise AssertionError("a sandbox without /usr still ran /usr/bin/true")
    except CommandExitException:
        pass
    assert run(fork, "python -c 'print(1)'") == "1\n", "another sandbox is whole"
    step("a full disk is ENOSPC and a deleted /usr breaks only its sandbox")

    fresh = create(template="code-interpreter-v1")
    # Each sandbox boots: a boot id of its own, not the host's.
    boot = "/proc/sys/kernel/random/boot_id"
    with open(boot) as f:
        host_boot = f.read()
    boots = {run(s, f"cat {boot}") for s in (sbx, fresh)}
    assert len(boots) == 2 and host_boot not in boots, (boots, host_boot)
    try:
        found = fresh.commands.run(
            "test -e /0 || test -e /opt/tool || python -c 'import e2b_machine_pkg' 2>/dev/null "
            "|| command -v e2b-machine-tool || dpkg -s e2b-machine-deb 2>/dev/null",
            timeout=60,
        )
        raise AssertionError(f"a new sandbox has the first one's: {found}")
    except CommandExitException as e:
        assert e.exit_code == 1, e
    step("a new sandbox has none of it")

    # A filesystem-only pause cold-boots on resume: its processes are gone,
    # it has a new boot id, and its files stay. A memory pause keeps both.
    def alive(box: Sandbox) -> bool:
        try:
            box.commands.run("pgrep -f 'sleep 4242'", timeout=30)
            return True
        except CommandExitException:
            return False

    def booted(box: Sandbox, pause) -> tuple:
        box.commands.run("sleep 4242", background=True)
        run(box, "echo kept > /opt/kept", "root")
        before = run(box, f"cat {boot}")
        pause(box)
        box = Sandbox.connect(box.sandbox_id)
        assert run(box, "cat /opt/kept") == "kept\n", "the files stay"
        return box, before != run(box, f"cat {boot}"), alive(box)

    fresh, rebooted, kept = booted(fresh, lambda b: b.pause())
    assert (rebooted, kept) == (False, True), "a memory pause keeps processes"
    fresh, rebooted, kept = booted(fresh, lambda b: b.pause(mode="filesystem"))
    assert (rebooted, kept) == (True, False), "a filesystem pause cold-boots"
    fresh.commands.run("sleep 4242", background=True)
    fresh.pause()
    fresh = Sandbox.connect(fresh.sandbox_id, on_resume="reboot")
    assert not alive(fresh), "a resume with on_resume='reboot' cold-boots"
    timed = create(lifecycle={"on_timeout": {"action": "pause", "mode": "filesystem"}}, timeout=2)
    timed.commands.run("sleep 4242", background=True)
    time.sleep(4)
    assert Sandbox.get_info(timed.sandbox_id).state.value == "paused"
    timed = Sandbox.connect(timed.sandbox_id)
    assert not alive(timed), "auto-pause with mode='filesystem' cold-boots"
    step("filesystem-only pauses cold-boot, memory pauses do not")
    Sandbox.delete_snapshot(snapshot.snapshot_id)
    print(f"marker: {MARKER}", flush=True)
finally:
    for sbx in made:
        try:
            sbx.kill()
        except Exception:
            pass

print("machine scenario passed")
