"""A folder that file tools are confined to, safe against the usual escapes.

Every operation checks the path first (no NUL bytes, no ``..``, no absolute path outside the
root, no symlink — of the file or any parent — resolving outside), then opens it one
component at a time from the root with ``O_NOFOLLOW``, so a symlink swapped in after the
check makes the open fail instead of escaping. Only regular files are read or replaced, and
no path inside a ``.git`` folder (at any depth) is written, so a write cannot arm a
repository (hooks, config). Reads go through bounded chunks: memory follows ``max_bytes``,
not the file. Failures raise :class:`WorkspaceError` with a message a model can act on;
tools turn it into ``{"ok": false, "error": ...}``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pydantic

from .lines import NotText, read_lines

MAX_DEPTH = 64
"""Folders deeper than this below the searched one are not searched."""
_OPEN_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY
_OPEN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW


class WorkspaceError(Exception):
    """Raised when a path is refused or a file cannot be used; the message says why."""


@dataclass(frozen=True, slots=True)
class TextSlice:
    """Lines read from a text file."""

    content: str
    total_lines: int
    truncated: bool


class Workspace:
    """The root folder; relative paths are inside it."""

    def __init__(self, root: Path, max_bytes: int = 1_000_000) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.root = root.resolve(strict=True)
        self.max_bytes = max_bytes

    # -- checking --------------------------------------------------------------------------

    def relative(self, path: str) -> tuple[str, ...]:
        """The path's components inside the root (symlinks resolved); raise when outside."""
        if "\x00" in path:
            raise WorkspaceError("the path contains a NUL byte")
        if not path or not path.strip():
            raise WorkspaceError("the path is empty; give a path relative to the workspace")
        parts = Path(path).parts
        if ".." in parts:
            raise WorkspaceError(f"'..' is not allowed in paths: {path}")
        candidate = Path(path) if Path(path).is_absolute() else self.root / path
        real = Path(os.path.realpath(candidate))
        try:
            inside = real.relative_to(self.root)
        except ValueError:
            shown = "is outside" if candidate == real else "resolves (through a symlink) outside"
            raise WorkspaceError(f"{path} {shown} the workspace; use a path inside it") from None
        return inside.parts

    # -- reading ---------------------------------------------------------------------------

    def read_text(self, path: str, offset: int = 1, limit: int | None = None) -> TextSlice:
        """Read a UTF-8 file, whole or ``limit`` lines from line ``offset`` (1-based)."""
        if offset < 1:
            raise WorkspaceError("offset counts lines from 1")
        with self._open_regular(path) as fd:
            size = os.fstat(fd).st_size
            ranged = limit is not None or offset > 1
            if size > self.max_bytes and not ranged:
                raise WorkspaceError(
                    f"{path} is {size} bytes, over the {self.max_bytes}-byte limit; read it "
                    "in parts with offset and limit (lines)"
                )
            try:
                lines = read_lines(fd, offset, limit, self.max_bytes)
            except NotText:
                raise WorkspaceError(
                    f"{path} is binary (not UTF-8 text); this tool only reads text files"
                ) from None
            return TextSlice(lines.data.decode("utf-8"), lines.total, lines.truncated)

    def list_dir(self, path: str, max_entries: int) -> tuple[list[dict[str, object]], bool]:
        """Entries of a folder: name, type (file, dir, symlink, other) and size."""
        parts = self.relative(path or ".")
        with self._walk(parts) as fd:
            entries = []
            names = sorted(os.listdir(fd))
            for name in names[:max_entries]:
                info = os.stat(name, dir_fd=fd, follow_symlinks=False)
                kind = (
                    "dir"
                    if stat.S_ISDIR(info.st_mode)
                    else "file"
                    if stat.S_ISREG(info.st_mode)
                    else "symlink"
                    if stat.S_ISLNK(info.st_mode)
                    else "other"
                )
                entries.append({"name": shown(name), "type": kind, "size": info.st_size})
            return entries, len(names) > max_entries

    def read_files(self, path: str) -> Iterator[tuple[str, bytes]]:
        """The content of every regular file at or under ``path``, in name order.

        Each folder and file is opened from its parent's descriptor with ``O_NOFOLLOW``, so
        a symlink swapped in after the check is skipped, never followed; FIFOs, devices and
        sockets are skipped without blocking; files over ``max_bytes`` are skipped, read no
        further than that even if they grow. Names are workspace paths.
        """
        parts = self.relative(path or ".")
        if not parts:
            with self._walk(()) as root:
                yield from self._files_in(root, "", 0)
            return
        with self._walk(parts[:-1]) as folder:
            name = parts[-1]
            try:
                fd = os.open(name, _OPEN_FILE, dir_fd=folder)
            except FileNotFoundError:
                raise WorkspaceError(f"no such file or folder in the workspace: {path}") from None
            except OSError as exc:
                raise WorkspaceError(_why(exc, path)) from None
            try:
                mode = os.fstat(fd).st_mode
                prefix = "/".join(parts)
                if stat.S_ISDIR(mode):
                    yield from self._files_in(fd, prefix + "/", 0)
                elif stat.S_ISREG(mode):
                    data = self._capped(fd)
                    if data is not None:
                        yield prefix, data
            finally:
                os.close(fd)

    def _files_in(self, folder: int, prefix: str, depth: int) -> Iterator[tuple[str, bytes]]:
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            return
        for name in names:
            try:
                fd = os.open(name, _OPEN_FILE, dir_fd=folder)
            except OSError:  # gone, a symlink (ELOOP), or not readable: skip it
                continue
            try:
                mode = os.fstat(fd).st_mode
                if stat.S_ISDIR(mode):
                    if depth < MAX_DEPTH:
                        yield from self._files_in(fd, f"{prefix}{shown(name)}/", depth + 1)
                elif stat.S_ISREG(mode):
                    data = self._capped(fd)
                    if data is not None:
                        yield prefix + shown(name), data
            finally:
                os.close(fd)

    def _capped(self, fd: int) -> bytes | None:
        """The file's bytes, or None when it has more than ``max_bytes``."""
        if os.fstat(fd).st_size > self.max_bytes:
            return None
        chunks = bytearray()
        while len(chunks) <= self.max_bytes:
            chunk = os.read(fd, min(1 << 16, self.max_bytes + 1 - len(chunks)))
            if not chunk:
                return bytes(chunks)
            chunks += chunk
        return None

    # -- writing ---------------------------------------------------------------------------

    def write_text(self, path: str, content: str) -> int:
        """Replace (or create) a file atomically; parent folders are created inside the root."""
        data = content.encode("utf-8")
        if len(data) > self.max_bytes:
            raise WorkspaceError(
                f"the content is {len(data)} bytes, over the {self.max_bytes}-byte limit"
            )
        parts = self.relative(path)
        if not parts:
            raise WorkspaceError("the path names the workspace itself; name a file inside it")
        if any(part.lower() == ".git" for part in parts):
            raise WorkspaceError(
                f"{path} is inside a .git folder (or is one); writing there could change what "
                "git runs, so it is refused"
            )
        with self._walk(parts[:-1], create=True) as fd:
            name = parts[-1]
            try:
                info = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                info = None
            if info is not None and not stat.S_ISREG(info.st_mode):
                raise WorkspaceError(
                    f"{path} exists and is not a regular file; refusing to replace it"
                )
            temporary, out = _temporary(fd, name)
            try:
                with os.fdopen(out, "wb") as handle:
                    if info is not None:  # keep the file's owner and permission bits
                        with contextlib.suppress(OSError):  # (chown first: it clears setuid)
                            os.fchown(handle.fileno(), info.st_uid, info.st_gid)
                        os.fchmod(handle.fileno(), stat.S_IMODE(info.st_mode))
                    handle.write(data)
                    handle.flush()
                    os.fsync(handle.fileno())
                os.rename(temporary, name, src_dir_fd=fd, dst_dir_fd=fd)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temporary, dir_fd=fd)
                raise
        return len(data)

    # -- opening ---------------------------------------------------------------------------

    @contextmanager
    def _walk(self, parts: tuple[str, ...], create: bool = False) -> Iterator[int]:
        """A descriptor of the folder ``parts``, reached without following any symlink."""
        fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY)
        try:
            for part in parts:
                try:
                    child = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise WorkspaceError(f"no such folder in the workspace: {part}") from None
                    os.mkdir(part, 0o755, dir_fd=fd)
                    child = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                except OSError as exc:
                    raise WorkspaceError(_why(exc, part)) from None
                os.close(fd)
                fd = child
            yield fd
        finally:
            os.close(fd)

    @contextmanager
    def _open_regular(self, path: str) -> Iterator[int]:
        parts = self.relative(path)
        if not parts:
            raise WorkspaceError(f"{path} is the workspace folder; use list_dir for folders")
        with self._walk(parts[:-1]) as folder:
            try:
                fd = os.open(
                    parts[-1],
                    os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY,
                    dir_fd=folder,
                )
            except FileNotFoundError:
                raise WorkspaceError(f"no such file in the workspace: {path}") from None
            except OSError as exc:
                raise WorkspaceError(_why(exc, path)) from None
            try:
                mode = os.fstat(fd).st_mode
                if stat.S_ISDIR(mode):
                    raise WorkspaceError(f"{path} is a folder; use list_dir to see what is in it")
                if not stat.S_ISREG(mode):
                    raise WorkspaceError(f"{path} is not a regular file (a device, FIFO or socket)")
                yield fd
            finally:
                os.close(fd)


