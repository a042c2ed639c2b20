"""A scripted model behind the real model APIs, for running the READMEs'
agent snippets exactly as written: the official SDKs (OpenAI, Anthropic,
Gemini through Google ADK, the Vercel AI SDK, LangChain, the Agents SDK)
reach it through their own base-URL variables, and it plays one agent turn.

It speaks just enough of four wire formats for one tool round trip:

- OpenAI Chat Completions (``POST /v1/chat/completions``),
- OpenAI Responses (``POST /v1/responses``),
- Anthropic Messages (``POST /v1/messages``),
- Gemini (``POST /v1beta/models/{model}:generateContent``), with function
  calls, or a code block for an ADK code executor when no tool is offered.

The script: while the conversation holds no tool result, call a tool chosen
from the user's prompt (the Fibonacci number, ``2**100``, the count of
``/etc``'s entries; else ``6 * 7``); once it holds one, answer
``The answer is <the tool's stdout>.`` The double computes nothing, so that
answer proves the tool ran in a sandbox. ``GET /log`` lists the answers
given since the last ``GET /log``, for the test to find in the snippet's
output.

Run: ``python3 model_double.py``; it prints ``port <N>`` once it listens
on 127.0.0.1 and serves until killed. Standard library only.
"""

from __future__ import annotations

import json
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional, Tuple

#: (a word of the prompt, the tool, its arguments): the first match wins.
PLANS: List[Tuple[str, str, Dict[str, str]]] = [
    ("Fibonacci", "run_code", {"code": "a, b = 0, 1\nfor _ in range(20):\n    a, b = b, a + b\nprint(a)"}),
    ("2**100", "run_code", {"code": "print(2**100)"}),
    ("/etc", "run_command", {"command": "ls /etc | wc -l"}),
]
DEFAULT_PLAN = ("", "run_code", {"code": "print(6 * 7)"})
USAGE = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}

answers: List[str] = []
answers_lock = threading.Lock()


def plan_for(prompt: str) -> Tuple[str, Dict[str, str]]:
    """The tool call this prompt gets."""
    _, tool, arguments = next((plan for plan in PLANS if plan[0] in prompt), DEFAULT_PLAN)
    return tool, arguments


def answer(tool_result: Any) -> str:
    """The final answer to a conversation whose tool returned ``tool_result``
    (e2b-adk's result dict, as a dict or JSON text, or an executor's text)."""
    if isinstance(tool_result, str):
        try:
            tool_result = json.loads(tool_result)
        except ValueError:
            pass
    if isinstance(tool_result, dict):
        # ADK's function response wraps a non-dict result as {"result": …}.
        if "stdout" not in tool_result and isinstance(tool_result.get("result"), (str, dict)):
            return answer(tool_result["result"])
        failed = tool_result.get("success") is False or tool_result.get("error") or tool_result.get("exit_code", 0) != 0
        if failed:
            text = f"The tool failed: {json.dumps(tool_result)[:500]}"
        else:
            text = f"The answer is {str(tool_result.get('stdout', '')).strip()}."
    else:
        # An ADK code executor's result: "Code execution result:\n<stdout>".
        text = f"The answer is {str(tool_result).split('Code execution result:')[-1].strip()}."
    with answers_lock:
        answers.append(text)
    return text


