"""A tour of the E2B tools component from Python: configure it (with all
eight tools), hand its catalog to a model as function tools, run the tools
the way a model's tool calls would, make one typed call, follow a background
process's output with get_background_output, and shut the sandbox down.

Needs E2B_API_KEY (real E2B) or the three variables printed by
``e2b-tools local serve`` (E2B_API_URL, E2B_SANDBOX_URL, E2B_API_KEY).
"""

import json
import sys
import time

import e2b_tools


def main() -> int:
    env = e2b_tools.e2b_env()
    if "E2B_API_KEY" not in env:
        print(
            "Set E2B_API_KEY (real E2B), or start `e2b-tools local serve` "
            "and export the variables it prints.",
            file=sys.stderr,
        )
        return 2

    e2b = e2b_tools.load(env=env)
    # tools=["all"]: e2b-adk's six plus get_background_output and
    # stop_background_command (left out, the catalog has the six).
    e2b.configure(timeout_seconds=120, metadata={"example": "python"}, tools=["all"])

    # 1. What a chat-completions request would carry as `tools`.
    function_tools = e2b.function_tools()
    print(f"## {len(function_tools)} function tools for the model")
    for tool in function_tools:
        required = tool["function"]["parameters"].get("required", [])
        print(f"- {tool['function']['name']}({', '.join(required)})")
    print(json.dumps(function_tools[0], indent=2))

    # 2. Tool calls as a model would make them: a name and JSON arguments.
    model_tool_calls = [
        ("run_code", '{"code": "x = 41"}'),
        ("run_code", '{"code": "x + 1"}'),
        ("run_command", '{"command": "echo hello from $(uname -s)"}'),
        ("write_file", '{"path": "notes/todo.txt", "content": "buy milk\\n"}'),
        ("read_file", '{"path": "notes/todo.txt"}'),
        ("list_files", '{"path": "notes"}'),
        ("start_background_command", '{"command": "python3 -m http.server 8000", "port": 8000}'),
        ("read_file", '{"path": "notes/missing.txt"}'),
    ]
    print("\n## Tool calls through catalog.call-tool")
    try:
        for name, arguments in model_tool_calls:
            result = e2b.call_tool(name, arguments)
            # This dict is what goes back to the model as the tool message.
            print(f"{name} {arguments}\n  -> {json.dumps(result)}")

        # 3. The same component, typed: no JSON, errors as exceptions.
        print("\n## A typed call")
        output = e2b.run_command("ls -1 notes", cwd="/home/user")
        print(f"run_command -> exit {output['exit-code']}, stdout {output['stdout']!r}")
        try:
            e2b.read_file("notes/missing.txt")
        except e2b_tools.ToolError as err:
            print(f"read_file -> ToolError({err.kind}): {err}")

        # 4. A background process's output, read while it runs: the first
        # read from the start, the next from where the first stopped.
        print("\n## get_background_output")
        started = e2b.call_tool(
            "start_background_command",
            {"command": "for i in 1 2 3 4; do echo tick $i; sleep 1; done"},
        )
        pid = started["pid"]
        first = e2b.call_tool("get_background_output", {"pid": pid})
        print(f"from the start -> {json.dumps(first)}")
        time.sleep(2.5)
        later = e2b.call_tool("get_background_output", {"pid": pid, "since": first["next_since"]})
        print(f"since {json.dumps(first['next_since'])} -> {json.dumps(later)}")
        typed = e2b.get_background_output(pid, since=later["next_since"])
        print(f"typed, since the last read -> {typed}")
        print(f"sandbox: {e2b.sandbox_id()}")
    finally:
        print(f"\nshutdown -> {e2b.shutdown()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
