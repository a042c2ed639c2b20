"""Cold start of the Python package, against e2b-adk's import, in fresh
processes; prints one JSON object of medians in milliseconds.

Usage::

    python bench_cold_start.py [--runs N] [--python PY] [--adk-python PY]

``--runs N``        processes per case (default 5).
``--python PY``     the interpreter with ``e2b_tools`` installed (default:
                    this one).
``--adk-python PY`` the interpreter with ``e2b_adk`` installed (default:
                    ``--python``).

Environment: ``E2B_API_URL``, ``E2B_SANDBOX_URL`` and ``E2B_API_KEY`` name
the server the first tool call goes to (``e2b-tools local serve`` prints
them); they are required. ``E2B_TOOLS_CACHE_DIR`` is ignored: the benchmark
uses compile caches of its own.

Cases, each a fresh process per run:

- ``warm``: ``import e2b_tools``, load the component with the compile cache
  warm, then the first tool call (``run_command`` of ``true``, which
  creates the sandbox);
- ``cold``: the same with an empty cache (the component is compiled);
- ``e2b_adk_import``: ``import e2b_adk`` alone.

Output (one line)::

    {"runs": 5, "python": "3.11.7", "wasmtime": "50.0.1",
     "warm": {"import_ms": …, "load_ms": …, "first_call_ms": …,
              "total_ms": …, "process_ms": …},
     "cold": {… the same keys …},
     "e2b_adk_import": {"import_ms": …, "process_ms": …}}

``total_ms`` is import + load + first call inside the process;
``process_ms`` is the whole process as its parent sees it (interpreter
start-up and the sandbox's shutdown included).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Dict, List

TOOLS = """
import json, time
start = time.perf_counter()
import e2b_tools
imported = time.perf_counter()
component = e2b_tools.ToolsComponent()
e2b = component.instantiate()
loaded = time.perf_counter()
result = e2b.call_tool("run_command", {"command": "true"})
called = time.perf_counter()
assert result.get("success"), result
e2b.shutdown()
import importlib.metadata, platform
print(json.dumps({
    "source": component.source,
    "import_ms": (imported - start) * 1e3,
    "load_ms": (loaded - imported) * 1e3,
    "first_call_ms": (called - loaded) * 1e3,
    "total_ms": (called - start) * 1e3,
    "python": platform.python_version(),
    "wasmtime": importlib.metadata.version("wasmtime"),
}))
"""

ADK = """
import json, time
start = time.perf_counter()
import e2b_adk
print(json.dumps({"import_ms": (time.perf_counter() - start) * 1e3}))
"""


def measure(python: str, code: str, env: Dict[str, str]) -> Dict[str, float]:
    """Runs ``code`` in a fresh ``python``; its JSON answer plus the
    process's wall time."""
    started = time.perf_counter()
    done = subprocess.run([python, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    elapsed = (time.perf_counter() - started) * 1e3
    if done.returncode != 0:
        sys.exit(f"bench_cold_start: the measured process failed:\n{done.stderr[-2000:]}")
    answer = json.loads(done.stdout.splitlines()[-1])
    answer["process_ms"] = elapsed
    return answer


def medians(samples: List[Dict[str, float]], keys: List[str]) -> Dict[str, float]:
    return {key: round(statistics.median(sample[key] for sample in samples), 2) for key in keys}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--adk-python")
    args = parser.parse_args()
    if not all(os.environ.get(name) for name in ("E2B_API_URL", "E2B_SANDBOX_URL", "E2B_API_KEY")):
        sys.exit("bench_cold_start: set E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY (e2b-tools local serve)")

    base = {name: value for name, value in os.environ.items() if name != "E2B_TOOLS_CACHE_DIR"}
    keys = ["import_ms", "load_ms", "first_call_ms", "total_ms", "process_ms"]
    with tempfile.TemporaryDirectory(prefix="e2b-tools-bench-") as scratch:
        warm_env = {**base, "E2B_TOOLS_CACHE_DIR": os.path.join(scratch, "warm")}
        info = measure(args.python, TOOLS, warm_env)  # fills the warm cache
        warm = [measure(args.python, TOOLS, warm_env) for _ in range(args.runs)]
        cold = [
            measure(args.python, TOOLS, {**base, "E2B_TOOLS_CACHE_DIR": os.path.join(scratch, f"cold-{run}")})
            for run in range(args.runs)
        ]
    if {sample["source"] for sample in warm} != {"cache"} or {s["source"] for s in cold} != {"compiled"}:
        sys.exit("bench_cold_start: the warm runs did not all load from the cache, or the cold ones did")
    adk = [measure(args.adk_python or args.python, ADK, base) for _ in range(args.runs)]
    print(
        json.dumps(
            {
                "runs": args.runs,
                "python": info["python"],
                "wasmtime": info["wasmtime"],
                "warm": medians(warm, keys),
                "cold": medians(cold, keys),
                "e2b_adk_import": medians(adk, ["import_ms", "process_ms"]),
            }
        )
    )


if __name__ == "__main__":
    main()
