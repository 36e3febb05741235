"""git_diff: what one commit changed, or the uncommitted changes of a repository."""

from __future__ import annotations

import re
from typing import Any

import pydantic

from harness import Context, define_tool
from harness.helpers.git import GitConfig, GitError, resolve_repo, run_git

name = "git_diff"
inject = ["tools"]
REVISION = re.compile(r"^[\w./~^@{}-]{1,200}$")


class Config(GitConfig):
    max_bytes: int = pydantic.Field(100_000, gt=0)
    """The longest diff returned; longer ones are cut and marked truncated."""


def apply(ctx: Context, config: Config) -> Any:
    roots = config.roots(ctx.base_dir)
    flags = ("--no-color", "--no-ext-diff", "--no-textconv", "--ignore-submodules=all")

    async def diff(args: dict[str, Any]) -> dict[str, Any]:
        commit = args.get("commit")
        try:
            repo = resolve_repo(args["repoPath"], ctx.base_dir, roots)
            if commit is not None:
                if commit.startswith("-") or not REVISION.match(commit):
                    raise GitError(f"{commit!r} is not a commit name (a hash, branch or tag)")
                command: tuple[str, ...] = (
                    "show",
                    "--no-show-signature",
                    *flags,
                    "--format=",
                    "--end-of-options",
                    commit,
                    "--",
                )
            else:
                command = ("diff", *flags, "HEAD", "--")
            out = await run_git(repo, *command, seconds=config.timeout, max_bytes=config.max_bytes)
        except GitError as exc:
            return {"ok": False, "diff": "", "truncated": False, "error": str(exc)}
        return {"ok": True, "diff": out.text, "truncated": out.truncated, "error": ""}

    return ctx.tools.register(
        define_tool(
            name="git_diff",
            description=(
                "Show the changes of one commit (commit given) or the uncommitted changes of the "
                "working tree against HEAD (no commit), as a unified diff. Long diffs are cut at "
                "the size limit and marked truncated. For the list of commits use git_log_reader."
            ),
            parameters={
                "repoPath": {
                    "type": "string",
                    "required": True,
                    "description": "The repository folder",
                },
                "commit": {"type": "string", "description": "A commit hash, branch or tag"},
            },
            output={
                "schema": {
                    "ok": {"type": "boolean", "required": True},
                    "diff": {"type": "string", "required": True},
                    "truncated": {"type": "boolean", "required": True},
                    "error": {"type": "string", "required": True},
                },
                "render": lambda v: {
                    "type": "text",
                    "text": (v["diff"] or "no changes")
                    + ("\n[truncated]" if v["truncated"] else "")
                    if v["ok"]
                    else f"git diff failed: {v['error']}",
                },
            },
            execute=diff,
            timeout=config.timeout + 5,
            annotations={"read_only": True, "open_world": False},
        )
    )
