"""The last envd and control-plane behaviours E2B's own SDK tests check,
through the official SDK: removing a path that is not there, a killed
background process gone (not a zombie), `sudo` as the sandbox's own root
with sudo's environment rules, signed download URLs of a secured sandbox
served to a plain HTTP client (and an expired one refused with E2B's
message), paused sandboxes listed as paused in pages newest first, and
`wait()` on a background command whose sandbox was killed.
Prints `fidelity scenario passed`.
"""

import json
import os
import time
import urllib.error
import urllib.request

from e2b import Sandbox, SandboxQuery, SandboxState, TimeoutException


def step(name: str) -> None:
    print(f"ok: {name}", flush=True)


def remove_missing(sbx: Sandbox) -> None:
    sbx.files.remove("never-there")
    sbx.files.remove("/home/user/no/such/dir")
    sbx.files.make_dir("fresh/sub")
    sbx.files.remove("fresh")
    sbx.files.remove("fresh")
    assert not sbx.files.exists("fresh")
    step("files.remove of a missing path succeeds")


def killed_is_gone(sbx: Sandbox) -> None:
    handle = sbx.commands.run("sleep 300", background=True)
    assert sbx.commands.kill(handle.pid) is True
    # Gone at once: reaped, so neither a zombie nor a pid that still answers.
    probe = sbx.commands.run(
        f"kill -0 {handle.pid} 2>/dev/null && echo alive || echo gone;"
        f" cat /proc/{handle.pid}/stat 2>/dev/null || true"
    )
    assert probe.stdout.startswith("gone"), probe.stdout
    step("a killed background process is gone")


def sudo(sbx: Sandbox) -> None:
    scoped = sbx.commands.run('echo "$FOO"', envs={"FOO": "bar"})
    assert scoped.stdout.strip() == "bar"
    # The command's scoped variable reaches neither the next command nor
    # sudo's (E2B's own test of scoped envs).
    again = sbx.commands.run('sudo echo "$FOO"')
    assert again.exit_code == 0 and again.stdout.strip() == "", again
    who = sbx.commands.run("sudo id -u; sudo -u user id -u; id -u")
    assert who.stdout.split() == ["0", "1000", "1000"], who.stdout
    # env_reset: the caller's variables stay the caller's; -E keeps them.
    env = sbx.commands.run("sudo env", envs={"FOO": "bar"})
    assert "FOO=bar" not in env.stdout and "SUDO_USER=user" in env.stdout, env.stdout
    assert "HOME=/root" in env.stdout, env.stdout
    kept = sbx.commands.run("sudo -E env", envs={"FOO": "bar"})
    assert "FOO=bar" in kept.stdout, kept.stdout
    # Root's files are root's; stdin and the exit code pass through.
    made = sbx.commands.run(
        "echo secret | sudo tee /root/note >/dev/null && sudo stat -c %U /root/note"
        " && sudo cat /root/note; cat /root/note 2>/dev/null || echo denied"
    )
    assert made.stdout.split() == ["root", "secret", "denied"], made.stdout
    code = sbx.commands.run("sudo sh -c 'exit 7' || echo rc=$?")
    assert code.stdout.strip() == "rc=7", code.stdout
    # The sandbox's root, never the host's: uid 0 maps to an unprivileged
    # host uid, and what it writes to a host path lands on the sandbox's
    # own copy-on-write root (or is refused, where roots are read-only).
    mapping = sbx.commands.run("sudo cat /proc/self/uid_map").stdout.split()
    assert mapping[0] == "0" and mapping[1] != "0", mapping
    probe = "/usr/bin/e2b-sudo-probe"
    host = sbx.commands.run(f"sudo touch {probe} 2>&1 && echo wrote || echo refused")
    assert host.stdout.strip().endswith(("wrote", "refused")), host.stdout
    assert not os.path.exists(probe), "sudo in a sandbox wrote a host file"
    step("sudo runs as the sandbox's root with sudo's environment")


def signed_urls() -> None:
    sbx = Sandbox.create(secure=True, timeout=120)
    try:
        sbx.files.write("signed.txt", "signed content")
        for url in (sbx.download_url("signed.txt", "user"), sbx.download_url("signed.txt", "user", 120)):
            with urllib.request.urlopen(url) as resp:
                assert resp.status == 200 and resp.read() == b"signed content"
        expired = sbx.download_url("signed.txt", "user", use_signature_expiration=-120)
        try:
            urllib.request.urlopen(expired)
            raise AssertionError("an expired signature was served")
        except urllib.error.HTTPError as err:
            assert err.code == 401, err.code
            assert json.loads(err.read()) == {"code": 401, "message": "signature is already expired"}
        forged = sbx.download_url("signed.txt", "root")
        try:
            urllib.request.urlopen(forged.replace("username=root", "username=user"))
            raise AssertionError("a signature for another user was served")
        except urllib.error.HTTPError as err:
            assert err.code == 401, err.code
    finally:
        sbx.kill()
    step("signed download URLs of a secured sandbox")


def paused_pages(tag: str) -> None:
    older = Sandbox.create(metadata={"fidelity": tag})
    newer = Sandbox.create(metadata={"fidelity": tag})
    try:
        for state in ([SandboxState.RUNNING],):
            pages = Sandbox.list(query=SandboxQuery(metadata={"fidelity": tag}, state=state), limit=1)
            first, second = pages.next_items(), pages.next_items()
            assert [s.sandbox_id for s in first + second] == [newer.sandbox_id, older.sandbox_id]
            assert not pages.has_next and pages.next_token is None
        older.beta_pause()
        query = SandboxQuery(metadata={"fidelity": tag}, state=[SandboxState.PAUSED])
        pages = Sandbox.list(query=query, limit=1)
        first = pages.next_items()
        assert [(s.sandbox_id, s.state) for s in first] == [(older.sandbox_id, SandboxState.PAUSED)]
        assert not pages.has_next
        newer.beta_pause()
        pages = Sandbox.list(query=query, limit=1)
        first = pages.next_items()
        assert pages.has_next and pages.next_token is not None
        second = pages.next_items()
        assert [s.sandbox_id for s in first + second] == [newer.sandbox_id, older.sandbox_id]
        assert all(s.state == SandboxState.PAUSED for s in first + second)
        both = SandboxQuery(metadata={"fidelity": tag}, state=[SandboxState.RUNNING, SandboxState.PAUSED])
        Sandbox.connect(older.sandbox_id)
        listed = Sandbox.list(query=both).next_items()
        assert [(s.sandbox_id, s.state) for s in listed] == [
            (newer.sandbox_id, SandboxState.PAUSED),
            (older.sandbox_id, SandboxState.RUNNING),
        ], listed
    finally:
        older.kill()
        newer.kill()
    step("paused sandboxes listed as paused, in pages, newest first")


def killed_under_wait() -> None:
    sbx = Sandbox.create()
    cmd = sbx.commands.run("sleep 60", background=True)
    sbx.kill()
    started = time.monotonic()
    try:
        cmd.wait()
        raise AssertionError("wait() returned on a killed sandbox")
    except TimeoutException as err:
        assert "sandbox was killed or reached its end of life" in str(err), err
    assert time.monotonic() - started < 30
    step("wait() on a killed sandbox's command")


sbx = Sandbox.create()
try:
    remove_missing(sbx)
    killed_is_gone(sbx)
    sudo(sbx)
finally:
    sbx.kill()
signed_urls()
paused_pages(f"t{time.time_ns()}")
killed_under_wait()
print("fidelity scenario passed")
