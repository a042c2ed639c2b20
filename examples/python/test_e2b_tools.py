"""The component in Python, end to end: against the server named by the E2B_*
variables (``e2b-tools local serve``, started by examples/run-tests).

E2B_TOOLS_WASM names the component (default: the workspace's release build).
Optional: E2B_TOOLS_EXPECTED names the output of ``e2b-tools batch`` for
../parity-calls.jsonl; the parity test then checks that this host gets the
same results as the Rust host.

Run: ``python -m unittest -v`` in this directory.
"""

import json
import os
import time
import unittest
from pathlib import Path

import e2b_tools

TOOL_NAMES = [
    "run_code",
    "run_command",
    "write_file",
    "read_file",
    "list_files",
    "start_background_command",
]
#: Opt-in tools, enabled by ``configure(tools=["all"])``.
BACKGROUND_CONTROL_NAMES = ["get_background_output", "stop_background_command"]
PARITY_CALLS = Path(__file__).resolve().parent.parent / "parity-calls.jsonl"

_component = None


def new_instance() -> e2b_tools.E2BTools:
    """A fresh instance (hence a fresh sandbox); compiles the component once."""
    global _component
    if _component is None:
        if "E2B_API_KEY" not in e2b_tools.e2b_env():
            raise unittest.SkipTest(
                "set E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY (see examples/run-tests)"
            )
        _component = e2b_tools.ToolsComponent(e2b_tools.default_wasm_path())
    return _component.instantiate()


def normalise(value):
    """Result fields that legitimately differ between two sandboxes."""
    if isinstance(value, list):
        return [normalise(item) for item in value]
    if isinstance(value, dict):
        return {
            key: "<pid>" if key == "pid" and isinstance(field, int) else normalise(field)
            for key, field in value.items()
        }
    return value


def poll(read, done, seconds=15.0):
    """Calls ``read()`` until ``done(answer)`` or ``seconds`` pass; returns
    the last answer."""
    deadline = time.monotonic() + seconds
    while True:
        answer = read()
        if done(answer) or time.monotonic() > deadline:
            return answer
        time.sleep(0.2)


class CatalogTest(unittest.TestCase):
    def test_by_default_exactly_e2b_adks_six_tools_as_openai_function_tools(self):
        e2b = new_instance()
        tools = e2b.function_tools()
        self.assertEqual([tool["function"]["name"] for tool in tools], TOOL_NAMES)
        for tool in tools:
            self.assertEqual(tool["type"], "function")
            self.assertGreater(len(tool["function"]["description"]), 20)
            self.assertEqual(tool["function"]["parameters"]["type"], "object")
        self.assertEqual(tools[0]["function"]["parameters"]["required"], ["code"])
        self.assertIn("run_code", e2b.instructions())
        # No tool call was made: no sandbox exists, shutdown has nothing to kill.
        self.assertIsNone(e2b.sandbox_id())
        self.assertFalse(e2b.shutdown())

    def test_the_background_control_tools_are_opt_in(self):
        e2b = new_instance()
        # Not enabled: refused as unknown, before any sandbox is created.
        refused = e2b.call_tool("get_background_output", {"pid": 3})
        self.assertFalse(refused["success"])
        self.assertTrue(refused["error"].startswith("Unknown tool: get_background_output."), refused)
        with self.assertRaises(e2b_tools.ToolError) as caught:
            e2b.get_background_output(3)
        self.assertEqual(caught.exception.kind, "invalid-argument")
        self.assertIsNone(e2b.sandbox_id())

        e2b = new_instance()
        e2b.configure(tools=["all"])
        names = [tool["function"]["name"] for tool in e2b.function_tools()]
        self.assertEqual(names, TOOL_NAMES + BACKGROUND_CONTROL_NAMES)

        e2b = new_instance()
        e2b.configure(tools=["default", "get_background_output"])
        names = [tool["function"]["name"] for tool in e2b.function_tools()]
        self.assertEqual(names, TOOL_NAMES + ["get_background_output"])

        with self.assertRaises(e2b_tools.ToolError) as caught:
            new_instance().configure(tools=["no_such_tool"])
        self.assertEqual(caught.exception.kind, "invalid-argument")


