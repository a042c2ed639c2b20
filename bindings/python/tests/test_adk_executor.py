"""e2b_tools.adk.E2BCodeExecutor in a real ADK run: an LlmAgent whose
scripted model writes two code blocks that share a variable, read the
user's CSV (an input file) and draw a matplotlib figure (a PNG output
file), while another coroutine keeps ticking; the sandbox is killed when
the runner closes. Then the executor beside E2BPlugin, sharing its
sandbox, and the executor's bad inputs."""

from __future__ import annotations

import asyncio
import base64
import time
from typing import Any, AsyncGenerator, List

from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.code_executors.code_execution_utils import CodeExecutionInput, File
from google.adk.models import BaseLlm, LlmRequest, LlmResponse
from google.adk.runners import InMemoryRunner
from google.genai import types
from pydantic import Field

import e2b_tools
from e2b_tools.adk import E2BCodeExecutor, E2BPlugin

from conftest import Ticker, sandboxes

CSV = b"v\n1\n2\n3\n"

FIRST = "```python\nx = 41\nprint('x is set')\n```"
SECOND = """```python
import glob
import pandas as pd
import matplotlib.pyplot as plt
df = pd.read_csv(sorted(glob.glob('data_*.csv'))[0])
print(x + 1, df['v'].sum())
plt.plot(df['v'])
plt.show()
open('report.txt', 'w').write('made by the code')
```"""


class CodeLlm(BaseLlm):
    """Answers with the script's texts one per turn, then "done"; records
    the code execution results it is shown."""

    script: List[str]
    step: int = 0
    outputs: List[str] = Field(default_factory=list)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        for part in llm_request.contents[-1].parts or []:
            if part.code_execution_result:
                self.outputs.append(part.code_execution_result.output or "")
            elif part.text and "tool_output" in part.text:
                self.outputs.append(part.text)
        text = self.script[self.step] if self.step < len(self.script) else "done"
        self.step += 1
        yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]))


async def run_agent(executor: E2BCodeExecutor, plugins: List[Any]) -> Any:
    model = CodeLlm(model="scripted", script=[FIRST, SECOND])
    agent = LlmAgent(name="analyst", model=model, instruction="Analyse the data.", code_executor=executor)
    runner = InMemoryRunner(app=App(name="e2b_executor_test", root_agent=agent, plugins=plugins))
    session = await runner.session_service.create_session(app_name="e2b_executor_test", user_id="user")
    message = types.Content(
        role="user",
        parts=[
            types.Part(text="Sum the column v and plot it."),
            types.Part(inline_data=types.Blob(mime_type="text/csv", data=CSV)),
        ],
    )
    async for _ in runner.run_async(user_id="user", session_id=session.id, new_message=message):
        pass
    return model, runner, session


def test_an_llm_agent_runs_code_blocks_in_one_sandbox_with_files_in_and_out(server):
    events: List[e2b_tools.Event] = []

    async def main() -> None:
        before = sandboxes()
        executor = E2BCodeExecutor(optimize_data_file=True, on_event=events.append)
        ticker = Ticker(0.02)
        ticker.start()
        started = time.monotonic()
        model, runner, session = await run_agent(executor, [executor.plugin])
        elapsed = time.monotonic() - started
        ticker.stop()
        ticks = ticker.ticks

        # The first block set x; the second read it, and the CSV.
        shown = "\n".join(model.outputs)
        assert "x is set" in shown, model.outputs
        assert "42 6" in shown, model.outputs
        # The loop ran all along: most of the expected ticks happened.
        assert ticks >= 0.5 * elapsed / 0.02, (ticks, elapsed)

        keys = await runner.artifact_service.list_artifact_keys(
            app_name="e2b_executor_test", user_id="user", session_id=session.id
        )
        pngs = [key for key in keys if key.endswith(".png")]
        assert pngs and "report.txt" in keys, keys
        image = await runner.artifact_service.load_artifact(
            app_name="e2b_executor_test", user_id="user", session_id=session.id, filename=pngs[0]
        )
        assert image.inline_data.data.startswith(b"\x89PNG\r\n\x1a\n")
        report = await runner.artifact_service.load_artifact(
            app_name="e2b_executor_test", user_id="user", session_id=session.id, filename="report.txt"
        )
        assert report.inline_data.data == b"made by the code"
        # The input CSV is not returned as an output.
        assert not [key for key in keys if key.endswith(".csv")], keys

        during = sandboxes()
        assert len(set(during) - set(before)) == 1, (before, during)
        await runner.close()
        assert set(sandboxes()) <= set(before)

    asyncio.run(main())
    # Every call carried the ADK run and the agent.
    execs = [e for e in events if e.kind == "exec_end"]
    assert execs and all(e.agent == "analyst" and e.run_id for e in execs), execs
    assert [e.kind for e in events].count("sandbox_start") == 1
    assert events[-1].kind == "sandbox_stop"


def test_the_executor_shares_the_plugin_s_sandbox(server):
    async def main() -> None:
        before = sandboxes()
        plugin = E2BPlugin()
        executor = E2BCodeExecutor(plugin=plugin)
        write_file = next(t for t in plugin.get_tools() if t.name == "write_file")
        written = await write_file.run_async(
            args={"path": "shared.txt", "content": "from the plugin"}, tool_context=None
        )
        assert written["success"], written
        context = type("Context", (), {"session": type("S", (), {"id": "s1"})(), "invocation_id": "i1"})()
        result = await asyncio.to_thread(
            executor.execute_code, context, CodeExecutionInput(code="print(open('shared.txt').read())")
        )
        assert result.stdout == "from the plugin\n", result
        assert len(set(sandboxes()) - set(before)) == 1
        await plugin.close()
        assert set(sandboxes()) <= set(before)

    asyncio.run(main())


def test_binary_and_bad_input_files_and_failing_code(server):
    executor = E2BCodeExecutor()
    context = type("Context", (), {"session": type("S", (), {"id": "s2"})(), "invocation_id": "i2"})()
    blob = bytes(range(256))
    files = [
        File(name="blob.bin", content=blob, mime_type="application/octet-stream"),
        File(name="b64.bin", content=base64.b64encode(b"\x00\xffok").decode(), mime_type="application/octet-stream"),
        File(name="bad.bin", content=12345, mime_type="application/octet-stream"),  # type: ignore[arg-type]
    ]
    code = "print(open('blob.bin','rb').read() == bytes(range(256)), open('b64.bin','rb').read())"
    result = executor.execute_code(context, CodeExecutionInput(code=code, input_files=files, execution_id="e1"))
    assert result.stdout == "True b'\\x00\\xffok'\n", result
    assert "Input file 'bad.bin' skipped: its content must be bytes or str, not int" in result.stderr
    failing = executor.execute_code(context, CodeExecutionInput(code="1 / 0", execution_id="e1"))
    assert "ZeroDivisionError" in failing.stderr and failing.exit_code == 1, failing
    # Another execution id is another sandbox; the first one's state is not there.
    other = executor.execute_code(
        context, CodeExecutionInput(code="print(open('blob.bin','rb') and 1)", execution_id="e2")
    )
    assert "FileNotFoundError" in other.stderr, other
    executor.close()
