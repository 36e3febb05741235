"""grep: search the text files of the workspace for a string or a regular expression."""

from __future__ import annotations

import re
from typing import Any

from harness import Context, define_tool
from harness.helpers.workspace import Workspace, WorkspaceConfig, WorkspaceError

name = "grep"
inject = ["tools"]
Config = WorkspaceConfig


def apply(ctx: Context, config: WorkspaceConfig) -> Any:
    workspace = Workspace(ctx.base_dir / config.root, config.max_bytes)

    def search(args: dict[str, Any]) -> dict[str, Any]:
        cap = min(max(args.get("max_results", 100), 1), 1000)
        flags = re.IGNORECASE if args.get("ignore_case") else 0
        pattern = args["pattern"] if args.get("regex") else re.escape(args["pattern"])
        matches: list[dict[str, Any]] = []
        try:
            matcher = re.compile(pattern, flags)
            for shown, real in workspace.text_files(args.get("path", ".")):
                data = real.read_bytes() if real.stat().st_size <= config.max_bytes else b"\0"
                if b"\0" in data[:8192]:
                    continue  # binary, or too large to search
                for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
                    if matcher.search(line):
                        if len(matches) == cap:
                            return {"ok": True, "matches": matches, "truncated": True, "error": ""}
                        matches.append({"path": shown, "line": number, "text": line[:300]})
        except (WorkspaceError, re.error) as exc:
            return {"ok": False, "matches": [], "truncated": False, "error": str(exc)}
        return {"ok": True, "matches": matches, "truncated": False, "error": ""}

    def render(value: dict[str, Any]) -> dict[str, str]:
        if not value["ok"]:
            return {"type": "text", "text": f"grep failed: {value['error']}"}
        lines = [f"{m['path']}:{m['line']}: {m['text']}" for m in value["matches"]]
        return {"type": "text", "text": "\n".join(lines) or "no matches"}

    match = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "required": True},
            "line": {"type": "integer", "required": True},
            "text": {"type": "string", "required": True},
        },
    }
    return ctx.tools.register(
        define_tool(
            name="grep",
            description=(
                "Search the text files of the workspace for lines containing a string (or a "
                "regular expression with regex: true) and return path, line number and text. "
                "Binary and oversized files are skipped and results stop at max_results. To read "
                "a whole file use read_text_file."
            ),
            parameters={
                "pattern": {"type": "string", "required": True, "description": "What to look for"},
                "path": {"type": "string", "description": 'Folder or file to search, default "."'},
                "regex": {"type": "boolean", "description": "Treat pattern as a regex"},
                "ignore_case": {"type": "boolean", "description": "Match regardless of case"},
                "max_results": {"type": "integer", "description": "At most this many (1-1000)"},
            },
            output={
                "schema": {
                    "ok": {"type": "boolean", "required": True},
                    "matches": {"type": "array", "required": True, "items": match},
                    "truncated": {"type": "boolean", "required": True},
                    "error": {"type": "string", "required": True},
                },
                "render": render,
            },
            execute=search,
            annotations={"read_only": True, "open_world": False},
        )
    )
