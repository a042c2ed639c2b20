"""The e2b-adk 0.1.2 side of `e2b-tools-bench`.

Calls e2b-adk's tools directly, as ADK calls them
(`await tool.run_async(args=..., tool_context=None)`), under the control of
the benchmark, which sends one JSON command per stdin line and reads one JSON
answer per stdout line:

- {"op": "call", "tool": T, "args": A}           -> {"result": <tool result>}
- {"op": "time", "tool": T, "args": A, "n": N}   -> {"ns": [N durations]}
  (each timed inside Python around `run_async`)
- {"op": "cpu", "tool": T, "args": A, "n": N}    -> {"cpu_ns": .., "wall_ns": ..}
  (the process's own CPU time, user + system of all its threads, over N calls)
- {"op": "reset_peak"}                           -> {} (peak RSS := current RSS)
- {"op": "rss"}                                  -> {"rss_kib": .., "peak_kib": ..}
- {"op": "close"}                                -> {} and the process ends

The SDK reads E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY from the
environment, so it talks to the benchmark's local server.
"""

import asyncio
import json
import resource
import sys
import time

from e2b_adk import E2BPlugin


def memory_kib() -> dict:
    """Current and peak resident set size, from /proc/self/status."""
    out = {}
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                out["rss_kib"] = int(line.split()[1])
            elif line.startswith("VmHWM:"):
                out["peak_kib"] = int(line.split()[1])
    return out


def cpu_ns() -> int:
    """User + system CPU time of this process (all threads), in ns."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return int((usage.ru_utime + usage.ru_stime) * 1e9)


def reset_peak() -> None:
    """Resets VmHWM to the current RSS (Linux: write 5 to clear_refs)."""
    with open("/proc/self/clear_refs", "w", encoding="ascii") as refs:
        refs.write("5")


async def main() -> None:
    plugin = E2BPlugin()
    tools = {tool.name: tool for tool in plugin.get_tools()}
    try:
        for line in sys.stdin:
            if not line.strip():
                continue
            command = json.loads(line)
            op = command["op"]
            if op == "call":
                tool = tools[command["tool"]]
                result = await tool.run_async(args=command["args"], tool_context=None)
                answer = {"result": result}
            elif op == "time":
                tool = tools[command["tool"]]
                args = command["args"]
                samples = []
                for _ in range(int(command["n"])):
                    started = time.perf_counter_ns()
                    await tool.run_async(args=args, tool_context=None)
                    samples.append(time.perf_counter_ns() - started)
                answer = {"ns": samples}
            elif op == "cpu":
                tool = tools[command["tool"]]
                args = command["args"]
                cpu_started, started = cpu_ns(), time.perf_counter_ns()
                for _ in range(int(command["n"])):
                    await tool.run_async(args=args, tool_context=None)
                answer = {
                    "cpu_ns": cpu_ns() - cpu_started,
                    "wall_ns": time.perf_counter_ns() - started,
                }
            elif op == "reset_peak":
                reset_peak()
                answer = {}
            elif op == "rss":
                answer = memory_kib()
            elif op == "close":
                break
            else:
                answer = {"error": f"unknown op {op!r}"}
            print(json.dumps(answer), flush=True)
    finally:
        await plugin.close()
    print("{}", flush=True)


asyncio.run(main())