def _temporary(folder: int, name: str) -> tuple[str, int]:
    """A new, unpredictable temporary file beside ``name``: its name and descriptor."""
    for _ in range(16):
        temporary = f".{name[:200]}.{secrets.token_hex(8)}.tmp"
        try:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
            return temporary, os.open(temporary, flags, 0o644, dir_fd=folder)
        except FileExistsError:
            continue
        except OSError as exc:
            raise WorkspaceError(f"cannot write beside {name}: {exc.strerror}") from None
    raise WorkspaceError(f"cannot create a temporary file beside {name}; try again")


def shown(name: str) -> str:
    """A file name as text: bytes that are not UTF-8 are shown as ``\\xNN`` escapes."""
    if name.isascii():
        return name
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _why(error: OSError, path: str) -> str:
    if error.errno == errno.ELOOP:
        return f"{path} is a symlink that changed while opening; refusing to follow it"
    if error.errno == errno.ENOTDIR:
        return f"a part of {path} is not a folder"
    if error.errno == errno.EACCES:
        return f"permission denied: {path}"
    return f"cannot open {path}: {error.strerror}"


class WorkspaceConfig(pydantic.BaseModel):
    """Config of the bundled file tools."""

    model_config = pydantic.ConfigDict(extra="forbid")

    root: str = "./workspace"
    """The workspace folder, relative to cordis.yml's folder; created if missing."""
    max_bytes: int = pydantic.Field(1_000_000, gt=0)
    """The largest file read whole (and the most content returned or written at once)."""
