"""The host library against the local server: the installed package, the
tool lists, JSON dispatch, typed calls, argument checks, the outbound
allow-list and per-instance serialization."""

from __future__ import annotations

import gc
import http.server
import json
import sys
import textwrap
import threading
import weakref
from pathlib import Path
from typing import Iterator, List

import pytest

import e2b_tools

from conftest import OPT_IN, SIX, poll, run_python, sandboxes


def test_the_package_is_the_installed_wheel_with_its_component():
    package = Path(e2b_tools.__file__).resolve().parent
    assert package.is_relative_to(Path(sys.prefix).resolve()), package
    assert (package / "py.typed").is_file()
    assert e2b_tools.default_wasm_path() == package / "e2b_tools.wasm"
    assert e2b_tools.default_wasm_path().stat().st_size > 100_000


class TestToolLists:
    def test_the_three_shapes_carry_the_catalog(self, e2b):
        specs = e2b.list_tools()
        assert [s.name for s in specs] == SIX
        assert specs[0].parameters["required"] == ["code"]
        assert specs[3].hints.read_only and not specs[0].hints.read_only
        assert specs[0].result_schema["type"] == "object"

        chat = e2b.openai_chat_tools()
        assert chat[0] == {
            "type": "function",
            "function": {
                "name": "run_code",
                "description": specs[0].description,
                "parameters": specs[0].parameters,
            },
        }
        responses = e2b.openai_responses_tools()
        assert responses[1] == {
            "type": "function",
            "name": "run_command",
            "description": specs[1].description,
            "parameters": specs[1].parameters,
        }
        anthropic = e2b.anthropic_tools()
        assert anthropic[2] == {
            "name": "write_file",
            "description": specs[2].description,
            "input_schema": specs[2].parameters,
        }
        for shape in (chat, responses, anthropic):
            assert len(shape) == 6
        for tool in chat:
            assert tool["type"] == "function"
            assert len(tool["function"]["description"]) > 20, tool
            assert tool["function"]["parameters"]["type"] == "object", tool
        assert "run_code" in e2b.instructions()
        # Listing creates no sandbox.
        assert e2b.sandbox_id() is None

    def test_tool_selection(self, component):
        every = component.instantiate()
        every.configure(tools="all")
        assert [t["name"] for t in every.anthropic_tools()] == SIX + OPT_IN
        some = component.instantiate()
        some.configure(tools=["read_file", "list_files"])
        assert [t["name"] for t in some.openai_responses_tools()] == ["read_file", "list_files"]
        refused = some.call_tool("write_file", {"path": "x", "content": ""})
        assert refused["success"] is False and refused["error"].startswith("Unknown tool: write_file")
        assert some.sandbox_id() is None
        one = component.instantiate()
        one.configure(tools=["default", "get_background_output"])
        assert [t["function"]["name"] for t in one.openai_chat_tools()] == SIX + ["get_background_output"]
        with pytest.raises(e2b_tools.ToolError) as caught:
            component.instantiate().configure(tools=["no_such_tool"])
        assert caught.value.kind == "invalid-argument"

    def test_the_background_control_tools_are_refused_until_enabled(self, component):
        e2b = component.instantiate()
        # Refused as unknown, before any sandbox is created.
        refused = e2b.call_tool("get_background_output", {"pid": 3})
        assert refused["success"] is False
        assert refused["error"].startswith("Unknown tool: get_background_output."), refused
        with pytest.raises(e2b_tools.ToolError) as caught:
            e2b.get_background_output(3)
        assert caught.value.kind == "invalid-argument"
        assert e2b.sandbox_id() is None


