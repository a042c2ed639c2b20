"""The main README's Python snippets, exactly as written: each code block
tagged ``python`` runs in a fresh interpreter of this venv with nothing
naming an E2B server (so on the local server the package starts itself)."""

from __future__ import annotations

import os
import re
from typing import List

import pytest
from conftest import run_python

README = os.environ.get("E2B_TOOLS_README", "")
#: No E2B_* at all, as on a fresh machine; the CLI only for the pure wheel
#: (the platform wheel has its own server).
NOTHING_SET = {"E2B_API_KEY": None, "E2B_API_URL": None, "E2B_SANDBOX_URL": None, "E2B_DOMAIN": None}
if "manylinux" in os.environ.get("E2B_TOOLS_WHEEL", ""):
    NOTHING_SET["E2B_TOOLS_CLI"] = None


def code_blocks(markdown: str, lang: str) -> List[str]:
    """The Markdown's fenced code blocks tagged ``lang``."""
    return [body for tag, body in re.findall(r"^```(\S*)\n(.*?)^```$", markdown, re.S | re.M) if tag == lang]


def blocks() -> List[str]:
    return code_blocks(open(README).read(), "python") if README else []


def test_the_readme_has_python_snippets_to_run():
    assert README, "E2B_TOOLS_README is not set"
    assert blocks(), f"no python block in {README}"


@pytest.mark.parametrize("block", blocks())
def test_a_readme_snippet_runs_as_written(block: str):
    done = run_python(block, env=NOTHING_SET, timeout=180)
    assert done.returncode == 0, f"{block}\n--- stderr\n{done.stderr}"
