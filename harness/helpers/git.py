"""Running git on repositories that must be treated as untrusted.

No shell (an argument list), an absolute repository path (so it can never read as an
option), a timeout, an output cap, and configuration that turns off everything a hostile
repository could use to run code or stall: pager, external diff and textconv drivers,
fsmonitor, hooks, credential prompts. Command-line ``-c`` settings override the
repository's own config.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import anyio
import pydantic

SAFE_CONFIG = (
    "core.pager=cat",
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.untrackedCache=false",
    "diff.external=",
    "protocol.allow=never",
    "credential.helper=",
)


class GitError(Exception):
    """Raised when git cannot run, times out, or reports an error; the message says which."""


@dataclass(frozen=True, slots=True)
class GitOutput:
    """What git printed, cut at the cap."""

    text: str
    truncated: bool


def resolve_repo(path: str, base: Path, allowed_roots: list[Path] | None) -> Path:
    """An absolute repository path (symlinks resolved), inside ``allowed_roots`` when set."""
    if "\x00" in path or not path.strip():
        raise GitError("repoPath must be a non-empty path")
    repo = Path(os.path.realpath(base / path))
    if allowed_roots is not None and not any(
        repo == root or repo.is_relative_to(root) for root in allowed_roots
    ):
        raise GitError(
            f"{path} is outside the allowed roots ({', '.join(map(str, allowed_roots))})"
        )
    if not repo.is_dir():
        raise GitError(f"no such folder: {path}")
    return repo


async def run_git(
    repo: Path, *args: str, seconds: float = 10, max_bytes: int = 1_000_000
) -> GitOutput:
    """Run ``git -C repo <args>`` safely; raise GitError with git's own message on failure."""
    command = ["git", "--no-pager", "-C", str(repo)]
    for setting in SAFE_CONFIG:
        command += ["-c", setting]
    command += list(args)
    environment = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/nonexistent"),
        "LANG": "C.UTF-8",
        "GIT_PAGER": "cat",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_OPTIONAL_LOCKS": "0",
        "GIT_NO_REPLACE_OBJECTS": "1",
    }
    try:
        with anyio.fail_after(seconds):
            result = await anyio.run_process(command, env=environment, check=False)
    except TimeoutError:
        raise GitError(f"git took longer than {seconds:g} seconds and was stopped") from None
    except FileNotFoundError:
        raise GitError("git is not installed on this machine") from None
    if result.returncode != 0:
        message = result.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitError(
            message[0].removeprefix("fatal: ") if message else f"git exited {result.returncode}"
        )
    data = result.stdout
    truncated = len(data) > max_bytes
    return GitOutput(data[:max_bytes].decode("utf-8", "replace"), truncated)


class GitConfig(pydantic.BaseModel):
    """Config of the bundled git tools."""

    model_config = pydantic.ConfigDict(extra="forbid")

    allowed_roots: list[str] | None = None
    """Folders repoPath must be inside (relative to cordis.yml's folder); unset: any."""
    timeout: float = pydantic.Field(10, gt=0)
    """Seconds git may run."""

    def roots(self, base: Path) -> list[Path] | None:
        """The allowed roots, resolved against ``base``."""
        if self.allowed_roots is None:
            return None
        return [(base / root).resolve() for root in self.allowed_roots]
