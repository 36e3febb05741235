"""A running tool on a terminal (DESIGN §16), for ``harness chat`` and ``harness call``: its
question (``ctx.ask``) asked field by field, and its progress as bars.

:func:`fill_form` asks one question per field of the form: an enum as numbered choices
(answered by number or value), a boolean as y/n, a number or an integer checked as one, a
string as typed; Enter keeps a field's default (or leaves an optional field out), and the end
of input (Ctrl-D) declines the form. The filled-in form is checked against its JSON Schema
before it is sent, so a value that does not fit is asked again.

:class:`Bars` draws one rich progress bar per running call that reports progress; it is
drawn only on a terminal, and stepped aside for prompts (:meth:`Bars.aside`).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..errors import HarnessError
from ..tools.approval_contract import visible
from ..tools.progress_shown import ShownProgress

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID

Asker = Callable[[str], Awaitable[str | None]]
"""Asks one line (the question is its argument); None at the end of input."""
DECLINE_NOTE = "Enter keeps a default; Ctrl-D declines"
_MISSING = object()


async def fill_form(ask: Asker, say: Callable[[str], None], schema: dict[str, Any]) -> Any:
    """The content of ``schema``'s form as the person gives it; None when they decline."""
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    if not properties:
        while True:
            line = await ask("accept? [y/n]")
            if line is None:
                return None
            answer = _yes_no(line.strip())
            if answer is not None:
                return {} if answer else None
            say("answer y or n")
    while True:
        content: dict[str, Any] = {}
        for name, node in properties.items():
            node = node if isinstance(node, dict) else {}
            while True:
                line = await ask(field_question(str(name), node, name in required))
                if line is None:
                    return None
                try:
                    value = parse(str(name), node, line.strip(), name in required)
                except ValueError as exc:
                    say(str(exc))
                    continue
                if value is not _MISSING:
                    content[str(name)] = value
                break
        problem = misfit(schema, content)
        if problem is None:
            return content
        say(f"that does not fit the form ({problem}); once more")


def field_question(name: str, node: dict[str, Any], required: bool) -> str:
    """The question of one field: its name, what it takes, its default."""
    title = visible(str(node.get("title") or name))
    parts = [title]
    if node.get("description"):
        parts.append(f"({visible(str(node['description']))})")
    several = _items_choices(node)
    options = choices_of(node) or several
    if options is not None:
        shown = [f"{number}) {visible(label)}" for number, (_, label) in enumerate(options, 1)]
        parts.append("[" + "  ".join(shown) + "]")
        if several is not None:
            parts.append("(several: 1,2)")
    elif node.get("type") == "boolean":
        parts.append(
            "[Y/n]" if node.get("default") is True else "[y/N]" if "default" in node else "[y/n]"
        )
    elif node.get("type") in ("integer", "number"):
        parts.append("(a whole number)" if node["type"] == "integer" else "(a number)")
    if "default" in node and node.get("type") != "boolean":
        parts.append(f"[default: {visible(str(node['default']))}]")
    elif required:
        parts.append("(required)")
    return " ".join(parts) + ":"


def parse(name: str, node: dict[str, Any], text: str, required: bool) -> Any:
    """The value typed for a field (``_MISSING``: left out); ValueError says what to type."""
    if not text:
        if "default" in node:
            return node["default"]
        if required:
            raise ValueError(f"{name} is required")
        return _MISSING
    options = choices_of(node)
    if options is not None:
        return _choice(options, text)
    several = _items_choices(node)
    if several is not None:
        return [_choice(several, part.strip()) for part in text.split(",") if part.strip()]
    kind = node.get("type")
    if kind == "boolean":
        answer = _yes_no(text)
        if answer is None:
            raise ValueError("answer y or n")
        return answer
    if kind == "integer":
        try:
            return int(text)
        except ValueError:
            raise ValueError(f"{name} takes a whole number, such as 3") from None
    if kind == "number":
        try:
            number = float(text)
        except ValueError:
            raise ValueError(f"{name} takes a number, such as 2.5") from None
        if not math.isfinite(number):
            raise ValueError(f"{name} takes a finite number")
        return int(number) if number.is_integer() and "." not in text else number
    return text


def _choice(options: list[tuple[Any, str]], text: str) -> Any:
    if text.isdigit() and 1 <= int(text) <= len(options):
        return options[int(text) - 1][0]
    for value, title in options:
        if text in (str(value), title):
            return value
    raise ValueError(f"choose 1 to {len(options)}, or one of the values listed")


