"""The Python example and the e2b-tools package it uses, against the server
named by the E2B_* variables (``e2b-tools local serve``, started by
examples/run-tests, which installs the wheel into a fresh venv and runs these
tests from a copy of this directory).

Optional: E2B_TOOLS_EXPECTED names the output of ``e2b-tools batch`` for
../parity-calls.jsonl (E2B_TOOLS_PARITY_CALLS names the calls when this file
is not beside it); the parity test then checks that the example's answers
carry the same results as the Rust host's, through both of its dispatchers.

The package's own tests (bindings/python/tests) cover its API and the
component's behaviour through it; what is here are the example and the
parity with the Rust host.

Run: ``python -m unittest -v`` in this directory.
"""

import json
import os
import subprocess
import sys
import unittest
from pathlib import Path

import e2b_tools

import main as example

HERE = Path(__file__).resolve().parent

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


class ExampleTest(unittest.TestCase):
    def test_main_runs_the_tour_and_shuts_the_sandbox_down(self):
        names = [tool["name"] for tool in new_instance().anthropic_tools()]  # skips without a server
        run = subprocess.run(
            [sys.executable, str(HERE / "main.py")], capture_output=True, text=True, timeout=300, cwd=HERE
        )
        self.assertEqual(run.returncode, 0, run.stderr)
        lines = run.stdout.splitlines()

        def after(prefix):
            """What follows ``prefix`` on each line that starts with it."""
            return [line[len(prefix) :] for line in lines if line.startswith(prefix)]

        self.assertEqual(after("tools: "), [", ".join(names)])
        self.assertTrue(after('{"name": "run_code", "description": '), lines)
        self.assertEqual(after("run_code x + 1 -> "), ["42"])
        self.assertEqual(after("read_file -> "), ["'buy milk\\n'"])
        self.assertEqual(after("list_files -> "), ["['todo.txt']"])
        [missing] = after("read_file missing -> ")
        self.assertTrue(missing.startswith("ToolError not-found: Failed to read file: "), missing)
        messages = [json.loads(text) for text in after("openai tool message -> ")]
        self.assertEqual(
            [(m["role"], m["tool_call_id"], json.loads(m["content"])["success"]) for m in messages],
            [("tool", "call_1", True), ("tool", "call_2", False)],
        )
        self.assertEqual(json.loads(messages[0]["content"])["text"], "82")
        [block] = [json.loads(text) for text in after("anthropic tool_result -> ")]
        self.assertEqual((block["type"], block["tool_use_id"], block["is_error"]), ("tool_result", "toolu_1", False))
        self.assertEqual(json.loads(block["content"])["stdout"], "todo.txt\n")
        self.assertEqual(after("sandbox after the block: "), ["None"])

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
            self.assertEqual(
                [(b["type"], b["tool_use_id"], b["is_error"]) for b in blocks],
                [("tool_result", "t1", False), ("tool_result", "t2", True)],
            )
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
                function = {"name": call["tool"], "arguments": json.dumps(call.get("args", {}))}
                tool_call = {"id": f"call_{number}", "type": "function", "function": function}
                messages += example.answer_openai(e2b, [tool_call])
        self.assertEqual([m["tool_call_id"] for m in messages], [f"call_{n}" for n in range(len(self.calls))])
        self.check([json.loads(message["content"]) for message in messages])

    def test_anthropic_tool_results_carry_the_rust_hosts_results(self):
        with new_instance() as e2b:
            blocks = []
            for number, call in enumerate(self.calls):
                tool_use = {"type": "tool_use", "id": f"toolu_{number}", "name": call["tool"]}
                blocks += example.answer_anthropic(e2b, [{**tool_use, "input": call.get("args", {})}])
        results = [json.loads(block["content"]) for block in blocks]
        self.assertEqual([block["is_error"] for block in blocks], [not result["success"] for result in results])
        self.check(results)


if __name__ == "__main__":
    unittest.main()
