"""``harness enable`` / ``harness disable``: flip an entry in the file, keeping its layout.

The edit is made on the text itself, at the positions the YAML parser reports: only the
switch's value changes (or one ``enabled: false`` is added after ``name``, inside a flow
mapping when the entry is written as one, and taken out again by ``enable``, so a round trip
gives back the original text), so comments, order, quoting, indentation and line endings
(CRLF stays CRLF) stay exactly as they were. A symlinked config is edited at its target (the
link stays). The file is replaced atomically: written to a temporary file in the same
folder, then renamed over the original, keeping its permissions — but only if it still
holds what the edit was made on: when an editor saved in between, the edit is made again on
the new content (a few times), or refused. Temporary files are removed on failure and on
SIGTERM; one left by a killed process (its pid in the name) is removed by the next write.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import yaml

from ..errors import ConfigError
from .config_problems import missing_config
from .env import parse_switch


class UnknownEntry(ConfigError):
    """Raised when enable/disable names an id the config does not have."""


class Conflict(ConfigError):
    """Raised when the file changed between reading it and replacing it."""


ATTEMPTS = 5


def set_enabled(file: Path, entry_id: str, enabled: bool) -> bool:
    """Set ``entry_id``'s switch in ``file``; return False when it already was so."""
    target = Path(os.path.realpath(file))  # a symlinked config: edit the file it points to
    for _ in range(ATTEMPTS):
        text = _read(target, file)
        edited = _edit(file, text, entry_id, enabled)
        if edited is None:
            return False
        try:
            write_atomically(file, edited, expected=text)
        except Conflict:
            continue  # saved by someone else meanwhile: edit their version
        return True
    raise ConfigError(
        f"{file} kept changing while it was being edited ({ATTEMPTS} tries); nothing was "
        "changed — try again when it is saved"
    )


def _read(file: Path, shown: Path | None = None) -> str:
    shown = shown or file
    try:
        return file.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {shown}; {missing_config(file)}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{shown}: cannot edit a file that is not UTF-8 ({exc})") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {shown}: {exc.strerror}") from None