class TestJsonDispatch:
    def test_state_files_commands_and_failures_as_a_model_calls_them(self, e2b):
        assert e2b.call_tool("run_code", {"code": "x = 41"})["success"]
        assert e2b.call_tool("run_code", '{"code": "x + 1"}') == {
            "stdout": "",
            "stderr": "",
            "text": "42",
            "error": "",
            "success": True,
        }
        assert e2b.call_tool("write_file", {"path": "d/a.txt", "content": "héllo\n"}) == {
            "path": "d/a.txt",
            "success": True,
        }
        assert e2b.call_tool("read_file", {"path": "d/a.txt"})["content"] == "héllo\n"
        assert e2b.call_tool("list_files", {"path": "d"})["entries"] == [{"name": "a.txt", "type": "file"}]
        command = e2b.call_tool("run_command", {"command": "echo out; echo err >&2; exit 3"})
        assert (command["stdout"], command["stderr"], command["exit_code"]) == ("out\n", "err\n", 3)
        assert e2b.call_tool("read_file", {"path": "d/missing.txt"}) == {
            "success": False,
            "error": "Failed to read file: path 'd/missing.txt' does not exist",
            "partial_output": "",
            "path": "d/missing.txt",
        }

    def test_bad_model_input_is_a_failed_result_not_an_exception(self, e2b):
        for name, arguments in [
            ("no_such_tool", {}),
            ("run_code", "{not json"),
            ("run_code", "[1, 2]"),
            ("run_code", {"code": 7}),
            ("run_code", '{"code": "\\ud800"}'),
            ("run_code", '{"code": "\ud800"}'),
            ("run\ud800code", {}),
        ]:
            result = e2b.call_tool(name, arguments)
            assert result["success"] is False and result["error"], (name, arguments, result)
        with pytest.raises(TypeError):
            e2b.call_tool("run_code", 42)  # type: ignore[arg-type]
        # The instance is still fine.
        assert e2b.call_tool("run_code", {"code": "1 + 1"})["text"] == "2"


