"""Zero set-up: with nothing naming an E2B server, the package runs its
sandboxes on this machine through a local server (the e2b-tools CLI's, or
the one the Linux x86-64 wheel ships), started once per process and gone
with it; a key given to ``configure`` still goes to the server it names;
without any server the error says what to do."""

from __future__ import annotations

import os
import textwrap

import pytest
from conftest import poll, run_python

#: No E2B_* at all, as on a fresh machine.
NOTHING_SET = {"E2B_API_KEY": None, "E2B_API_URL": None, "E2B_SANDBOX_URL": None, "E2B_DOMAIN": None}


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return not open(f"/proc/{pid}/stat").read().split(")")[1].split()[0] == "Z"


def test_with_nothing_set_the_readme_snippet_runs_on_a_local_server_gone_at_exit(server):
    cli = os.environ["E2B_TOOLS_CLI"]
    script = textwrap.dedent(
        """
        import e2b_tools
        from e2b_tools import _local
        with e2b_tools.load() as e2b:
            result = e2b.call_tool("run_code", {"code": "x = 6 * 7\\nprint(x)"})
            print(result["stdout"].strip(), e2b.run_code("x + 1").text, flush=True)
        other = e2b_tools.load()
        print(other.run_command("echo again").stdout.strip(), _local.server_pid(), flush=True)
        """
    )
    done = run_python(script, env={**NOTHING_SET, "E2B_TOOLS_CLI": cli}, timeout=180)
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.strip().splitlines()
    assert first == "42 43", done.stdout
    word, pid = second.split()
    assert word == "again", done.stdout
    # One server for the process, and it is gone with it.
    assert not poll(lambda: alive(int(pid)), lambda up: not up, seconds=15), "the local server outlived its process"


def test_a_key_given_to_configure_goes_to_its_server_not_the_local_one(server):
    script = textwrap.dedent(
        f"""
        import e2b_tools
        from e2b_tools import _local
        e2b = e2b_tools.load()
        e2b.configure(api_key={server["E2B_API_KEY"]!r}, api_url={server["E2B_API_URL"]!r},
                      sandbox_url={server["E2B_SANDBOX_URL"]!r})
        print(e2b.run_command("echo named").stdout.strip(), _local.server_pid(), flush=True)
        e2b.close()
        """
    )
    done = run_python(script, env={**NOTHING_SET, "E2B_TOOLS_CLI": "/nonexistent/e2b-tools"}, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["named", "None"], done.stdout


def test_the_platform_wheel_runs_the_readme_snippet_on_its_own_server(server):
    wheel = os.environ.get("E2B_TOOLS_WHEEL", "")
    if "manylinux" not in wheel:
        pytest.skip(f"{wheel or 'this wheel'} is the pure one: it ships no local server")
    # No CLI named nor on PATH: only the bundled e2b-local can serve.
    script = textwrap.dedent(
        """
        import os
        import e2b_tools
        from e2b_tools import _local
        with e2b_tools.load() as e2b:
            result = e2b.call_tool("run_code", {"code": "print(6 * 7)"})
            pid = _local.server_pid()
            exe = os.path.basename(os.readlink(f"/proc/{pid}/exe"))
            print(result["stdout"].strip(), exe, pid, flush=True)
        """
    )
    done = run_python(script, env={**NOTHING_SET, "E2B_TOOLS_CLI": None, "PATH": "/usr/bin:/bin"}, timeout=180)
    assert done.returncode == 0, done.stderr
    answer, exe, pid = done.stdout.split()
    assert (answer, exe) == ("42", "e2b-local"), done.stdout
    assert not poll(lambda: alive(int(pid)), lambda up: not up, seconds=15), "the local server outlived its process"


def test_without_a_key_or_a_server_the_error_says_what_to_do(server):
    # As the pure wheel is: no bundled server.
    script = textwrap.dedent(
        """
        import e2b_tools
        from e2b_tools import _local
        _local.BUNDLED = _local.Path("/nonexistent/e2b-local")
        e2b_tools.load().run_command("true")
        """
    )
    done = run_python(script, env={**NOTHING_SET, "E2B_TOOLS_CLI": None, "PATH": "/usr/bin:/bin"}, timeout=60)
    assert done.returncode != 0
    assert "LocalServerError" in done.stderr and "set E2B_API_KEY" in done.stderr, done.stderr
