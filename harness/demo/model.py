"""The demo model: the scripted server with rules for a first chat without a key.

``harness chat --demo`` and ``harness run --demo`` use it as their model. It is named
:data:`DEMO_MODEL` wherever it shows, because it is not a language model: it answers by
rules, read from the last message of each request —

- a question about commits or history (``commit``, ``history``, ``log``, ``提交``...) calls
  ``git_log_reader`` on the path the message names, else on the project folder;
- arithmetic (``2 + 3``, ``add 2 and 3``) calls ``add``, and ``2 * 3`` calls ``multiply``;
- a tool's result gets one sentence about it;
- anything else gets a short note saying what the demo can do, and no tool.

When the tool a rule wants is not among the request's tools (the git tools switched off,
say), it says so and how to switch it on, instead of calling it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ..testing.openai_server import Fault, Reply, ScriptedServer, call

DEMO_MODEL = "demo model: scripted rules, not a language model"
HISTORY = re.compile(r"commit|history|\bgit log\b|\blog\b|recent changes|提交|历史|日志", re.I)
NUMBER = r"(-?\d+(?:\.\d+)?)"
SUM = re.compile(
    rf"{NUMBER}\s*(?:\+|plus)\s*{NUMBER}|\b(?:add|sum of)\s+{NUMBER}\s+(?:and|to)\s+{NUMBER}", re.I
)
PRODUCT = re.compile(rf"{NUMBER}\s*(?:\*|\u00d7|x|times)\s*{NUMBER}", re.I)
PATH = re.compile(r"(?<![\w.~/-])((?:~|\.{1,2})?/[^\s,;:!?'\"\uff0c\u3002\uff1f\uff01\u3001]*)")
HELP = (
    f"I am the {DEMO_MODEL}. I answer two kinds of requests: ask for the recent commits "
    "(I call git_log_reader on this project, or on a path you name) or for a sum such as "
    "2 + 3 (I call add). Anything else gets this note and no tool. For real answers, set up "
    "a model: docs/agent.md."
)


class DemoServer(ScriptedServer):
    """The scripted server answering by the demo rules; ``project`` is the default repo."""

    def __init__(self, project: Path, port: int = 0, **kwargs: Any) -> None:
        super().__init__(model=DEMO_MODEL, **kwargs)
        self.project = project
        self.port = port  # 0: any free port (the one bound is read back at start)

    def _choose(self, body: dict[str, Any]) -> tuple[Reply, Fault | None]:
        return demo_reply(body, self.project), None


def demo_reply(body: dict[str, Any], project: Path) -> Reply:
    """The demo's answer to one chat completions request."""
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    last = messages[-1] if messages else {}
    tools = {
        str((item.get("function") or {}).get("name"))
        for item in body.get("tools") or []
        if isinstance(item, dict)
    }
    if body.get("tool_choice") == "none":
        tools = set()
    if last.get("role") == "tool":
        return Reply.say(_about_result(messages, last))
    text = _text(last.get("content"))
    if HISTORY.search(text):
        found = PATH.search(text)
        repo = found.group(1).rstrip(".") if found else str(project)
        return _call("git_log_reader", {"repoPath": repo, "maxCount": 10}, tools, repo)
    for pattern, tool in ((SUM, "add"), (PRODUCT, "multiply")):
        match = pattern.search(text)
        if match:
            a, b = (g for g in match.groups() if g is not None)
            return _call(tool, {"a": _number(a), "b": _number(b)}, tools, None)
    return Reply.say(HELP)


def _call(tool: str, args: dict[str, Any], tools: set[str], repo: str | None) -> Reply:
    if tool not in tools:
        how = (
            "`harness enable git` switches the bundled git tools on"
            if tool.startswith("git_")
            else f"switch on the entry that registers {tool}"
        )
        return Reply.say(f"I would call {tool}, but it is not among the tools I may call: {how}.")
    lead = f"Reading the recent commits of {repo}." if repo else f"Asking {tool}."
    return Reply.calls(call(tool, args), text=lead)


def _about_result(messages: list[dict[str, Any]], last: dict[str, Any]) -> str:
    name = _tool_of(messages, last)
    try:
        value = json.loads(_text(last.get("content")))
    except ValueError:
        value = None
    if isinstance(value, dict) and value.get("code"):
        return f"{name} failed ({value['code']}): {value.get('error')}"
    if name == "git_log_reader" and isinstance(value, dict):
        if not value.get("ok"):
            return f"git_log_reader could not read the history: {value.get('error')}"
        return (
            f"Those are the last {value.get('total')} commit(s): the card above lists them "
            "as hash | author | time | subject."
        )
    if name in ("add", "multiply"):
        return f"The {'sum' if name == 'add' else 'product'} is {_show(value)}."
    return f"{name} answered; its card shows the result."


def _tool_of(messages: list[dict[str, Any]], last: dict[str, Any]) -> str:
    wanted = last.get("tool_call_id")
    for message in reversed(messages):
        for item in message.get("tool_calls") or []:
            if isinstance(item, dict) and item.get("id") == wanted:
                return str((item.get("function") or {}).get("name"))
    return "the tool"


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _number(text: str) -> int | float:
    value = float(text)
    return int(value) if value.is_integer() and abs(value) < 2**53 else value


def _show(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return json.dumps(value)