def _edit(file: Path, text: str, entry_id: str, enabled: bool) -> str | None:
    """The edited text, or None when the switch already reads so."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except (yaml.YAMLError, RecursionError) as exc:
        raise ConfigError(f"{file}: cannot edit a file that is not valid YAML: {exc}") from None
    entry = _find(root, entry_id)
    if entry is None:
        raise UnknownEntry(f"{file}: no entry has id {entry_id!r}")
    keys: dict[str, tuple[yaml.Node, yaml.Node]] = {
        str(key.value): (key, value)
        for key, value in entry.value
        if isinstance(key, yaml.ScalarNode)
    }
    if "disabled" in keys:
        node = keys["disabled"][1]
        if _reads_on(node, negate=True) == enabled:
            return None
        return _replace(text, node, "false" if enabled else "true")
    if "enabled" in keys:
        node = keys["enabled"][1]
        if _reads_on(node) == enabled:
            return None
        restored = _remove_switch(text, entry, keys) if enabled else None
        if restored is not None:
            return restored
        return _replace(text, node, "true" if enabled else "false")
    if enabled:
        return None
    return _insert_switch(text, entry, keys)


def write_atomically(file: Path, text: str, expected: str | None = None) -> None:
    """Replace ``file``'s content in one rename; raise ConfigError when it is not writable.

    With ``expected``, the file must still hold exactly that text just before the rename,
    else :class:`Conflict` is raised and nothing changes.
    """
    shown, file = file, Path(os.path.realpath(file))
    folder = file.parent
    info = file.stat()
    mode = info.st_mode & 0o7777
    # A file nobody may write is read-only on purpose, even for root (who could write it).
    if not os.access(file, os.W_OK) or not mode & 0o222:
        raise ConfigError(f"{shown} is read-only: cannot change it (check its permissions)")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ConfigError(
            f"cannot write {shown}: its folder {folder} is not writable (an atomic replace "
            "needs a temporary file beside it)"
        )
    _remove_stale(folder, file.name)
    temporary = folder / f".{file.name}.{os.getpid()}.{secrets.token_hex(6)}.tmp"
    with _cleaned_up_on_sigterm():
        try:
            handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
            with os.fdopen(handle, "wb") as out:
                with contextlib.suppress(OSError):  # keep the owner (chown first: setuid)
                    os.fchown(out.fileno(), info.st_uid, info.st_gid)
                os.fchmod(out.fileno(), mode)
                out.write(text.encode("utf-8"))
                out.flush()
                os.fsync(out.fileno())
            if expected is not None and _read(file, shown) != expected:
                raise Conflict(f"{shown} changed while it was being edited")
            os.replace(temporary, file)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise


@contextlib.contextmanager
def _cleaned_up_on_sigterm() -> Iterator[None]:
    """SIGTERM during the write raises (so the temporary file is removed), then exits."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    try:
        previous = signal.signal(signal.SIGTERM, stop)
    except ValueError:  # not the main interpreter
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _remove_stale(folder: Path, name: str) -> None:
    """Remove temporary files of ``name`` left by processes that no longer exist."""
    pattern = re.compile(rf"\.{re.escape(name)}\.(\d+)\.[0-9a-f]{{12}}\.tmp")
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            found = pattern.fullmatch(entry.name)
            if found and not _alive(int(found.group(1))):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _find(node: yaml.Node | None, entry_id: str) -> yaml.MappingNode | None:
    if isinstance(node, yaml.MappingNode):
        items = next(
            (value for key, value in node.value if getattr(key, "value", None) == "insert"), None
        )
    else:
        items = node
    if not isinstance(items, yaml.SequenceNode):
        return None
    for item in items.value:
        if not isinstance(item, yaml.MappingNode):
            continue
        pairs = {getattr(key, "value", None): value for key, value in item.value}
        if getattr(pairs.get("id"), "value", None) == entry_id:
            return item
        if "insert" in pairs:
            found = _find(item, entry_id)
            if found is not None:
                return found
    return None


def _reads_on(node: yaml.Node, negate: bool = False) -> bool:
    value = yaml.safe_load(yaml.serialize(node)) if isinstance(node, yaml.ScalarNode) else True
    try:
        on = parse_switch(value)
    except ValueError:
        on = True
    return not on if negate else on


def _replace(text: str, node: yaml.Node, value: str) -> str:
    return text[: node.start_mark.index] + value + text[node.end_mark.index :]


def _remove_switch(
    text: str, entry: yaml.MappingNode, keys: dict[str, tuple[yaml.Node, yaml.Node]]
) -> str | None:
    """The text without the ``enabled: false`` that :func:`_insert_switch` would have added,
    when it is exactly there (so a disable/enable round trip gives back the original text);
    None otherwise."""
    after_key, after_value = keys.get("name") or keys["id"]
    at = after_value.end_mark.index
    if entry.flow_style:
        added = ", enabled: false"
        return text[:at] + text[at + len(added) :] if text[at:].startswith(added) else None
    line_end = text.find("\n", at)
    if line_end == -1:
        return None
    newline = "\r\n" if "\r\n" in text else "\n"
    added = " " * after_key.start_mark.column + "enabled: false" + newline
    if text[line_end + 1 :].startswith(added):
        return text[: line_end + 1] + text[line_end + 1 + len(added) :]
    return None


def _insert_switch(
    text: str, entry: yaml.MappingNode, keys: dict[str, tuple[yaml.Node, yaml.Node]]
) -> str:
    after_key, after_value = keys.get("name") or keys["id"]
    if entry.flow_style:
        at = after_value.end_mark.index
        return text[:at] + ", enabled: false" + text[at:]
    indent = " " * after_key.start_mark.column
    newline = "\r\n" if "\r\n" in text else "\n"
    line_end = text.find("\n", after_value.end_mark.index)
    if line_end == -1:
        return text + f"{newline}{indent}enabled: false{newline}"
    return text[: line_end + 1] + f"{indent}enabled: false{newline}" + text[line_end + 1 :]
