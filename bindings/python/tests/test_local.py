"""Zero set-up: with nothing naming an E2B server, the package runs its
sandboxes on this machine through the e2b-tools CLI's local server, started
once per process and gone with it; a key given to ``configure`` still goes
to the server it names; without a CLI the error says what to do."""

from __future__ import annotations

import os
import textwrap

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


def test_without_a_key_or_a_cli_the_error_says_what_to_do(server):
    script = "import e2b_tools\ne2b_tools.load().run_command('true')"
    done = run_python(script, env={**NOTHING_SET, "E2B_TOOLS_CLI": None, "PATH": "/usr/bin:/bin"}, timeout=60)
    assert done.returncode != 0
    assert "LocalServerError" in done.stderr and "set E2B_API_KEY" in done.stderr, done.stderr