class TestTypedCalls:
    def test_the_six_tools_with_typed_results(self, e2b):
        out = e2b.run_code("import sys\nprint(6 * 7)\nprint('e', file=sys.stderr)\n21 * 2")
        assert out == e2b_tools.RunCodeOutput(stdout="42\n", stderr="e\n", text="42", error="", rich=[])
        raised = e2b.run_code("1 / 0")
        assert raised.error.startswith("ZeroDivisionError: division by zero\n")

        assert e2b.run_command('echo "$WHO"; pwd', cwd="/tmp", envs={"WHO": "typed"}) == e2b_tools.CommandOutput(
            command='echo "$WHO"; pwd', stdout="typed\n/tmp\n", stderr="", exit_code=0
        )
        e2b.write_file("typed/one.txt", "one\n")
        assert e2b.read_file("typed/one.txt") == "one\n"
        assert e2b.list_files("typed") == [e2b_tools.DirEntry(name="one.txt", type="file")]
        assert e2b_tools.DirEntry(name="typed", type="dir") in e2b.list_files()

        started = e2b.start_background_command("python3 -m http.server 8000", port=8000, cwd="typed")
        assert started.pid > 0 and started.readiness == "ready", started
        assert started.preview_url and "8000" in started.preview_url
        fetched = e2b.run_command("curl -s localhost:8000/one.txt")
        assert fetched.stdout == "one\n"

    def test_failures_raise_tool_error_with_a_kind(self, e2b):
        with pytest.raises(e2b_tools.ToolError) as caught:
            e2b.read_file("nope.txt")
        assert (caught.value.kind, caught.value.path) == ("not-found", "nope.txt")
        assert str(caught.value).startswith("Failed to read file: ")
        e2b.run_code("x = 1")
        with pytest.raises(e2b_tools.ToolError) as caught:
            e2b.configure(timeout_seconds=60)
        assert caught.value.kind == "invalid-argument"

    def test_background_output_and_stop(self, component):
        with component.instantiate() as e2b:
            e2b.configure(tools="all", timeout_seconds=120)
            pid = e2b.start_background_command("echo first; sleep 300").pid
            first = poll(lambda: e2b.get_background_output(pid), lambda out: out.stdout == "first\n")
            assert (first.state, first.stdout, first.next_since) == (
                "running",
                "first\n",
                e2b_tools.OutputOffsets(stdout=6, stderr=0),
            )
            assert e2b.get_background_output(pid, since=first.next_since).stdout == ""
            stopped = e2b.stop_background_command(pid, "TERM")
            assert (stopped.pid, stopped.signal) == (pid, "sigterm")
            with pytest.raises(e2b_tools.ToolError) as caught:
                e2b.get_background_output(999_999)
            assert caught.value.kind == "not-found"

    def test_snapshots_and_forks(self, component):
        with component.instantiate() as e2b:
            e2b.configure(tools="all", timeout_seconds=120)
            e2b.write_file("state.txt", "base")
            forks = e2b.fork_sandbox(count=2)
            assert len(forks.sandbox_ids) == 2 and forks.failures == []
            own = e2b.sandbox_id()
            assert set(forks.sandbox_ids) <= set(sandboxes()) and own in sandboxes()
            # call_tool works in a fork by its id.
            moved = e2b.call_tool(
                "run_command", {"command": "echo fork > state.txt", "sandbox_id": forks.sandbox_ids[0]}
            )
            assert moved["success"], moved
            assert e2b.read_file("state.txt") == "base"
            read = e2b.call_tool("read_file", {"path": "state.txt", "sandbox_id": forks.sandbox_ids[0]})
            assert read["content"] == "fork\n", read
            snapshot = e2b.create_snapshot("pkg-test")
            assert snapshot.snapshot_id and any("pkg-test" in n for n in snapshot.names), snapshot
            with pytest.raises(ValueError):
                e2b.fork_sandbox(count=-1)
            with pytest.raises(TypeError):
                e2b.fork_sandbox(keep="yes")  # type: ignore[arg-type]
            with pytest.raises(e2b_tools.ToolError) as caught:
                e2b.fork_sandbox(count=9)
            assert caught.value.kind == "invalid-argument"
            e2b.shutdown()
            # The forks ended with the instance's sandbox.
            assert not set(forks.sandbox_ids + [own]) & set(sandboxes())

    def test_bad_arguments_are_clear_errors_before_the_component_is_entered(self, e2b):
        for call, error in [
            (lambda: e2b.run_code(123), TypeError),  # type: ignore[arg-type]
            (lambda: e2b.run_code("1", timeout_seconds=-1), ValueError),
            (lambda: e2b.run_code("1", timeout_seconds=2**32), ValueError),
            (lambda: e2b.run_code("1", timeout_seconds=True), TypeError),
            (lambda: e2b.run_code("\ud800"), ValueError),
            (lambda: e2b.run_command("true", envs={"A": 1}), TypeError),  # type: ignore[dict-item]
            (lambda: e2b.start_background_command("true", port=70_000), ValueError),
            (lambda: e2b.stop_background_command(1, "SIGSTOP"), ValueError),
            (lambda: e2b.configure(on_timeout="explode"), ValueError),
            (lambda: e2b.configure(tools=[1]), TypeError),  # type: ignore[list-item]
            (lambda: e2b.configure(network={"allow_out": "1.1.1.1"}), TypeError),
            (lambda: e2b.configure(api_url="not a url"), e2b_tools.PolicyError),
            (lambda: e2b.configure(kill_on_exit="yes"), TypeError),  # type: ignore[arg-type]
            (lambda: e2b.kill(None), TypeError),  # type: ignore[arg-type]
        ]:
            with pytest.raises(error):
                call()
        # Nothing reached the component: it is untouched and still usable.
        assert e2b.sandbox_id() is None
        assert e2b.run_code("2 + 2").text == "4"

    def test_shutdown_kills_the_sandbox(self, component):
        e2b = component.instantiate()
        assert e2b.shutdown() is False
        e2b.run_code("1")
        sandbox = e2b.sandbox_id()
        assert sandbox in sandboxes()
        assert e2b.shutdown() is True
        assert sandbox not in sandboxes() and e2b.sandbox_id() is None

    def test_kill_by_id(self, component):
        with component.instantiate() as e2b:
            e2b.configure(tools="all")
            kept = e2b.fork_sandbox(count=1, keep=True).sandbox_ids[0]
            own = e2b.sandbox_id()
            # Another instance kills it without attaching to it; it was
            # never that one's, so it tells no stop of it.
            seen = []
            other = component.instantiate(on_event=seen.append)
            assert other.kill(kept) is True
            assert other.kill(kept) is False
            assert other.sandbox_id() is None
            other.close()
            assert kept not in sandboxes() and own in sandboxes()
            assert seen == []
            # Its own is forgotten: the next call makes a fresh one.
            assert e2b.kill(own) is True
            assert own not in sandboxes() and e2b.sandbox_id() is None
            with pytest.raises(e2b_tools.ToolError) as caught:
                e2b.kill("")
            assert caught.value.kind == "invalid-argument"


def test_a_dropped_instance_is_freed(component):
    # Its store holds the outbound gate's host function: nothing there may
    # refer back to the instance, or no instance would ever be freed.
    e2b = component.instantiate()
    e2b.list_tools()
    gone = weakref.ref(e2b)
    del e2b
    gc.collect()
    assert gone() is None