def text_of(content: Any) -> str:
    """The text of a message's content: a string or a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [part for part in content if isinstance(part, dict)]
        return " ".join(text_of(part.get("text") or part.get("content") or "") for part in parts)
    return ""


def chat_completions(body: Dict[str, Any]) -> Dict[str, Any]:
    messages = body.get("messages", [])
    last = messages[-1] if messages else {}
    if last.get("role") == "tool":
        message: Dict[str, Any] = {"role": "assistant", "content": answer(text_of(last.get("content")))}
        finish = "stop"
    else:
        prompt = " ".join(text_of(m.get("content")) for m in messages if m.get("role") == "user")
        tool, arguments = plan_for(prompt)
        call = {"id": "call_1", "type": "function", "function": {"name": tool, "arguments": json.dumps(arguments)}}
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        finish = "tool_calls"
    return {
        "id": "chatcmpl-double",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", "double"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": USAGE,
    }


def responses(body: Dict[str, Any]) -> Dict[str, Any]:
    items = body.get("input", [])
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    last = items[-1] if items else {}
    if last.get("type") == "function_call_output":
        output: Dict[str, Any] = {
            "type": "message",
            "id": "msg_double",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": answer(text_of(last.get("output"))), "annotations": []}],
        }
    else:
        prompt = " ".join(text_of(item.get("content")) for item in items if item.get("role") == "user")
        tool, arguments = plan_for(prompt)
        output = {
            "type": "function_call",
            "id": "fc_double",
            "call_id": "call_1",
            "name": tool,
            "arguments": json.dumps(arguments),
            "status": "completed",
        }
    return {
        "id": "resp_double",
        "object": "response",
        "created_at": 0,
        "model": body.get("model", "double"),
        "status": "completed",
        "error": None,
        "incomplete_details": None,
        "output": [output],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": body.get("tools", []),
        "usage": {
            "input_tokens": 1,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 1,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 2,
        },
    }


def anthropic_messages(body: Dict[str, Any]) -> Dict[str, Any]:
    messages = body.get("messages", [])
    last = messages[-1] if messages else {}
    results = [p for p in last.get("content", []) if isinstance(p, dict) and p.get("type") == "tool_result"]
    if results:
        content: List[Dict[str, Any]] = [{"type": "text", "text": answer(text_of(results[0].get("content")))}]
        stop = "end_turn"
    else:
        prompt = " ".join(text_of(m.get("content")) for m in messages if m.get("role") == "user")
        tool, arguments = plan_for(prompt)
        content = [{"type": "tool_use", "id": "toolu_double", "name": tool, "input": arguments}]
        stop = "tool_use"
    return {
        "id": "msg_double",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "double"),
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


def gemini(body: Dict[str, Any]) -> Dict[str, Any]:
    contents = body.get("contents", [])
    parts = contents[-1].get("parts", []) if contents else []
    result: Optional[Any] = None
    for part in parts:
        if "functionResponse" in part:
            result = part["functionResponse"].get("response")
        elif "codeExecutionResult" in part:
            result = part["codeExecutionResult"].get("output", "")
        elif "```tool_output" in part.get("text", ""):
            result = part["text"].split("```tool_output", 1)[1].rsplit("```", 1)[0]
    if result is not None:
        reply: List[Dict[str, Any]] = [{"text": answer(result)}]
    else:
        prompt = " ".join(p.get("text", "") for c in contents if c.get("role") == "user" for p in c.get("parts", []))
        tool, arguments = plan_for(prompt)
        if body.get("tools"):
            reply = [{"functionCall": {"name": tool, "args": arguments}}]
        else:
            # No tool offered: an ADK code executor runs the code block.
            code = arguments.get("code") or (
                f"import subprocess\nprint(subprocess.getoutput({arguments['command']!r}))"
            )
            reply = [{"text": f"```python\n{code}\n```"}]
    return {
        "candidates": [{"content": {"role": "model", "parts": reply}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
        "modelVersion": "double",
    }


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            return self.reply(400, {"error": {"message": "the body is not JSON"}})
        path = self.path.split("?", 1)[0]
        if path.endswith("/chat/completions"):
            return self.reply(200, chat_completions(body))
        if path.endswith("/responses"):
            return self.reply(200, responses(body))
        if path.endswith("/messages"):
            return self.reply(200, anthropic_messages(body))
        if re.search(r"/models/[^/]+:generateContent$", path):
            return self.reply(200, gemini(body))
        self.reply(404, {"error": {"message": f"the model double has no {path} (streaming is not scripted)"}})

    def do_GET(self) -> None:
        if self.path != "/log":
            return self.reply(404, {"error": {"message": f"no {self.path}"}})
        with answers_lock:
            given = list(answers)
            answers.clear()
        self.reply(200, given)

    def reply(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
        pass


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(f"port {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
