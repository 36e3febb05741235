"""write_text_file: create or replace a UTF-8 text file inside the workspace, atomically."""

from __future__ import annotations

from typing import Any

from harness import Context, define_tool
from harness.helpers.workspace import Workspace, WorkspaceConfig, WorkspaceError

name = "write_text_file"
inject = ["tools"]
Config = WorkspaceConfig


def apply(ctx: Context, config: WorkspaceConfig) -> Any:
    workspace = Workspace(ctx.base_dir / config.root, config.max_bytes)

    def write(args: dict[str, Any]) -> dict[str, Any]:
        try:
            size = workspace.write_text(args["path"], args["content"])
        except WorkspaceError as exc:
            return {"ok": False, "path": args["path"], "bytes": 0, "error": str(exc)}
        return {"ok": True, "path": args["path"], "bytes": size, "error": ""}

    return ctx.tools.register(
        define_tool(
            name="write_text_file",
            description=(
                "Create or replace a UTF-8 text file in the workspace with the given content "
                "(folders are created as needed). It replaces the whole file atomically and "
                "cannot write outside the workspace or over folders and links; to read a file "
                "first use read_text_file."
            ),
            parameters={
                "path": {"type": "string", "required": True, "description": 'e.g. "notes/a.md"'},
                "content": {"type": "string", "required": True, "description": "The full text"},
            },
            output={
                "schema": {
                    "ok": {"type": "boolean", "required": True},
                    "path": {"type": "string", "required": True},
                    "bytes": {"type": "integer", "required": True},
                    "error": {"type": "string", "required": True},
                },
                "render": lambda v: {
                    "type": "text",
                    "text": f"wrote {v['bytes']} bytes to {v['path']}"
                    if v["ok"]
                    else f"write failed: {v['error']}",
                },
            },
            execute=write,
            annotations={"destructive": True, "idempotent": True, "open_world": False},
        )
    )