class BackgroundOutputTest(unittest.TestCase):
    """get_background_output, enabled with tools=["all"]: a background
    process's output read while it runs, then only what is new."""

    # Prints a line to each stream, waits for the file `go`, prints another.
    COMMAND = "echo first; echo oops >&2; while [ ! -e {go} ]; do sleep 0.1; done; echo second"

    @classmethod
    def setUpClass(cls):
        cls.e2b = new_instance()
        cls.e2b.configure(tools=["all"], timeout_seconds=120)

    @classmethod
    def tearDownClass(cls):
        cls.e2b.shutdown()

    def test_through_call_tool_reads_output_then_only_the_new_output(self):
        e2b = self.e2b
        started = e2b.call_tool("start_background_command", {"command": self.COMMAND.format(go="go-json")})
        self.assertTrue(started["success"], started)
        pid = started["pid"]

        def read(since=None):
            args = {"pid": pid} if since is None else {"pid": pid, "since": since}
            return e2b.call_tool("get_background_output", args)

        first = poll(read, lambda out: out.get("stdout") == "first\n" and out.get("stderr") == "oops\n")
        self.assertEqual(
            first,
            {
                "pid": pid,
                "state": "running",
                "exit_code": None,
                "stdout": "first\n",
                "stderr": "oops\n",
                "next_since": {"stdout": 6, "stderr": 5},
                "success": True,
            },
        )
        # Nothing new yet.
        idle = read(first["next_since"])
        self.assertEqual((idle["state"], idle["stdout"], idle["stderr"]), ("running", "", ""), idle)
        self.assertEqual(idle["next_since"], first["next_since"])

        self.assertEqual(e2b.call_tool("run_command", {"command": "touch go-json"})["exit_code"], 0)
        done = poll(lambda: read(first["next_since"]), lambda out: out.get("state") == "exited")
        self.assertEqual(
            done,
            {
                "pid": pid,
                "state": "exited",
                "exit_code": 0,
                "stdout": "second\n",
                "stderr": "",
                "next_since": {"stdout": 13, "stderr": 5},
                "success": True,
            },
        )
        # From the start again: all of it.
        self.assertEqual(read()["stdout"], "first\nsecond\n")

    def test_typed_with_since_from_next_since(self):
        e2b = self.e2b
        pid = e2b.start_background_command(self.COMMAND.format(go="go-typed"))["pid"]
        first = poll(lambda: e2b.get_background_output(pid), lambda out: out["stdout"] == "first\n")
        self.assertEqual(
            first,
            {
                "pid": pid,
                "state": "running",
                "exit-code": None,
                "stdout": "first\n",
                "stderr": "oops\n",
                "next-since": {"stdout": 6, "stderr": 5},
            },
        )
        e2b.run_command("touch go-typed")
        done = poll(
            lambda: e2b.get_background_output(pid, since=first["next-since"]),
            lambda out: out["state"] == "exited",
        )
        self.assertEqual(
            (done["state"], done["exit-code"], done["stdout"], done["stderr"], done["next-since"]),
            ("exited", 0, "second\n", "", {"stdout": 13, "stderr": 5}),
        )
        # An offset past the end reads nothing.
        self.assertEqual(e2b.get_background_output(pid, since={"stdout": 13, "stderr": 5})["stdout"], "")

    def test_a_pid_not_started_here_is_not_found(self):
        with self.assertRaises(e2b_tools.ToolError) as caught:
            self.e2b.get_background_output(999_999)
        self.assertEqual(caught.exception.kind, "not-found")


class CallToolTest(unittest.TestCase):
    """The six tools as a model calls them, in one sandbox."""

    @classmethod
    def setUpClass(cls):
        cls.e2b = new_instance()
        cls.e2b.configure(timeout_seconds=120, metadata={"test": "python"})

    @classmethod
    def tearDownClass(cls):
        was_open = cls.e2b.sandbox_id() is not None
        assert cls.e2b.shutdown() == was_open, "shutdown kills the open sandbox"
        assert cls.e2b.sandbox_id() is None

    def test_1_run_code_keeps_state_across_calls(self):
        self.assertTrue(self.e2b.call_tool("run_code", {"code": "x = 41"})["success"])
        self.assertEqual(
            self.e2b.call_tool("run_code", '{"code": "x + 1"}'),
            {"stdout": "", "stderr": "", "text": "42", "error": "", "success": True},
        )
        self.assertTrue(self.e2b.sandbox_id())

    def test_2_configure_is_refused_once_the_sandbox_is_open(self):
        with self.assertRaises(e2b_tools.ToolError) as caught:
            self.e2b.configure(timeout_seconds=60)
        self.assertEqual(caught.exception.kind, "invalid-argument")

    def test_3_run_command_returns_stdout_and_the_exit_code(self):
        result = self.e2b.call_tool("run_command", {"command": "echo hello; exit 3"})
        self.assertEqual(result["stdout"], "hello\n")
        self.assertEqual(result["exit_code"], 3)
        self.assertTrue(result["success"])

    def test_4_write_read_list_round_trip(self):
        content = "héllo\nwörld\n"
        self.assertEqual(
            self.e2b.call_tool("write_file", {"path": "dir/a.txt", "content": content}),
            {"path": "dir/a.txt", "success": True},
        )
        self.assertEqual(self.e2b.call_tool("read_file", {"path": "dir/a.txt"})["content"], content)
        self.assertEqual(
            self.e2b.call_tool("list_files", {"path": "dir"})["entries"],
            [{"name": "a.txt", "type": "file"}],
        )

    def test_5_start_background_command_returns_a_pid_while_it_runs(self):
        started = time.monotonic()
        result = self.e2b.call_tool("start_background_command", {"command": "sleep 30", "timeout": 10})
        self.assertTrue(result["success"], result)
        self.assertIsInstance(result["pid"], int)
        self.assertGreater(result["pid"], 0)
        self.assertIsNone(result.get("readiness"), result)
        self.assertLess(time.monotonic() - started, 5)

    def test_6_a_failure_is_a_result_with_e2b_adks_shape(self):
        self.assertEqual(
            self.e2b.call_tool("read_file", {"path": "dir/missing.txt"}),
            {
                "success": False,
                "error": "Failed to read file: path 'dir/missing.txt' does not exist",
                "partial_output": "",
                "path": "dir/missing.txt",
            },
        )
        self.assertFalse(self.e2b.call_tool("no_such_tool", {})["success"])
        self.assertFalse(self.e2b.call_tool("run_code", "{not json")["success"])


class TypedToolsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.e2b = new_instance()

    @classmethod
    def tearDownClass(cls):
        was_open = cls.e2b.sandbox_id() is not None
        assert cls.e2b.shutdown() == was_open, "shutdown kills the open sandbox"

    def test_the_six_tools_with_wit_types(self):
        code = self.e2b.run_code("print(6 * 7)")
        self.assertEqual(code["stdout"], "42\n")
        self.assertEqual(code["rich"], [])

        command = self.e2b.run_command('echo "$WHO"', cwd="/tmp", envs={"WHO": "typed"})
        self.assertEqual(
            command, {"command": 'echo "$WHO"', "stdout": "typed\n", "stderr": "", "exit-code": 0}
        )

        self.e2b.write_file("typed.txt", "one\n")
        self.assertEqual(self.e2b.read_file("typed.txt"), "one\n")
        self.assertIn({"name": "typed.txt", "type": "file"}, self.e2b.list_files())

        background = self.e2b.start_background_command("sleep 30", timeout_seconds=10)
        self.assertGreater(background["pid"], 0)
        self.assertIsNone(background["readiness"])

    def test_a_failed_call_raises_tool_error_with_a_kind(self):
        with self.assertRaises(e2b_tools.ToolError) as caught:
            self.e2b.read_file("nope.txt")
        self.assertEqual(caught.exception.kind, "not-found")
        self.assertEqual(caught.exception.path, "nope.txt")
        self.assertTrue(str(caught.exception).startswith("Failed to read file: "))


class KeepAliveTest(unittest.TestCase):
    def test_a_call_longer_than_the_sandbox_timeout_keeps_the_sandbox_alive(self):
        e2b = new_instance()
        e2b.configure(timeout_seconds=4)
        try:
            result = e2b.call_tool("run_code", {"code": "import time\ntime.sleep(8)\nprint('alive')"})
            self.assertEqual(result.get("stdout"), "alive\n", result)
            self.assertTrue(e2b.call_tool("run_command", {"command": "true"})["success"])
        finally:
            e2b.shutdown()


class JavaScriptKernelTest(unittest.TestCase):
    """The parity call in JavaScript only shows that both hosts agree; this
    shows what the kernel gives."""

    def test_values_console_output_state_and_errors(self):
        e2b = new_instance()

        def js(code, language="javascript"):
            return e2b.call_tool("run_code", {"code": code, "language": language})

        try:
            self.assertEqual(
                js("1 + 1", "js"),
                {"stdout": "", "stderr": "", "text": "2", "error": "", "success": True},
            )
            self.assertEqual(
                js("console.log(6 * 7)"),
                {"stdout": "42\n", "stderr": "", "text": "", "error": "", "success": True},
            )
            first = js('let n = 40; console.error("to stderr"); n + 2')
            self.assertEqual((first["stderr"], first["text"]), ("to stderr\n", "42"), first)
            self.assertEqual(js("n * 2")["text"], "80")
            # As in e2b-adk, an exception is a successful call with `error`
            # set: the name and value, then the stack.
            thrown = js("null.x")
            self.assertTrue(thrown["success"], thrown)
            self.assertTrue(
                thrown["error"].startswith("TypeError: Cannot read properties of null (reading 'x')\n"),
                thrown,
            )
            self.assertEqual(thrown["text"], "")
        finally:
            e2b.shutdown()


@unittest.skipUnless(os.environ.get("E2B_TOOLS_EXPECTED"), "E2B_TOOLS_EXPECTED is not set")
class ParityTest(unittest.TestCase):
    def test_same_results_as_the_rust_host(self):
        calls = [json.loads(line) for line in PARITY_CALLS.read_text().splitlines() if line.strip()]
        expected_text = Path(os.environ["E2B_TOOLS_EXPECTED"]).read_text()
        expected = [json.loads(line) for line in expected_text.splitlines() if line.strip()]
        self.assertEqual(len(expected), len(calls), "one batch result per call")

        e2b = new_instance()
        try:
            for number, (call, want) in enumerate(zip(calls, expected), start=1):
                got = e2b.call_tool(call["tool"], call.get("args", {}))
                self.assertEqual(normalise(got), normalise(want), f"call {number}: {json.dumps(call)}")
        finally:
            e2b.shutdown()


if __name__ == "__main__":
    unittest.main()