class TestMemoryCap:
    def test_a_trap_is_an_instance_error_and_the_host_survives(self, component):
        # The argument alone needs more memory than the instance may have.
        e2b = component.instantiate(memory_limit=4 * 1024 * 1024)
        with pytest.raises(e2b_tools.InstanceError):
            e2b.write_file("big.txt", "x" * 8 * 1024 * 1024)
        with pytest.raises(e2b_tools.InstanceError, match="trapped earlier"):
            e2b.list_tools()
        with component.instantiate() as healthy:
            assert healthy.run_code("3 * 3").text == "9"

    def test_a_trapped_instances_sandbox_is_killed_through_another(self, component):
        seen = []
        e2b = component.instantiate(memory_limit=8 * 1024 * 1024, on_event=seen.append)
        assert e2b.run_command("true").exit_code == 0
        sandbox = e2b.sandbox_id()
        with pytest.raises(e2b_tools.InstanceError):
            e2b.write_file("big.txt", "x" * 12 * 1024 * 1024)
        assert sandbox in sandboxes()
        # It cannot be called any more: a fresh instance kills its sandbox.
        e2b.close()
        assert sandbox not in sandboxes()
        poll(lambda: len(seen), lambda n: n >= 7)
        assert [(e.kind, e.tool, e.error_kind) for e in seen[3:]] == [
            ("exec_start", "write_file", None),
            ("error", None, "trapped"),
            ("exec_end", "write_file", "trapped"),
            ("sandbox_stop", None, None),
        ]
        assert (seen[-1].sandbox_id, seen[-1].detail, seen[-1].success) == (sandbox, "shutdown", True)


class Decoy(http.server.ThreadingHTTPServer):
    """A server on loopback that records every request and answers 500."""

    def __init__(self) -> None:
        self.requests: List[str] = []
        decoy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                decoy.requests.append(f"{self.command} {self.path}")
                self.send_response(500)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_DELETE = do_POST

            def log_message(self, *args: object) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server_address[1]}"


@pytest.fixture
def decoy() -> Iterator[Decoy]:
    server = Decoy()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


class TestAllowList:
    def test_a_host_outside_the_allow_list_is_refused_before_any_connection(self, component, server, decoy):
        before = sandboxes()
        policy = e2b_tools.OutboundPolicy.for_endpoints(server["E2B_API_URL"], server["E2B_SANDBOX_URL"])
        e2b = component.instantiate(policy=policy)
        # The component is pointed at the decoy; the allow-list names only the server.
        e2b.configure(api_url=decoy.url, sandbox_url=decoy.url)
        result = e2b.call_tool("run_code", {"code": "1"})
        assert result["success"] is False
        assert "HttpRequestDenied" in result["error"], result
        with pytest.raises(e2b_tools.ToolError) as caught:
            e2b.run_command("true")
        assert caught.value.kind == "network"
        assert decoy.requests == [], "nothing reached the decoy"
        assert sandboxes() == before, "nor the allowed server (not asked)"
        # A tool failure, not a trap: the instance still answers.
        assert [t.name for t in e2b.list_tools()] == SIX

    def test_a_sandbox_host_outside_the_allow_list_is_refused(self, component, server, decoy):
        policy = e2b_tools.OutboundPolicy.for_endpoints(server["E2B_API_URL"], server["E2B_SANDBOX_URL"])
        with component.instantiate(policy=policy) as e2b:
            # The control plane is allowed (the sandbox is created and later
            # killed there); its traffic is sent to the decoy, and refused.
            e2b.configure(sandbox_url=decoy.url)
            result = e2b.call_tool("run_command", {"command": "true"})
            assert result["success"] is False and "HttpRequestDenied" in result["error"], result
            assert e2b.sandbox_id() in sandboxes()
        assert decoy.requests == []

    def test_by_default_the_allow_list_follows_the_configured_endpoints(self, component, server, decoy):
        e2b = component.instantiate()
        assert str(e2b.policy) == server["E2B_API_URL"]
        e2b.configure(api_url=decoy.url, sandbox_url=decoy.url)
        assert str(e2b.policy) == decoy.url
        result = e2b.call_tool("run_code", {"code": "1"})
        assert result["success"] is False and "HttpRequestDenied" not in result["error"], result
        assert decoy.requests and decoy.requests[0].endswith("/sandboxes"), decoy.requests


