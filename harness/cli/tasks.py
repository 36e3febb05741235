"""``harness tasks``: the MCP tasks kept in the store (docs/store.md#mcp-tasks).

It opens the store the config's ``harness:store`` entry names, as any process sharing it
does, and lists its tasks, oldest first: by default those not yet ended (``working``,
``input_required``), with ``--all`` the ended ones too, until their ``ttlMs`` passes. A task
whose process died is shown (and recorded) ``failed``, as every replica answers it.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import click

from ..errors import HarnessError
from ..loader.config import read_config
from .options import Options, common, options_of


class TasksError(HarnessError):
    """Raised when ``harness tasks`` has no store to list (no ``harness:store`` entry)."""


@click.command()
@common
@click.option("--json", "as_json", is_flag=True, help="Print the tasks as JSON.")
@click.option("--all", "every", is_flag=True, help="Include ended tasks (completed, failed...).")
@click.pass_context
def tasks(ctx: click.Context, /, as_json: bool, every: bool, **shared: Any) -> None:
    """List the MCP tasks kept in the store (not yet ended, unless --all)."""
    listed = list_tasks(options_of(ctx, **shared), every)
    if as_json:
        print(json.dumps(listed, indent=2, ensure_ascii=False))
        return
    if not listed:
        print("no tasks" if every else "no running tasks (--all shows ended ones)", file=sys.stderr)
        return
    from rich.console import Console

    from .tables import tasks_table

    Console().print(tasks_table(listed))


def list_tasks(options: Options, every: bool) -> list[dict[str, Any]]:
    """The tasks of the config's store, as ``--json`` prints them."""
    from ..store.config import StoreConfig

    loaded = read_config(
        options.config_path, [Path(p) for p in options.patches], options.overrides, lenient=True
    )
    for plan in loaded.plans:
        if plan.name == "harness:store" and plan.enabled:
            config = StoreConfig.model_validate(plan.config or {})
            return anyio.run(_listed, config, loaded.file.parent, every)
    raise TasksError(
        f"{options.config_path} has no enabled entry `name: harness:store`, so MCP tasks live "
        "in the memory of the `harness run` serving them, where no other process sees them: "
        "add the store entry (docs/store.md) to keep them there and list them"
    )


async def _listed(config: Any, base_dir: Path, every: bool) -> list[dict[str, Any]]:
    from ..store.service import open_store
    from ..store.tasks import StoredTasks

    url: str = config.url
    if url.startswith("sqlite:///") and not (base_dir / url.removeprefix("sqlite:///")).exists():
        return []  # no store yet: nothing was ever kept (and listing creates none)
    database = await open_store(config, base_dir)
    try:
        rows = await StoredTasks(database).listing(terminal=every)
    finally:
        await database.close()
    return [_shown(row) for row in rows]


def _shown(row: dict[str, Any]) -> dict[str, Any]:
    error = row["error"] or {}
    return {
        "id": row["id"],
        "tool": row["tool"],
        "status": row["status"],
        "created": _stamp(row["created_at"]),
        "updated": _stamp(row["updated_at"]),
        "message": row["message"] or error.get("message"),
        "client": row["client"],
        "ttlMs": row["ttl_ms"],
    }


def _stamp(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
