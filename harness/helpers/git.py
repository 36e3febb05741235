"""Running git on repositories that must be treated as untrusted.

A repository's own config can make git run programs (``core.fsmonitor``, ``core.pager``,
filter drivers, ``diff.*.command`` and ``textconv``, ``gpg.program`` with
``log.showSignature``, ``core.sshCommand``...) or read files outside it (``include.path``,
``mailmap.file``, ``core.attributesFile``, ``diff.orderFile``, ``core.worktree``). Rather than
chase every such key, git never reads that config: :func:`resolve_repo` finds the repository
itself, and :func:`run_git` runs git on a *shadow* git folder — a fresh temporary folder with
a minimal config of our own (format version and object format only), a copy of ``HEAD`` and
links to the repository's ``objects``, ``refs`` and ``packed-refs`` — with ``GIT_DIR``,
``GIT_WORK_TREE`` and ``GIT_INDEX_FILE`` set explicitly. System and global config are off
(``GIT_CONFIG_NOSYSTEM``, ``GIT_CONFIG_GLOBAL=/dev/null``), the hooks, ``info/attributes``
and ``info/exclude`` of the repository are not there, and ``-c`` settings turn off pagers,
external diffs, fsmonitor, signatures, mailmap, submodule recursion and every protocol.

A ``.git`` file (``gitdir: ...``), a ``commondir``, ``objects`` or an alternates file that
leads outside ``allowed_roots`` is refused. Output is read as a stream and git is stopped at
the byte cap, so memory follows the cap, not the size of the diff.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import pydantic

SAFE_CONFIG = (
    "core.pager=cat",
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.untrackedCache=false",
    "core.attributesFile=/dev/null",
    "core.excludesFile=/dev/null",
    "core.sshCommand=false",
    "core.askPass=false",
    "diff.external=",
    "diff.orderFile=/dev/null",
    "diff.ignoreSubmodules=all",
    "log.showSignature=false",
    "log.mailmap=false",
    "mailmap.file=/dev/null",
    "gpg.program=false",
    "gpg.openpgp.program=false",
    "gpg.x509.program=false",
    "gpg.ssh.program=false",
    "submodule.recurse=false",
    "protocol.allow=never",
    "credential.helper=",
    "gc.auto=0",
)
"""``-c`` settings on every git command (defence in depth: no repository config is read)."""
HEAD_LIMIT = 4096
CONFIG_LIMIT = 1_000_000
STDERR_LIMIT = 65_536


class GitError(Exception):
    """Raised when git cannot run, times out, or reports an error; the message says which."""


@dataclass(frozen=True, slots=True)
class GitOutput:
    """What git printed, cut at the cap."""

    text: str
    truncated: bool


@dataclass(frozen=True, slots=True)
class Repo:
    """A repository found by :func:`resolve_repo` (every path absolute and resolved)."""

    path: Path
    """The folder asked for."""
    git_dir: Path
    """The repository's own git folder (per-worktree one for a linked worktree)."""
    common_dir: Path
    """Where objects and refs live (the main git folder for a linked worktree)."""
    work_tree: Path | None
    """The working tree (the folder holding ``.git``); None for a bare repository."""


