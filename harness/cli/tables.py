"""The tables the terminal commands print (rich loads only when one is printed)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rich.table import Table

if TYPE_CHECKING:
    from ..host import EntryStatus


def status_table(statuses: list[EntryStatus], with_tools: bool, with_error: bool = True) -> Table:
    """The entries as a table: id, name, state, and optionally tools and error."""
    table = Table(title="harness")
    table.add_column("id")
    table.add_column("name")
    table.add_column("state")
    if with_tools:
        table.add_column("tools")
    if with_error:
        table.add_column("error", overflow="fold")
    colours = {"active": "green", "failed": "red", "pending": "yellow", "disabled": "dim"}
    for status in statuses:
        label = f"  {status.id}" if status.group else status.id
        state = f"[{colours.get(status.state, 'white')}]{status.state}[/]"
        row = [label, status.name or "(group)", state]
        if with_tools:
            row.append(", ".join(status.tools))
        if with_error:
            row.append(status.error or "")
        table.add_row(*row)
    return table


def tools_table(rows: Sequence[tuple[str, str, str]]) -> Table:
    """The tools as a table: name, the first line of the description, the entry."""
    table = Table(title="tools")
    for column in ("name", "description", "registered by"):
        table.add_column(column)
    for row in rows:
        table.add_row(*row)
    return table


def resources_table(rows: Sequence[tuple[str, str, str, str]]) -> Table:
    """The resources and templates: URI, MIME type, name, the description's first line."""
    table = Table(title="resources")
    for column in ("uri", "type", "name", "description"):
        table.add_column(column)
    for row in rows:
        table.add_row(*row)
    return table


def prompts_table(rows: Sequence[tuple[str, str, str]]) -> Table:
    """The prompts: name, arguments (required ones starred), the description's first line."""
    table = Table(title="prompts")
    for column in ("name", "arguments", "description"):
        table.add_column(column)
    for row in rows:
        table.add_row(*row)
    return table


def tasks_table(tasks: Sequence[dict[str, Any]]) -> Table:
    """MCP tasks (``harness tasks``): id, tool, status, created, updated, message."""
    table = Table(title="tasks")
    for column in ("id", "tool", "status", "created", "updated", "message"):
        table.add_column(column, overflow="fold")
    table.columns[0].no_wrap = True
    colours = {"completed": "green", "failed": "red", "input_required": "yellow"}
    for task in tasks:
        status = f"[{colours.get(task['status'], 'white')}]{task['status']}[/]"
        row = (task["id"], task["tool"], status, task["created"], task["updated"])
        table.add_row(*row, task["message"] or "")
    return table
