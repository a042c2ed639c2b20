"""The compile cache: written on the first load, used by the next process
(which then compiles nothing), recovered from when corrupt, redirected or
disabled by E2B_TOOLS_CACHE_DIR."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import List

import pytest

from conftest import run_python

# Loads the component, lists its tools and says how it got it. With
# FORBID_COMPILE set, compiling anything raises: the hook that proves a
# warm cache compiles nothing (deserializing does not call __init__).
LOAD = """
import json, os
from wasmtime.component import Component
if os.environ.get("FORBID_COMPILE"):
    def refuse(*args, **kwargs):
        raise RuntimeError("FORBID_COMPILE: a component was compiled")
    Component.__init__ = refuse
import e2b_tools
component = e2b_tools.ToolsComponent()
tools = component.instantiate().list_tools()
print(json.dumps({"source": component.source, "tools": len(tools)}))
"""


def load(**env) -> dict:
    """Runs LOAD in a fresh process with ``env``; its answer."""
    done = run_python(LOAD, env={"E2B_TOOLS_WASM": None, "E2B_TOOLS_CACHE_DIR": None, **env})
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def entries(directory: Path) -> List[Path]:
    return sorted(directory.rglob("*.cwasm")) if directory.exists() else []


@pytest.fixture
def warm(tmp_path: Path) -> Path:
    """A cache directory filled by one load."""
    assert load(E2B_TOOLS_CACHE_DIR=str(tmp_path)) == {"source": "compiled", "tools": 6}
    return tmp_path


def test_the_first_load_compiles_and_writes_both_entries(warm):
    files = entries(warm)
    # The component and the outbound gate's helper; no temporary file left.
    assert len(files) == 2, files
    assert list(warm.glob(".tmp-*")) == []
    for file in files:
        assert "-wasmtime-50.0.1-" in file.name, file.name
        assert file.stat().st_size > 1000


def test_a_second_process_with_the_cache_warm_compiles_nothing(warm, tmp_path_factory):
    assert load(E2B_TOOLS_CACHE_DIR=str(warm), FORBID_COMPILE="1") == {"source": "cache", "tools": 6}
    # The hook works: with a cold cache the same process must compile, and fails.
    cold = tmp_path_factory.mktemp("cold")
    done = run_python(LOAD, env={"E2B_TOOLS_WASM": None, "E2B_TOOLS_CACHE_DIR": str(cold), "FORBID_COMPILE": "1"})
    assert done.returncode != 0 and "FORBID_COMPILE" in done.stderr


@pytest.mark.parametrize("damage", ["flip a byte mid-file", "truncate", "garbage", "empty"])
def test_a_corrupt_entry_is_compiled_again_and_replaced(warm, damage):
    for file in entries(warm):
        blob = bytearray(file.read_bytes())
        if damage == "flip a byte mid-file":
            # Inside the compiled code, where wasmtime itself checks nothing.
            blob[len(blob) // 2] ^= 0xFF
        elif damage == "truncate":
            blob = blob[: len(blob) // 3]
        elif damage == "garbage":
            blob = bytearray(b"\x00\x61\x73\x6d" + bytes(range(256)) * 40)
        else:
            blob = bytearray()
        file.write_bytes(bytes(blob))
    assert load(E2B_TOOLS_CACHE_DIR=str(warm)) == {"source": "compiled", "tools": 6}
    # Replaced by good entries: the next process compiles nothing.
    assert load(E2B_TOOLS_CACHE_DIR=str(warm), FORBID_COMPILE="1")["source"] == "cache"


def test_an_unreadable_or_unwritable_cache_only_costs_a_compile(tmp_path):
    # A file where the directory should be: nothing can be read or written.
    blocked = tmp_path / "blocked"
    blocked.write_text("not a directory")
    assert load(E2B_TOOLS_CACHE_DIR=str(blocked)) == {"source": "compiled", "tools": 6}
    # An entry that cannot be read (the tests run as root, so a directory
    # in its place stands for permissions).
    warm = tmp_path / "warm"
    assert load(E2B_TOOLS_CACHE_DIR=str(warm))["source"] == "compiled"
    for file in entries(warm):
        file.unlink()
        file.mkdir()
    assert load(E2B_TOOLS_CACHE_DIR=str(warm))["source"] == "compiled"


def test_the_default_location_and_off(tmp_path):
    xdg, home = tmp_path / "xdg", tmp_path / "home"
    home.mkdir()
    assert load(XDG_CACHE_HOME=str(xdg), HOME=str(home))["source"] == "compiled"
    assert len(entries(xdg / "e2b-tools")) == 2
    assert stat.S_IMODE((xdg / "e2b-tools").stat().st_mode) == 0o700
    assert load(XDG_CACHE_HOME=None, HOME=str(home))["source"] == "compiled"
    assert len(entries(home / ".cache" / "e2b-tools")) == 2
    assert load(XDG_CACHE_HOME=None, HOME=str(home), FORBID_COMPILE="1")["source"] == "cache"

    off = tmp_path / "off"
    off.mkdir()
    answer = load(E2B_TOOLS_CACHE_DIR="off", XDG_CACHE_HOME=str(off), HOME=str(off))
    assert answer == {"source": "compiled", "tools": 6}
    assert list(off.rglob("*")) == []
    # Nor anywhere else: the next process compiles again.
    done = run_python(LOAD, env={"E2B_TOOLS_WASM": None, "E2B_TOOLS_CACHE_DIR": "off", "FORBID_COMPILE": "1"})
    assert done.returncode != 0 and "FORBID_COMPILE" in done.stderr


def test_another_component_gets_another_entry(warm, tmp_path):
    import e2b_tools

    other = bytearray(e2b_tools.default_wasm_path().read_bytes())
    # A custom section appended: a different component that still loads.
    name = b"e2b-tools-test"
    other += b"\x00" + bytes([len(name) + 1 + 1]) + bytes([len(name)]) + name + b"!"
    wasm = tmp_path / "other.wasm"
    wasm.write_bytes(bytes(other))
    before = {file.name for file in entries(warm)}
    assert load(E2B_TOOLS_CACHE_DIR=str(warm), E2B_TOOLS_WASM=str(wasm))["source"] == "compiled"
    added = {file.name for file in entries(warm)} - before
    assert len(added) == 1, added
