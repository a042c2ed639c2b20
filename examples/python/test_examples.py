"""The Python example and the e2b-tools package it uses, against the server
named by the E2B_* variables (``e2b-tools local serve``, started by
examples/run-tests, which installs the wheel into a fresh venv and runs these
tests from a copy of this directory).

Optional: E2B_TOOLS_EXPECTED names the output of ``e2b-tools batch`` for
../parity-calls.jsonl (E2B_TOOLS_PARITY_CALLS names the calls when this file
is not beside it); the parity test then checks that the example's answers
carry the same results as the Rust host's, through both of its dispatchers.

The package's own tests (bindings/python/tests) cover its API; what is here
are the example, the parity with the Rust host, and the component's
behaviour those tests do not check.

Run: ``python -m unittest -v`` in this directory.
"""

import json
import os
import subprocess
import sys
import time
import unittest
from pathlib import Path

import e2b_tools

import main as example

HERE = Path(__file__).resolve().parent
SIX = ["run_code", "run_command", "write_file", "read_file", "list_files", "start_background_command"]
#: Opt-in tools, enabled by ``configure(tools=["all"])``.
BACKGROUND_CONTROL = ["get_background_output", "stop_background_command"]

_component = None


def new_instance() -> e2b_tools.E2BTools:
    """A fresh instance (hence a fresh sandbox); compiles the component once."""
    global _component
    if _component is None:
        if "E2B_API_KEY" not in e2b_tools.e2b_env():
            raise unittest.SkipTest("set E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY (see examples/run-tests)")
        _component = e2b_tools.ToolsComponent()
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


class ExampleTest(unittest.TestCase):
    def test_main_runs_the_tour_and_shuts_the_sandbox_down(self):
        new_instance()  # skips without a server
        run = subprocess.run(
            [sys.executable, str(HERE / "main.py")], capture_output=True, text=True, timeout=300, cwd=HERE
        )
        self.assertEqual(run.returncode, 0, run.stderr)
        out = run.stdout
        self.assertIn("tools: " + ", ".join(SIX) + "\n", out)
        self.assertIn('{"name": "run_code", "description": ', out)
        self.assertIn("run_code x + 1 -> 42\n", out)
        self.assertIn("read_file -> 'buy milk\\n'\n", out)
        self.assertIn("list_files -> ['todo.txt']\n", out)
        self.assertIn("read_file missing -> ToolError not-found: Failed to read file: ", out)
        self.assertIn('"tool_call_id": "call_1", "content": "{\\"stdout\\": \\"\\", \\"stderr\\": \\"\\", \\"text\\": \\"82\\"', out)
        self.assertIn('"tool_call_id": "call_2", "content": "{\\"success\\": false', out)
        self.assertIn('"tool_use_id": "toolu_1", "content": "{\\"command\\": \\"ls notes\\", \\"stdout\\": \\"todo.txt\\\\n\\"', out)
        self.assertIn("sandbox after the block: None\n", out)

    def test_the_answers_have_each_apis_shape(self):
        with new_instance() as e2b:
            [message] = example.answer_openai(
                e2b, [{"id": "c1", "type": "function", "function": {"name": "no_such_tool", "arguments": "{}"}}]
            )
            self.assertEqual(set(message), {"role", "tool_call_id", "content"})
            self.assertEqual((message["role"], message["tool_call_id"]), ("tool", "c1"))
            self.assertFalse(json.loads(message["content"])["success"])
            blocks = example.answer_anthropic(
                e2b,
                [
                    {"type": "text", "text": "thinking"},
                    {"type": "tool_use", "id": "t1", "name": "run_code", "input": {"code": "6 * 7"}},
                    {"type": "tool_use", "id": "t2", "name": "read_file", "input": {"path": "nope"}},
                ],
            )
            self.assertEqual([(b["type"], b["tool_use_id"], b["is_error"]) for b in blocks],
                             [("tool_result", "t1", False), ("tool_result", "t2", True)])
            self.assertEqual(json.loads(blocks[0]["content"])["text"], "42")