def _items_choices(node: dict[str, Any]) -> list[tuple[Any, str]] | None:
    """The choices of a multiple-choice field (an array of an enum), else None."""
    items = node.get("items")
    if node.get("type") != "array" or not isinstance(items, dict):
        return None
    return choices_of(items)


def choices_of(node: dict[str, Any]) -> list[tuple[Any, str]] | None:
    """A field's choices as (value, title): an ``enum`` (titled by ``enumNames``), or a
    ``oneOf``/``anyOf`` of ``const`` values (titled by their ``title``); None for others."""
    if isinstance(node.get("enum"), list):
        names = node.get("enumNames")
        titled = isinstance(names, list) and len(names) == len(node["enum"])
        return [
            (value, str(names[index]) if titled else str(value))  # type: ignore[index]
            for index, value in enumerate(node["enum"])
        ]
    for key in ("oneOf", "anyOf"):
        found = node.get(key)
        variants: list[Any] = found if isinstance(found, list) else []
        if variants and all(isinstance(v, dict) and "const" in v for v in variants):
            return [(v["const"], str(v.get("title") or v["const"])) for v in variants]
    return None


def _yes_no(text: str) -> bool | None:
    word = text.lower()
    if word in ("y", "yes", "true"):
        return True
    if word in ("n", "no", "false"):
        return False
    return None


def misfit(schema: dict[str, Any], content: dict[str, Any]) -> str | None:
    """What in ``content`` does not fit ``schema`` (None: it fits, or the schema is no
    JSON Schema to check against)."""
    from ..errors import ToolArgsError
    from ..tools.fullschema import InvalidSchema, schema_checker

    try:
        schema_checker(schema)(content)
    except InvalidSchema:
        return None
    except ToolArgsError as exc:
        return str(exc)
    return None


class Bars:
    """Progress bars of the calls running now, one per call id (see the module)."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self._progress: Progress | None = None
        self._tasks: dict[str, TaskID] = {}
        self._aside = 0
        self.shown = ShownProgress()

    def _bars(self) -> Progress:
        if self._progress is None:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

            self._progress = Progress(
                TextColumn("  {task.description}", markup=False),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[note]}", markup=False),
                console=self.console,
                refresh_per_second=10,
                transient=True,
            )
        return self._progress

    def update(
        self, call_id: str, name: str, done: float, total: float | None, message: str | None
    ) -> None:
        """Show ``done`` of ``total`` for the call (a new bar for a new call)."""
        bars = self._bars()
        task = self._tasks.get(call_id)
        if task is None:
            task = self._tasks[call_id] = bars.add_task(visible(name), total=total, note="")
        bars.update(task, completed=done, total=total, note=visible(message or ""))
        # news is drawn at once; the rest by the bars' own refresh, ten times a second
        self.shown.offer(call_id, done, total, message, self._show)

    def finish(self, call_id: str) -> None:
        """The call ended: its bar goes (the last one gone, the bars stop)."""
        self.shown.end(call_id)
        task = self._tasks.pop(call_id, None)
        if task is None or self._progress is None:
            return
        self._progress.remove_task(task)
        if not self._tasks:
            self._progress.stop()
        else:
            self._show()

    def clear(self) -> None:
        """Every bar gone (the calls ended, or the turn did)."""
        for call_id in list(self._tasks):
            self.finish(call_id)

    @contextmanager
    def aside(self) -> Iterator[None]:
        """The bars out of the way while a prompt waits for the person."""
        self._aside += 1
        if self._progress is not None:
            self._progress.stop()
        try:
            yield
        finally:
            self._aside -= 1
            self._show()

    def _show(self) -> None:
        bars = self._progress
        if bars is None or self._aside or not self._tasks:
            return
        if not bars.live.is_started:
            bars.start()
        bars.refresh()


async def answer_question(approvals: Any, event: dict[str, Any], ask: Asker, say: Any) -> None:
    """Answer a tool's question (an ``approval/request`` with ``question: true``) with the
    form the person fills in, or decline it."""
    form = event.get("form") if isinstance(event.get("form"), dict) else {}
    say(f"({DECLINE_NOTE})")
    while True:
        content = await fill_form(ask, say, form or {})
        try:
            if content is None:
                approvals.answer(event["id"], "deny", "declined")
            else:
                approvals.answer(event["id"], "allow_once", content=content)
        except HarnessError as exc:
            say(str(exc))
            if "no open approval" in str(exc):
                return
            continue
        return


def stderr_bars() -> Bars | None:
    """Bars on standard error when it is a terminal, else None (nothing is drawn)."""
    if not sys.stderr.isatty():
        return None
    from rich.console import Console

    return Bars(Console(stderr=True))
