"""read_text_file: read a UTF-8 text file inside the workspace."""

from __future__ import annotations

from typing import Any

from harness import Context, define_tool
from harness.helpers.workspace import Workspace, WorkspaceConfig, WorkspaceError

name = "read_text_file"
inject = ["tools"]
Config = WorkspaceConfig


def apply(ctx: Context, config: WorkspaceConfig) -> Any:
    workspace = Workspace(ctx.base_dir / config.root, config.max_bytes)

    def read(args: dict[str, Any]) -> dict[str, Any]:
        try:
            part = workspace.read_text(args["path"], args.get("offset", 1), args.get("limit"))
        except WorkspaceError as exc:
            return {
                "ok": False,
                "content": "",
                "error": str(exc),
                "total_lines": 0,
                "truncated": False,
            }
        return {
            "ok": True,
            "content": part.content,
            "error": "",
            "total_lines": part.total_lines,
            "truncated": part.truncated,
        }

    return ctx.tools.register(
        define_tool(
            name="read_text_file",
            description=(
                "Read a UTF-8 text file in the workspace and return its content. Paths are "
                "relative to the workspace and cannot leave it; files over the size limit must "
                "be read in parts with offset and limit (lines), and binary files are refused. "
                "To find files use list_dir; to search their text use grep."
            ),
            parameters={
                "path": {"type": "string", "required": True, "description": 'e.g. "notes/todo.md"'},
                "offset": {"type": "integer", "description": "First line to read, from 1"},
                "limit": {"type": "integer", "description": "How many lines to read"},
            },
            output={
                "schema": {
                    "ok": {"type": "boolean", "required": True},
                    "content": {"type": "string", "required": True},
                    "error": {"type": "string", "required": True},
                    "total_lines": {"type": "integer", "required": True},
                    "truncated": {"type": "boolean", "required": True},
                },
                "render": lambda v: {
                    "type": "text",
                    "text": v["content"] if v["ok"] else f"read failed: {v['error']}",
                },
            },
            execute=read,
            annotations={"read_only": True, "open_world": False},
        )
    )