@unittest.skipUnless(os.environ.get("E2B_TOOLS_EXPECTED"), "E2B_TOOLS_EXPECTED is not set")
class ParityTest(unittest.TestCase):
    """The parity calls through the example's dispatchers, each in a fresh
    sandbox, give what ``e2b-tools batch`` (the Rust host) gave."""

    @classmethod
    def setUpClass(cls):
        calls_file = Path(os.environ.get("E2B_TOOLS_PARITY_CALLS") or HERE.parent / "parity-calls.jsonl")
        cls.calls = [json.loads(line) for line in calls_file.read_text().splitlines() if line.strip()]
        expected_text = Path(os.environ["E2B_TOOLS_EXPECTED"]).read_text()
        cls.expected = [json.loads(line) for line in expected_text.splitlines() if line.strip()]
        assert len(cls.expected) == len(cls.calls), "one batch result per call"

    def check(self, results):
        self.assertEqual(len(results), len(self.calls))
        for number, (call, got, want) in enumerate(zip(self.calls, results, self.expected), start=1):
            self.assertEqual(normalise(got), normalise(want), f"call {number}: {json.dumps(call)}")

    def test_openai_tool_messages_carry_the_rust_hosts_results(self):
        with new_instance() as e2b:
            messages = []
            for number, call in enumerate(self.calls):
                arguments = json.dumps(call.get("args", {}))
                tool_call = {"id": f"call_{number}", "type": "function", "function": {"name": call["tool"], "arguments": arguments}}
                messages += example.answer_openai(e2b, [tool_call])
        self.assertEqual([m["tool_call_id"] for m in messages], [f"call_{n}" for n in range(len(self.calls))])
        self.check([json.loads(message["content"]) for message in messages])

    def test_anthropic_tool_results_carry_the_rust_hosts_results(self):
        with new_instance() as e2b:
            blocks = []
            for number, call in enumerate(self.calls):
                tool_use = {"type": "tool_use", "id": f"toolu_{number}", "name": call["tool"], "input": call.get("args", {})}
                blocks += example.answer_anthropic(e2b, [tool_use])
        results = [json.loads(block["content"]) for block in blocks]
        self.assertEqual([block["is_error"] for block in blocks], [not result["success"] for result in results])
        self.check(results)


class CatalogTest(unittest.TestCase):
    def test_by_default_exactly_e2b_adks_six_tools_as_openai_function_tools(self):
        e2b = new_instance()
        tools = e2b.openai_chat_tools()
        self.assertEqual([tool["function"]["name"] for tool in tools], SIX)
        for tool in tools:
            self.assertEqual(tool["type"], "function")
            self.assertGreater(len(tool["function"]["description"]), 20)
            self.assertEqual(tool["function"]["parameters"]["type"], "object")

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
        e2b.configure(tools=["default", "get_background_output"])
        names = [tool["function"]["name"] for tool in e2b.openai_chat_tools()]
        self.assertEqual(names, SIX + ["get_background_output"])


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
        pid = e2b.start_background_command(self.COMMAND.format(go="go-typed")).pid
        first = poll(lambda: e2b.get_background_output(pid), lambda out: out.stdout == "first\n")
        self.assertEqual(
            first,
            e2b_tools.ProcessOutput(
                pid=pid,
                state="running",
                exit_code=None,
                stdout="first\n",
                stderr="oops\n",
                next_since=e2b_tools.OutputOffsets(stdout=6, stderr=5),
            ),
        )
        e2b.run_command("touch go-typed")
        done = poll(lambda: e2b.get_background_output(pid, since=first.next_since), lambda out: out.state == "exited")
        self.assertEqual(
            (done.state, done.exit_code, done.stdout, done.stderr, done.next_since),
            ("exited", 0, "second\n", "", e2b_tools.OutputOffsets(stdout=13, stderr=5)),
        )
        # An offset past the end reads nothing.
        self.assertEqual(e2b.get_background_output(pid, since=e2b_tools.OutputOffsets(13, 5)).stdout, "")


class BackgroundCommandTest(unittest.TestCase):
    def test_a_long_running_command_returns_a_pid_while_it_runs(self):
        with new_instance() as e2b:
            started = time.monotonic()
            result = e2b.call_tool("start_background_command", {"command": "sleep 30", "timeout": 10})
            self.assertTrue(result["success"], result)
            self.assertIsInstance(result["pid"], int)
            self.assertGreater(result["pid"], 0)
            self.assertIsNone(result.get("readiness"), result)
            self.assertLess(time.monotonic() - started, 5)

            typed = e2b.start_background_command("sleep 30", timeout_seconds=10)
            self.assertGreater(typed.pid, 0)
            self.assertIsNone(typed.readiness)


class KeepAliveTest(unittest.TestCase):
    def test_a_call_longer_than_the_sandbox_timeout_keeps_the_sandbox_alive(self):
        with new_instance() as e2b:
            e2b.configure(timeout_seconds=4)
            result = e2b.call_tool("run_code", {"code": "import time\ntime.sleep(8)\nprint('alive')"})
            self.assertEqual(result.get("stdout"), "alive\n", result)
            self.assertTrue(e2b.call_tool("run_command", {"command": "true"})["success"])


class JavaScriptKernelTest(unittest.TestCase):
    """The parity call in JavaScript only shows that both hosts agree; this
    shows what the kernel gives."""

    def test_values_console_output_state_and_errors(self):
        with new_instance() as e2b:

            def js(code, language="javascript"):
                return e2b.call_tool("run_code", {"code": code, "language": language})

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


if __name__ == "__main__":
    unittest.main()
