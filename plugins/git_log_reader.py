"""git_log_reader: the latest commits of a git repository (the defineTool guide's example)."""

from __future__ import annotations

from typing import Any

from harness import Context, define_tool
from harness.helpers.git import GitConfig, GitError, resolve_repo, run_git

name = "git_log_reader"
inject = ["tools"]
Config = GitConfig


def apply(ctx: Context, config: GitConfig) -> Any:
    roots = config.roots(ctx.base_dir)

    async def log(args: dict[str, Any]) -> dict[str, Any]:
        limit = min(max(int(args.get("maxCount", 10)), 1), 100)
        try:
            repo = resolve_repo(args["repoPath"], ctx.base_dir, roots)
            out = await run_git(
                repo,
                "log",
                f"--max-count={limit}",
                "--no-color",
                "--no-show-signature",
                "--no-use-mailmap",
                "--pretty=format:%h | %an | %ar | %s",
                seconds=config.timeout,
            )
        except GitError as exc:
            return {"ok": False, "formatted": "", "total": 0, "error": str(exc)}
        lines = [line for line in out.text.split("\n") if line]
        header = f"Last {len(lines)} commit(s) of {args['repoPath']}:"
        return {
            "ok": True,
            "formatted": "\n".join([header, *lines]),
            "total": len(lines),
            "error": "",
        }

    return ctx.tools.register(
        define_tool(
            name="git_log_reader",
            description=(
                "Read the latest commits of a git repository and return one line each: short "
                "hash | author | age | subject. Use when asked about a repository's history or "
                "recent changes; at most 100 commits. To see what a commit changed, use git_diff."
            ),
            parameters={
                "repoPath": {
                    "type": "string",
                    "required": True,
                    "description": 'The repository folder, e.g. "/home/a/projects/demo"',
                },
                "maxCount": {
                    "type": "integer",
                    "description": "How many commits (1-100, default 10)",
                },
            },
            output={
                "schema": {
                    "ok": {"type": "boolean", "required": True},
                    "formatted": {"type": "string", "required": True},
                    "total": {"type": "integer", "required": True},
                    "error": {"type": "string", "required": True},
                },
                "render": lambda v: {
                    "type": "text",
                    "text": v["formatted"] if v["ok"] else f"git log failed: {v['error']}",
                },
            },
            execute=log,
            timeout=config.timeout + 5,
            annotations={"read_only": True, "open_world": False},
        )
    )