def resolve_repo(path: str, base: Path, allowed_roots: list[Path] | None) -> Repo:
    """Find the repository at or above ``path``, all of it inside ``allowed_roots`` when set."""
    if "\x00" in path or not path.strip():
        raise GitError("repoPath must be a non-empty path")
    folder = Path(os.path.realpath(base / path))
    _check_inside(folder, allowed_roots, path)
    if not folder.is_dir():
        raise GitError(f"no such folder: {path}")
    for candidate in (folder, *folder.parents):
        if allowed_roots is not None and not _inside(candidate, allowed_roots):
            break
        dot_git = candidate / ".git"
        if os.path.lexists(dot_git):
            git_dir = _git_dir_of(dot_git, path)
            work_tree: Path | None = candidate
        elif _looks_like_git_dir(candidate):
            git_dir, work_tree = candidate, None
        else:
            continue
        common = git_dir
        commondir = git_dir / "commondir"
        if commondir.is_file():
            pointer = _read_small(commondir, HEAD_LIMIT).strip()
            common = Path(os.path.realpath(git_dir / pointer))
        for part, shown in ((git_dir, "its git folder"), (common, "its common git folder")):
            _check_inside(part, allowed_roots, f"{path} ({shown}, {part})")
        objects = Path(os.path.realpath(common / "objects"))
        _check_inside(objects, allowed_roots, f"{path} (its objects, {objects})")
        for line in _alternates(objects):
            _check_inside(line, allowed_roots, f"{path} (alternate objects at {line})")
        if not (git_dir / "HEAD").exists() or not objects.is_dir():
            raise GitError(f"not a git repository: {path} (its git folder has no HEAD or objects)")
        return Repo(folder, git_dir, common, work_tree)
    raise GitError(f"not a git repository (or any of the parent folders): {path}")


async def run_git(
    repo: Repo | Path, *args: str, seconds: float = 10, max_bytes: int = 1_000_000
) -> GitOutput:
    """Run ``git <args>`` on ``repo`` safely (see the module docstring); raise GitError."""
    if not isinstance(repo, Repo):
        repo = resolve_repo(str(repo), Path.cwd(), None)
    try:
        with anyio.fail_after(seconds), _shadow(repo) as environment:
            return await _stream(repo, args, environment, max_bytes)
    except TimeoutError:
        raise GitError(f"git took longer than {seconds:g} seconds and was stopped") from None


async def _stream(
    repo: Repo, args: tuple[str, ...], environment: dict[str, str], max_bytes: int
) -> GitOutput:
    command = ["git", "--no-pager", "--no-optional-locks"]
    for setting in SAFE_CONFIG:
        command += ["-c", setting]
    command += list(args)
    cwd = repo.work_tree or repo.git_dir
    try:
        process = await anyio.open_process(
            command, env=environment, cwd=cwd, stdin=None, start_new_session=True
        )
    except FileNotFoundError:
        raise GitError("git is not installed on this machine") from None
    out = bytearray()
    err = bytearray()
    truncated = False
    assert process.stdout is not None
    assert process.stderr is not None
    stdout, stderr = process.stdout, process.stderr
    try:

        async def read_errors() -> None:
            async for chunk in stderr:
                if len(err) < STDERR_LIMIT:
                    err.extend(chunk[: STDERR_LIMIT - len(err)])

        async with anyio.create_task_group() as group:
            group.start_soon(read_errors)
            async for chunk in stdout:
                out.extend(chunk[: max_bytes + 1 - len(out)])
                if len(out) > max_bytes:
                    truncated = True
                    process.kill()  # enough: git is stopped, not read to the end
                    break
        code = await process.wait()
    finally:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        with anyio.CancelScope(shield=True):
            await process.aclose()
    if code != 0 and not truncated:
        lines = err.decode("utf-8", "replace").strip().splitlines()
        raise GitError(lines[0].removeprefix("fatal: ") if lines else f"git exited {code}")
    if truncated:
        del out[max_bytes:]
    # A cut may fall inside a character: the incremental decoder leaves its start out.
    text = codecs.getincrementaldecoder("utf-8")("replace").decode(bytes(out), final=not truncated)
    return GitOutput(text, truncated)


