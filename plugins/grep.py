"""grep: search the text files of the workspace for a string or a regular expression.

Patterns run on RE2 (``google-re2``), whose matching time is linear in the text: no pattern
can backtrack catastrophically. RE2 has no backreferences or lookaround; such a pattern is
refused with RE2's message. The search runs in a worker thread that checks a stop flag and
the deadline at every line, so the timeout (or a cancelled call) stops the work itself, and
other calls are answered meanwhile. Files are opened through the Workspace (no symlinks
followed, no FIFOs or devices, at most max_bytes each).
"""

from __future__ import annotations

import threading
import time
from functools import partial
from typing import Any

import anyio
import pydantic
import re2

from harness import Context, define_tool
from harness.helpers.workspace import Workspace, WorkspaceConfig, WorkspaceError

name = "grep"
inject = ["tools"]
MAX_PATTERN = 10_000


class Config(WorkspaceConfig):
    timeout: float = pydantic.Field(10, gt=0)
    """Seconds one search may run; it stops (and says so) when they are up."""


class _Stopped(Exception):
    pass


def _matcher(args: dict[str, Any]) -> Any:
    pattern = args["pattern"]
    if len(pattern) > MAX_PATTERN:
        raise WorkspaceError(f"the pattern is longer than {MAX_PATTERN} characters")
    options = re2.Options()
    options.log_errors = False
    options.case_sensitive = not args.get("ignore_case")
    try:
        return re2.compile(pattern if args.get("regex") else re2.escape(pattern), options)
    except re2.error as exc:
        detail = exc.args[0].decode("utf-8", "replace") if exc.args else "invalid"
        raise WorkspaceError(
            f"invalid regular expression ({detail}); grep uses RE2 syntax, which has no "
            "backreferences or lookaround"
        ) from None


def _search(
    workspace: Workspace, args: dict[str, Any], stop: threading.Event, deadline: float
) -> dict[str, Any]:
    cap = min(max(args.get("max_results", 100), 1), 1000)
    matches: list[dict[str, Any]] = []
    matcher = _matcher(args)
    for shown, data in workspace.read_files(args.get("path", ".")):
        if b"\0" in data[:8192]:
            continue  # binary
        for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            if stop.is_set() or time.monotonic() > deadline:
                raise _Stopped
            if matcher.search(line):
                if len(matches) == cap:
                    return {"ok": True, "matches": matches, "truncated": True, "error": ""}
                matches.append({"path": shown, "line": number, "text": line[:300]})
    return {"ok": True, "matches": matches, "truncated": False, "error": ""}


def apply(ctx: Context, config: Config) -> Any:
    workspace = Workspace(ctx.base_dir / config.root, config.max_bytes)

    async def search(args: dict[str, Any]) -> dict[str, Any]:
        stop = threading.Event()
        work = partial(_search, workspace, args, stop, time.monotonic() + config.timeout)
        try:
            return await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
        except WorkspaceError as exc:
            return {"ok": False, "matches": [], "truncated": False, "error": str(exc)}
        except _Stopped:
            return {
                "ok": False,
                "matches": [],
                "truncated": False,
                "error": f"the search took longer than {config.timeout:g} seconds and was "
                "stopped; search a smaller folder or use a simpler pattern",
            }
        finally:
            stop.set()  # a cancelled or timed-out call stops its thread at the next line

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
            timeout=config.timeout + 5,
            annotations={"read_only": True, "open_world": False},
        )
    )
