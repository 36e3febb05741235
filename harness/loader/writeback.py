"""``harness enable`` / ``harness disable``: flip an entry in the file, keeping its layout.

The edit is made on the text itself, at the positions the YAML parser reports: only the
switch's value changes (or one ``enabled: false`` is added after ``name``, inside a flow
mapping when the entry is written as one, and taken out again by ``enable``, so a round trip
gives back the original text), so comments, order, quoting and indentation stay exactly as
they were. The file is replaced atomically: written to a temporary file in the
same folder, then renamed over the original, keeping its permissions.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import yaml

from ..errors import ConfigError
from .env import parse_switch


class UnknownEntry(ConfigError):
    """Raised when enable/disable names an id the config does not have."""


def set_enabled(file: Path, entry_id: str, enabled: bool) -> bool:
    """Set ``entry_id``'s switch in ``file``; return False when it already was so."""
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {file}") from None
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
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
            return False
        text = _replace(text, node, "false" if enabled else "true")
    elif "enabled" in keys:
        node = keys["enabled"][1]
        if _reads_on(node) == enabled:
            return False
        restored = _remove_switch(text, entry, keys) if enabled else None
        text = (
            restored
            if restored is not None
            else _replace(text, node, "true" if enabled else "false")
        )
    elif enabled:
        return False
    else:
        text = _insert_switch(text, entry, keys)
    write_atomically(file, text)
    return True


def write_atomically(file: Path, text: str) -> None:
    """Replace ``file``'s content in one rename; raise ConfigError when it is not writable."""
    folder = file.parent
    mode = file.stat().st_mode & 0o7777
    # A file nobody may write is read-only on purpose, even for root (who could write it).
    if not os.access(file, os.W_OK) or not mode & 0o222:
        raise ConfigError(f"{file} is read-only: cannot change it (check its permissions)")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ConfigError(
            f"cannot write {file}: its folder {folder} is not writable (an atomic replace "
            "needs a temporary file beside it)"
        )
    handle, temporary = tempfile.mkstemp(prefix=f".{file.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, file)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


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
    added = " " * after_key.start_mark.column + "enabled: false\n"
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
    line_end = text.find("\n", after_value.end_mark.index)
    if line_end == -1:
        return text + f"\n{indent}enabled: false\n"
    return text[: line_end + 1] + f"{indent}enabled: false\n" + text[line_end + 1 :]
