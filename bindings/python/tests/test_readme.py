"""The READMEs' Python snippets, exactly as written: each code block tagged
``python`` (the main README's and this package's) runs in a fresh
interpreter of this venv with nothing naming an E2B server (so on the local
server the package starts itself). The agent snippets talk to a scripted
model (``bindings/testing/model_double.py``) through the official SDKs'
own base-URL variables; each answer it gave must be in the snippet's
output, which proves the tool call it asked for ran in a sandbox."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import urllib.request
from typing import Dict, Iterator, List, Optional, Tuple

import pytest
from conftest import run_python

#: The READMEs, separated by os.pathsep (run-tests sets it).
READMES = [path for path in os.environ.get("E2B_TOOLS_READMES", "").split(os.pathsep) if path]
#: The scripted model (run-tests sets it).
MODEL_DOUBLE = os.environ.get("E2B_TOOLS_MODEL_DOUBLE", "")
#: No E2B_* at all, as on a fresh machine; the CLI only for the pure wheel
#: (the platform wheel has its own server).
NOTHING_SET: Dict[str, Optional[str]] = {
    "E2B_API_KEY": None,
    "E2B_API_URL": None,
    "E2B_SANDBOX_URL": None,
    "E2B_DOMAIN": None,
}
if "manylinux" in os.environ.get("E2B_TOOLS_WHEEL", ""):
    NOTHING_SET["E2B_TOOLS_CLI"] = None


def code_blocks(markdown: str, lang: str) -> List[str]:
    """The Markdown's fenced code blocks tagged ``lang``, indented ones
    (in a list item) dedented."""
    found = re.findall(r"^( *)```(\S*)\n(.*?)^\1```$", markdown, re.S | re.M)
    return [textwrap.dedent(body) for _, tag, body in found if tag == lang]


def blocks() -> List[Tuple[str, str]]:
    """(an id naming the README and the block, the block)."""
    return [
        (f"{os.path.basename(os.path.dirname(path)) or 'root'}-{i + 1}", block)
        for path in READMES
        for i, block in enumerate(code_blocks(open(path).read(), "python"))
    ]


@pytest.fixture(scope="module")
def model() -> Iterator[Dict[str, str]]:
    """The scripted model, running; the variables pointing the SDKs at it."""
    assert MODEL_DOUBLE, "E2B_TOOLS_MODEL_DOUBLE is not set"
    double = subprocess.Popen([sys.executable, MODEL_DOUBLE], stdout=subprocess.PIPE, text=True)
    try:
        line = double.stdout.readline() if double.stdout else ""
        assert line.startswith("port "), f"the model double said {line!r}"
        base = f"http://127.0.0.1:{line.split()[1]}"
        yield {
            "base": base,
            "OPENAI_BASE_URL": f"{base}/v1",
            "OPENAI_API_KEY": "double",
            "ANTHROPIC_BASE_URL": base,
            "ANTHROPIC_API_KEY": "double",
            "GOOGLE_GEMINI_BASE_URL": base,
            "GOOGLE_API_KEY": "double",
            "GOOGLE_GENAI_USE_VERTEXAI": "false",
            # The Agents SDK would send traces to OpenAI.
            "OPENAI_AGENTS_DISABLE_TRACING": "1",
        }
    finally:
        double.kill()
        double.wait()


def answers_given(base: str) -> List[str]:
    """The model's final answers since the last look."""
    with urllib.request.urlopen(f"{base}/log", timeout=10) as response:
        return json.load(response)


def test_the_readmes_have_python_snippets_to_run():
    assert READMES, "E2B_TOOLS_READMES is not set"
    for path in READMES:
        assert code_blocks(open(path).read(), "python"), f"no python block in {path}"


@pytest.mark.parametrize("block", [block for _, block in blocks()], ids=[name for name, _ in blocks()])
def test_a_readme_snippet_runs_as_written(block: str, model: Dict[str, str]):
    answers_given(model["base"])
    env = {**NOTHING_SET, **{name: value for name, value in model.items() if name != "base"}}
    done = run_python(block, env=env, timeout=180)
    assert done.returncode == 0, f"{block}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
    answers = answers_given(model["base"])
    if re.search(r"gpt-5|gemini|claude", block):
        assert answers, f"the snippet names a model but the model answered nothing\n--- stderr\n{done.stderr}"
    for answer in answers:
        assert answer.startswith("The answer is "), f"{answer}\n--- stderr\n{done.stderr}"
        assert answer in done.stdout, f"the model answered {answer!r}\n--- stdout\n{done.stdout}"