@contextlib.contextmanager
def _shadow(repo: Repo) -> Iterator[dict[str, str]]:
    """A git folder of our own for ``repo``, and the environment that points git at it."""
    folder = Path(tempfile.mkdtemp(prefix="harness-git-"))
    try:
        head = _read_small(repo.git_dir / "HEAD", HEAD_LIMIT)
        if "\x00" in head or not head.strip():
            raise GitError(f"not a git repository: {repo.path} (its HEAD is not readable)")
        (folder / "HEAD").write_text(head)
        (folder / "config").write_text(
            _minimal_config(repo.common_dir / "config", bare=repo.work_tree is None)
        )
        (folder / "objects").mkdir()
        for name in ("refs", "packed-refs", "shallow"):
            target = repo.common_dir / name
            if os.path.lexists(target):
                (folder / name).symlink_to(target)
        if not (folder / "refs").exists():
            (folder / "refs").mkdir()
        logs = repo.git_dir / "logs"
        if logs.is_dir():
            (folder / "logs").symlink_to(logs)
        environment = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(folder),
            "LANG": "C.UTF-8",
            "GIT_DIR": str(folder),
            "GIT_INDEX_FILE": str(repo.git_dir / "index"),
            "GIT_OBJECT_DIRECTORY": os.path.realpath(repo.common_dir / "objects"),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null",
            "GIT_ATTR_NOSYSTEM": "1",
            "GIT_PAGER": "cat",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_OPTIONAL_LOCKS": "0",
            "GIT_NO_REPLACE_OBJECTS": "1",
            "GIT_PROTOCOL_FROM_USER": "0",
        }
        if repo.work_tree is not None:
            environment["GIT_WORK_TREE"] = str(repo.work_tree)
        yield environment
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _minimal_config(real: Path, bare: bool) -> str:
    """Only what git needs to read the objects: the format version and the hash."""
    version, object_format = 0, ""
    section = ""
    with contextlib.suppress(OSError, GitError):
        for raw in _read_small(real, CONFIG_LIMIT).splitlines():
            line = raw.strip()
            if line.startswith("["):
                section = line.strip("[]").strip().lower()
                continue
            key, _, value = line.partition("=")
            key, value = key.strip().lower(), value.split("#")[0].split(";")[0].strip(' \t"')
            if section == "core" and key == "repositoryformatversion" and value.isdigit():
                version = int(value)
            elif section == "extensions" and key == "objectformat" and value.isalnum():
                object_format = value.lower()
    modern = bool(object_format) and version >= 1
    text = f"[core]\n\trepositoryformatversion = {int(modern)}\n\tbare = {str(bare).lower()}\n"
    if modern:
        text += f"[extensions]\n\tobjectformat = {object_format}\n"
    return text


def _git_dir_of(dot_git: Path, shown: str) -> Path:
    info = os.lstat(dot_git)
    if stat.S_ISDIR(info.st_mode):
        return dot_git.resolve()
    if stat.S_ISLNK(info.st_mode):
        return Path(os.path.realpath(dot_git))
    if not stat.S_ISREG(info.st_mode):
        raise GitError(f"{shown}: its .git is neither a folder nor a file")
    text = _read_small(dot_git, HEAD_LIMIT).strip()
    if not text.startswith("gitdir:"):
        raise GitError(f"{shown}: its .git file does not say 'gitdir: <path>'")
    target = text.removeprefix("gitdir:").strip()
    return Path(os.path.realpath(dot_git.parent / target))


def _looks_like_git_dir(folder: Path) -> bool:
    return (
        (folder / "HEAD").is_file() and (folder / "objects").is_dir() and (folder / "refs").is_dir()
    )


def _alternates(objects: Path) -> list[Path]:
    file = objects / "info" / "alternates"
    if not file.is_file():
        return []
    lines = _read_small(file, CONFIG_LIMIT).splitlines()
    return [
        Path(os.path.realpath(objects / line.strip()))
        for line in lines
        if line.strip() and not line.startswith("#")
    ]


def _read_small(file: Path, limit: int) -> str:
    """A small regular file's text; FIFOs, devices and big files are refused."""
    try:
        fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as exc:
        raise GitError(f"cannot read {file}: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            raise GitError(f"{file} is not a small regular file; refusing the repository")
        return os.read(fd, limit).decode("utf-8", "replace")
    finally:
        os.close(fd)


def _inside(path: Path, roots: list[Path]) -> bool:
    return any(path == root or path.is_relative_to(root) for root in roots)


def _check_inside(path: Path, roots: list[Path] | None, shown: str) -> None:
    if roots is not None and not _inside(path, roots):
        raise GitError(f"{shown} is outside the allowed roots ({', '.join(map(str, roots))})")


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
