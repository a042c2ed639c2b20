"""Conformance scenario: the official E2B Python SDK against the local server.

Run with E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY pointing at the server
(the Rust test `conformance` does this). Exits non-zero on the first failed
check; prints one line per passed step.
"""

import io
import os
import sys
import time
import urllib.parse
import urllib.error
import urllib.request
import uuid

from e2b import (
    CommandExitException,
    FileType,
    NotFoundException,
    SandboxException,
    SandboxQuery,
    TimeoutException,
)
try:
    from e2b_code_interpreter import Sandbox

    HAS_INTERPRETER = True
except ImportError:
    # e2b==2.32.0 (v1 endpoints) has no compatible code-interpreter SDK that
    # honours E2B_SANDBOX_URL; the run_code steps are skipped there.
    from e2b import Sandbox

    HAS_INTERPRETER = False


def step(name):
    print(f"ok: {name}", flush=True)


def expect_raises(exc_types, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except exc_types as e:
        return e
    raise AssertionError(f"{fn.__name__} did not raise {exc_types}")


def run_code_steps(sbx):
    ex = sbx.run_code("x = 41\nprint('hi')")
    assert ex.error is None, ex.error
    assert "".join(ex.logs.stdout) == "hi\n", ex.logs
    ex = sbx.run_code("x + 1")
    assert ex.text == "42", ex.text
    step("run_code keeps state across calls")

    ex = sbx.run_code("1 / 0")
    assert ex.error is not None
    assert ex.error.name == "ZeroDivisionError", ex.error.name
    assert ex.error.value == "division by zero", ex.error.value
    assert "ZeroDivisionError" in ex.error.traceback
    step("run_code exception name/value/traceback")

    ex = sbx.run_code("import os\nos.environ.get('GLOBAL_VAR')")
    assert ex.text == "from-create", ex.text
    step("run_code sees sandbox envs")

    # code-interpreter-v1's data stack (the venv scripts/bootstrap installs).
    # numpy 2 scalars print as on E2B's numpy 2.3 image: np.int64(3).
    ex = sbx.run_code("import pandas as pd; pd.DataFrame({'a':[1,2]}).sum().a")
    assert ex.error is None, ex.error
    assert ex.text == "np.int64(3)", ex.text
    ex = sbx.run_code("import pandas as pd; int(pd.DataFrame({'a':[1,2]}).sum().a)")
    assert ex.text == "3", ex.text
    ex = sbx.run_code("import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()")
    assert ex.error is None, ex.error
    assert any((r.png or "").startswith("iVBORw0KGgo") for r in ex.results), ex.results
    step("run_code has pandas and matplotlib (a chart is a PNG result)")


tag = uuid.uuid4().hex
suite = "conformance-" + tag
sbx = Sandbox.create(metadata={"suite": suite, "tag": tag}, envs={"GLOBAL_VAR": "from-create"}, timeout=120)
other = Sandbox.create(template="base", metadata={"suite": suite, "tag": "other"}, timeout=120)
step("create with metadata and envs")
# The SDK raises its generic SandboxException for a 404 on create.
e = expect_raises(SandboxException, Sandbox.create, template="no-such-template-" + tag)
assert str(e).startswith("404: template 'no-such-template-"), str(e)
step("an unknown template is not found")

# Commands
r = sbx.commands.run("echo $GLOBAL_VAR $LOCAL_VAR; pwd", envs={"LOCAL_VAR": "local"})
assert r.stdout == "from-create local\n/home/user\n", repr(r.stdout)
assert r.exit_code == 0 and not r.error and r.stderr == "", (r.exit_code, r.error, r.stderr)
step("commands.run with sandbox and command envs")

e = expect_raises(CommandExitException, sbx.commands.run, "echo out; echo err >&2; exit 3")
assert e.exit_code == 3, e.exit_code
assert e.stdout == "out\n", repr(e.stdout)
assert e.stderr == "err\n", repr(e.stderr)
assert "exit status 3" in (e.error or ""), e.error
step("non-zero exit raises CommandExitException with stdout/stderr/exit code")

# 1 ASCII byte then 3-byte characters: 32 KiB reads split some of them.
expected = "a" + "\u20ac" * 30000 + "\n"
r = sbx.commands.run("python3 -c \"print('a' + '\\u20ac' * 30000)\"")
assert r.stdout == expected, (len(r.stdout), r.stdout[:20])
step("UTF-8 split across data chunks decodes intact")

t0 = time.time()
expect_raises(TimeoutException, sbx.commands.run, "sleep 10", timeout=1)
assert time.time() - t0 < 8, time.time() - t0
step("command timeout raises TimeoutException")

h = sbx.commands.run("sleep 100", background=True)
assert h.pid > 0
pids = [p.pid for p in sbx.commands.list()]
assert h.pid in pids, (h.pid, pids)
assert sbx.commands.kill(h.pid) is True
e = expect_raises(CommandExitException, h.wait)
assert e.exit_code == -1, e.exit_code
time.sleep(0.3)
assert h.pid not in [p.pid for p in sbx.commands.list()]
assert sbx.commands.kill(h.pid) is False
step("background command, list, kill")

h = sbx.commands.run("cat", background=True, stdin=True)
sbx.commands.send_stdin(h.pid, "hello stdin\n")
sbx.commands.close_stdin(h.pid)
r = h.wait()
assert r.stdout == "hello stdin\n", repr(r.stdout)
step("stdin send and close")

# Files
info = sbx.files.write("/home/user/dir/a.txt", "héllo")
assert info.path == "/home/user/dir/a.txt", info
assert sbx.files.read("/home/user/dir/a.txt") == "héllo"
assert sbx.files.read("dir/a.txt", format="bytes") == "héllo".encode()
entries = sbx.files.list("/home/user/dir")
assert [(x.name, x.type) for x in entries] == [("a.txt", FileType.FILE)], entries
assert sbx.files.make_dir("/home/user/newdir") is True
assert sbx.files.make_dir("/home/user/newdir") is False
assert any(x.name == "newdir" and x.type == FileType.DIR for x in sbx.files.list("/home/user"))
moved = sbx.files.rename("/home/user/dir/a.txt", "/home/user/newdir/b.txt")
assert moved.path == "/home/user/newdir/b.txt", moved
assert sbx.files.exists("/home/user/newdir/b.txt") is True
assert sbx.files.exists("/home/user/dir/a.txt") is False
sbx.files.remove("/home/user/newdir")
assert sbx.files.exists("/home/user/newdir") is False
expect_raises(NotFoundException, sbx.files.read, "/home/user/missing.txt")
expect_raises(NotFoundException, sbx.files.list, "/nope")
expect_raises(SandboxException, sbx.files.write, "/proc/forbidden.txt", "x")
if HAS_INTERPRETER:  # 2.63: octet-stream and gzip uploads
    sbx.files.write("/tmp/z.txt", io.BytesIO(b"zipped" * 1000), gzip=True)
    assert sbx.files.read("/tmp/z.txt") == "zipped" * 1000
step("files write/read/list/make_dir/rename/remove/exists")

# Entry info as the SDK's own tests expect it: permission bits in `mode`,
# Go's permission string, owner names, a relative symlink's absolute target.
sbx.files.write("info/test.txt", "test")
info = sbx.files.get_info("info/test.txt")
assert (info.size, info.mode, info.permissions) == (4, 0o644, "-rw-r--r--"), info
assert (info.owner, info.group) == ("user", "user") and info.modified_time, info
info = sbx.files.get_info("info")
assert (info.type, info.mode, info.permissions) == (FileType.DIR, 0o755, "drwxr-xr-x"), info
sbx.commands.run("ln -s test.txt link.txt", cwd="/home/user/info")
link = sbx.files.get_info("info/link.txt")
assert link.type == FileType.FILE, link
assert link.symlink_target == "/home/user/info/test.txt", link
expect_raises(NotFoundException, sbx.files.get_info, "info/missing.txt")
step("entry info: mode, permissions, owner, symlink target")

sbx.commands.run("echo from-command > /tmp/cmd.txt")
assert sbx.files.read("/tmp/cmd.txt") == "from-command\n"
step("a file written by a command is read through the files API")

sbx.files.write("rel.txt", "relative")
assert sbx.commands.run("cat /home/user/rel.txt").stdout == "relative"
assert sbx.files.read("/home/user/rel.txt") == "relative"
assert sbx.commands.run("pwd", cwd="dir").stdout == "/home/user/dir\n"
step("relative paths resolve against /home/user")

# Signed file URLs point at https://49983-{id}.{domain}; send their query to
# the server with the routing headers and no token.
for url in (sbx.download_url("/home/user/rel.txt"), sbx.download_url("rel.txt", use_signature_expiration=60)):
    query = urllib.parse.urlsplit(url).query
    req = urllib.request.Request(
        os.environ["E2B_SANDBOX_URL"] + "/files?" + query,
        headers={"E2b-Sandbox-Id": sbx.sandbox_id, "E2b-Sandbox-Port": "49983"},
    )
    assert urllib.request.urlopen(req).read() == b"relative"
step("signed download URLs work without the access token")


def signed(url, method="GET", data=None, content_type=None):
    """Sends a signed URL's query to the server, routed, without the token."""
    headers = {"E2b-Sandbox-Id": sbx.sandbox_id, "E2b-Sandbox-Port": "49983"}
    if content_type:
        headers["Content-Type"] = content_type
    query = urllib.parse.urlsplit(url).query
    req = urllib.request.Request(
        os.environ["E2B_SANDBOX_URL"] + "/files?" + query, data=data, method=method, headers=headers
    )
    return urllib.request.urlopen(req)


def refused(url, method="GET", data=None, content_type=None):
    try:
        signed(url, method, data, content_type)
    except urllib.error.HTTPError as e:
        return e.code
    raise AssertionError(f"{method} {url} was not refused")


boundary = "e2bboundary" + tag
form = (
    f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"up.txt\"\r\n"
    f"Content-Type: application/octet-stream\r\n\r\nuploaded\r\n--{boundary}--\r\n"
).encode()
multipart = f"multipart/form-data; boundary={boundary}"
signed(sbx.upload_url("up.txt"), "POST", form, multipart)
assert sbx.files.read("up.txt") == "uploaded"
# A download's signature does not upload, and an expired one opens nothing.
assert refused(sbx.download_url("up.txt"), "POST", form, multipart) in (401, 403)
expiring = sbx.download_url("up.txt", use_signature_expiration=1)
time.sleep(2.2)
assert refused(expiring) in (401, 403)
step("signed upload URLs; wrong-operation and expired signatures are refused")

# Code interpreter
if HAS_INTERPRETER:
    run_code_steps(sbx)

# ---------------------------------------------------------------------------
# Filesystem watchers and file metadata (issue 17): a separate section.
# ---------------------------------------------------------------------------
import inspect

from e2b import FilesystemEventType


def wait_for_event(handle, name, kind, seconds=10):
    seen = []
    until = time.time() + seconds
    while time.time() < until:
        seen += handle.get_new_events()
        if any(e.name == name and e.type == kind for e in seen):
            return seen
        time.sleep(0.1)
    raise AssertionError(f"no {kind} {name} in {seen}")


wdir = f"/home/user/watch-{tag}"
sbx.files.make_dir(wdir)
handle = sbx.files.watch_dir(wdir)
sbx.files.write(f"{wdir}/w.txt", "hello")
seen = wait_for_event(handle, "w.txt", FilesystemEventType.WRITE)
assert any(e.name == "w.txt" and e.type == FilesystemEventType.CREATE for e in seen), seen
sbx.files.make_dir(f"{wdir}/sub")
sbx.files.write(f"{wdir}/sub/deep.txt", "x")
sbx.files.write(f"{wdir}/top.txt", "x")
seen = wait_for_event(handle, "top.txt", FilesystemEventType.CREATE)
assert all("deep" not in e.name for e in seen), seen
handle.stop()
expect_raises(SandboxException, handle.get_new_events)
step("watch_dir reports a written file's CREATE and WRITE, not recursive by default")

handle = sbx.files.watch_dir(wdir, recursive=True)
sbx.files.make_dir(f"{wdir}/sub/new")
sbx.files.write(f"{wdir}/sub/new/r.txt", "x")
wait_for_event(handle, "sub/new/r.txt", FilesystemEventType.WRITE)
sbx.files.remove(f"{wdir}/sub/deep.txt")
wait_for_event(handle, "sub/deep.txt", FilesystemEventType.REMOVE)
handle.stop()
expect_raises(NotFoundException, sbx.files.watch_dir, f"/home/user/missing-{tag}")
step("recursive watch_dir names nested files; a missing directory raises NotFoundException")

if "metadata" in inspect.signature(sbx.files.write).parameters:
    md = {"author": "mish", "purpose": "conformance"}
    info = sbx.files.write(f"{wdir}/meta.txt", "m", metadata={"Author": "mish", "purpose": "conformance"})
    assert info.metadata == md, info
    assert sbx.files.get_info(f"{wdir}/meta.txt").metadata == md
    listed = [e for e in sbx.files.list(wdir) if e.name == "meta.txt"]
    assert listed and listed[0].metadata == md, listed
    moved = sbx.files.rename(f"{wdir}/meta.txt", f"/tmp/meta-{tag}.txt")
    assert moved.metadata == md, moved
    infos = sbx.files.write_files(
        [{"path": f"{wdir}/m1", "data": "1"}, {"path": f"{wdir}/m2", "data": "2"}],
        metadata={"batch": "b"},
    )
    assert [i.metadata for i in infos] == [{"batch": "b"}] * 2, infos
    plain = sbx.files.write(f"/tmp/meta-{tag}.txt", "again")
    assert plain.metadata is None, plain
    assert sbx.files.get_info(f"/tmp/meta-{tag}.txt").metadata is None
    step("write metadata shows in get_info, list and rename; a write without it clears it")
# --- end of issue 17 section ------------------------------------------------

# Lifecycle
sbx.set_timeout(300)
info = sbx.get_info()
assert info.sandbox_id == sbx.sandbox_id
assert info.metadata == {"suite": suite, "tag": tag}, info.metadata
assert info.state.value == "running"
assert (info.end_at - info.started_at).total_seconds() > 200
step("set_timeout and get_info")

found = Sandbox.list(query=SandboxQuery(metadata={"tag": tag})).next_items()
assert [s.sandbox_id for s in found] == [sbx.sandbox_id], found
both = Sandbox.list(query=SandboxQuery(metadata={"suite": suite})).next_items()
assert {s.sandbox_id for s in both} == {sbx.sandbox_id, other.sandbox_id}
step("list with a metadata filter")

# Pages: a limit of 1 gives one sandbox a page, the x-next-token header the
# way on, and both orders.
pages = Sandbox.list(query=SandboxQuery(metadata={"suite": suite}), limit=1)
first = pages.next_items()
assert len(first) == 1 and pages.has_next, (first, pages.has_next)
second = pages.next_items()
assert len(second) == 1 and not pages.has_next, (second, pages.has_next)
assert {first[0].sandbox_id, second[0].sandbox_id} == {sbx.sandbox_id, other.sandbox_id}
step("list in pages of one")

# Metrics: the sandbox's real use. 20 MiB written show on its disk, a
# second of busy CPU in its CPU use.
sbx.get_metrics()  # the sample CPU use is counted from
sbx.commands.run("head -c 20971520 /dev/urandom > /home/user/metrics.bin; timeout 1 sh -c 'while :; do :; done'; true")
metrics = sbx.get_metrics()
assert len(metrics) >= 1, metrics
m = metrics[-1]
assert m.cpu_count == 2 and m.mem_total == 512 << 20, m
assert m.disk_used >= 20 << 20 and m.disk_total >= m.disk_used, m
assert 0 < m.mem_used <= m.mem_total, m
assert m.cpu_used_pct > 0, m
step("get_metrics reports CPU, memory and disk")

assert sbx.is_running() is True
assert sbx.kill() is True
assert sbx.is_running() is False
assert Sandbox.kill(sbx.sandbox_id) is False
expect_raises(NotFoundException, Sandbox.get_info, sbx.sandbox_id)
expect_raises(SandboxException, sbx.commands.run, "echo hi")
expect_raises(SandboxException, sbx.files.read, "/home/user/rel.txt")
expect_raises(NotFoundException, sbx.set_timeout, 30)
step("after kill, calls fail as the SDK expects")

other.kill()
print("conformance scenario passed")
sys.exit(0)