class TestOutboundPolicy:
    """The rules of host/src/policy.rs, case for case."""

    def allows(self, policy: e2b_tools.OutboundPolicy, url: str) -> bool:
        scheme, _, authority = url.partition("://")
        return policy.allows(scheme == "https", authority.split("/")[0])

    def test_defaults_allow_the_api_and_sandbox_hosts_of_e2b(self):
        policy = e2b_tools.OutboundPolicy.for_endpoints()
        assert self.allows(policy, "https://api.e2b.app/sandboxes")
        assert self.allows(policy, "https://49983-abc123.e2b.app/execute")
        assert self.allows(policy, "https://API.E2B.APP:443/")
        for url in [
            "http://api.e2b.app/sandboxes",
            "https://api.e2b.app:8443/",
            "https://e2b.app/",
            "https://evil-e2b.app/",
            "https://e2b.app.evil.com/",
            "https://example.com/",
        ]:
            assert not self.allows(policy, url), url
        assert str(policy) == "https://api.e2b.app:443, https://*.e2b.app:443"

    def test_a_custom_domain_moves_both_families(self):
        policy = e2b_tools.OutboundPolicy.for_endpoints(domain="Sandbox.Example.")
        assert self.allows(policy, "https://api.sandbox.example/")
        assert self.allows(policy, "https://8080-xyz.sandbox.example/")
        assert not self.allows(policy, "https://api.e2b.app/")

    def test_explicit_urls_allow_exactly_their_origin(self):
        policy = e2b_tools.OutboundPolicy.for_endpoints("http://127.0.0.1:3000", "http://127.0.0.1:3000/")
        assert self.allows(policy, "http://127.0.0.1:3000/sandboxes")
        assert self.allows(policy, "http://user@127.0.0.1:3000/")
        for url in [
            "http://127.0.0.1:3001/sandboxes",
            "https://127.0.0.1:3000/",
            "http://localhost:3000/",
            "https://49983-abc.e2b.app/",
            "https://api.e2b.app/",
            "http://127.0.0.1:notaport/",
        ]:
            assert not self.allows(policy, url), url
        assert str(policy) == "http://127.0.0.1:3000"

    def test_an_explicit_api_url_keeps_default_sandbox_hosts(self):
        policy = e2b_tools.OutboundPolicy.for_endpoints("https://api.internal:8443")
        assert self.allows(policy, "https://api.internal:8443/x")
        assert self.allows(policy, "https://49983-abc.e2b.app/")
        assert not self.allows(policy, "https://api.internal/x")
        assert not self.allows(policy, "https://example.com/")

    def test_malformed_urls_are_rejected(self):
        with pytest.raises(e2b_tools.PolicyError) as caught:
            e2b_tools.OutboundPolicy.for_endpoints("not a url")
        assert caught.value.setting == "E2B_API_URL"
        for url in ["ftp://x", "/relative", "http://"]:
            with pytest.raises(e2b_tools.PolicyError):
                e2b_tools.OutboundPolicy.for_endpoints(sandbox_url=url)


CONCURRENT = textwrap.dedent(
    """
    import json, sys, threading
    import e2b_tools

    e2b = e2b_tools.load(cache_dir=sys.argv[1])
    e2b.run_code("counter = 0")
    results, errors = {}, []

    def worker(n):
        try:
            for i in range(3):
                code = f"import time\\ntime.sleep(0.2)\\nprint({n} * 100 + {i})"
                results[f"code-{n}-{i}"] = e2b.call_tool("run_code", {"code": code})["stdout"]
                out = e2b.run_command(f"echo {n}-{i}")
                results[f"command-{n}-{i}"] = out.stdout
        except BaseException as err:
            errors.append(repr(err))

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    e2b.shutdown()
    print(json.dumps({"results": results, "errors": errors}))
    """
)


def test_threads_sharing_an_instance_are_serialized(server, cache_dir):
    # In a child process: unserialized calls into one store can crash it.
    done = run_python(CONCURRENT.replace("sys.argv[1]", repr(str(cache_dir))), env={})
    assert done.returncode == 0, done.stderr[-3000:]
    answer = json.loads(done.stdout.splitlines()[-1])
    assert answer["errors"] == []
    expected = {}
    for n in range(4):
        for i in range(3):
            expected[f"code-{n}-{i}"] = f"{n * 100 + i}\n"
            expected[f"command-{n}-{i}"] = f"{n}-{i}\n"
    assert answer["results"] == expected
