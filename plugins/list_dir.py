"""list_dir: the entries of a folder inside the workspace."""

from __future__ import annotations

from typing import Any

from harness import Context, define_tool
from harness.helpers.workspace import Workspace, WorkspaceConfig, WorkspaceError

name = "list_dir"
inject = ["tools"]
Config = WorkspaceConfig


def apply(ctx: Context, config: WorkspaceConfig) -> Any:
    workspace = Workspace(ctx.base_dir / config.root, config.max_bytes)

    def list_entries(args: dict[str, Any]) -> dict[str, Any]:
        cap = min(max(args.get("max_entries", 200), 1), 1000)
        try:
            entries, truncated = workspace.list_dir(args.get("path", "."), cap)
        except WorkspaceError as exc:
            return {"ok": False, "entries": [], "truncated": False, "error": str(exc)}
        return {"ok": True, "entries": entries, "truncated": truncated, "error": ""}

    def render(value: dict[str, Any]) -> dict[str, str]:
        if not value["ok"]:
            return {"type": "text", "text": f"list_dir failed: {value['error']}"}
        lines = [f"{e['name']}{'/' if e['type'] == 'dir' else ''}" for e in value["entries"]]
        if not lines:
            return {"type": "text", "text": "empty folder"}
        return {"type": "text", "text": "\n".join(lines + (["..."] if value["truncated"] else []))}

    return ctx.tools.register(
        define_tool(
            name="list_dir",
            description=(
                "List the files and folders in a workspace folder, with type and size. It "
                "shows one level (call it again for subfolders) and at most max_entries names. "
                "To read a file use read_text_file; to search text use grep."
            ),
            parameters={
                "path": {"type": "string", "description": 'Folder in the workspace, default "."'},
                "max_entries": {"type": "integer", "description": "At most this many (1-1000)"},
            },
            output={
                "schema": {
                    "ok": {"type": "boolean", "required": True},
                    "entries": {
                        "type": "array",
                        "required": True,
                        "items": {
                            "type": "object",
                            "properties": {
                                "name": {"type": "string", "required": True},
                                "type": {
                                    "type": "string",
                                    "enum": ["file", "dir", "symlink", "other"],
                                },
                                "size": {"type": "integer"},
                            },
                        },
                    },
                    "truncated": {"type": "boolean", "required": True},
                    "error": {"type": "string", "required": True},
                },
                "render": render,
            },
            execute=list_entries,
            annotations={"read_only": True, "open_world": False},
        )
    )
