"""What ``harness chat`` prints of a call (and ``harness sessions show`` of a log): the
card of a finished call, its program's inner calls, and a running tool's log lines."""

from __future__ import annotations

import json
from typing import Any

from rich.console import Group
from rich.panel import Panel
from rich.text import Text

from ..tools.approval_contract import show_args, visible
from ..tools.jsonvalue import printable


def _status(code: Any) -> str:
    """A card's status word, from a result's code."""
    if code is None:
        return "done"
    return str(code) if code in ("denied", "cancelled", "timeout") else "error"


STATUS_STYLE = {
    "done": "green",
    "error": "red",
    "denied": "yellow",
    "cancelled": "yellow",
    "timeout": "red",
}


def result_card(event: dict[str, Any], calls: dict[str, dict[str, Any]]) -> Panel:
    """The card of a finished call: name, status, duration, arguments, rendered blocks."""
    result = event["result"]
    call = calls.get(event["id"], {})
    code = result.get("code")
    status = _status(code)
    title = Text.assemble(
        (visible(str(result.get("name"))), "bold"),
        " · ",
        (status, STATUS_STYLE.get(status, "red")),
        f" · {event.get('duration_ms', 0):.0f} ms",
    )
    args = call.get("args", {})
    program = result.get("name") == "run_code" and isinstance(args, dict)
    parts: list[Any] = [] if program else [Text(f"args: {show_args(args)}", style="dim")]
    for block in result.get("content") or []:
        kind = block.get("type")
        if kind == "text":
            parts.append(Text(visible_block(str(block.get("text", "")))))
        elif kind == "code":
            parts.append(Panel(Text(visible_block(str(block.get("text", "")))), title="program"))
        elif kind == "tool_call":
            parts.append(inner_card(block, calls))
        else:
            parts.append(Text(f"[{block.get('type')} block]", style="dim"))
    if code is not None and result.get("error") and not result.get("content"):
        parts.append(Text(visible(str(result["error"])), style="red"))
    return Panel(Group(*parts), title=title, title_align="left", expand=False)


def inner_card(block: dict[str, Any], calls: dict[str, dict[str, Any]]) -> Any:
    """A call of a run_code program: one line when its card was shown live, else a card."""
    status = _status(block.get("code"))
    line = Text.assemble(
        ("↳ ", "dim"),
        (visible(str(block.get("name"))), "bold"),
        " · ",
        (status, STATUS_STYLE.get(status, "red")),
        f" · {float(block.get('duration_ms') or 0):.0f} ms",
    )
    if block.get("id") in calls:
        return line
    parts: list[Any] = [Text(f"args: {show_args(block.get('args', {}))}", style="dim")]
    for inner in block.get("content") or []:
        if inner.get("type") == "text":
            parts.append(Text(visible_block(str(inner.get("text", "")))))
    if block.get("error") and not block.get("content"):
        parts.append(Text(visible(str(block["error"])), style="red"))
    return Panel(Group(*parts), title=line, title_align="left", expand=False)


def log_line(event: dict[str, Any]) -> Text:
    """A tool's log entry (``tool/log``), under its call."""
    data = event.get("data") or {}
    extra = f" {json.dumps(printable(data), ensure_ascii=False, default=str)}" if data else ""
    level = str(event.get("level", "info"))
    style = "yellow" if level in ("warning", "error", "critical", "alert", "emergency") else "dim"
    return Text.assemble(
        ("      · " if event.get("parent") else "    · ", "dim"),
        (level, style),
        " ",
        visible(str(event.get("message", ""))),
        (visible(extra), "dim"),
    )


def visible_block(text: str) -> str:
    """A rendered text block with hidden characters made visible, line breaks kept."""
    return "\n".join(visible(line) for line in text.split("\n"))
