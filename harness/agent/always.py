"""``allow_always``: write ``TOOL: allow`` into a policy entry's ``rules`` in cordis.yml.

The edit is made on the text at the positions the YAML parser reports, like ``harness
enable``: an existing rule for the tool has its value replaced; otherwise one ``TOOL: allow``
is added to ``rules`` (or ``rules: {TOOL: allow}`` to ``config``, or ``config: {rules: ...}``
to the entry), in the style the mapping is written in. Comments and layout stay as they
were; the result is re-read and checked before the file is replaced atomically.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from ..errors import ConfigError
from ..loader.writeback import write_atomically

_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
_RESERVED = {"true", "false", "yes", "no", "on", "off", "null", "y", "n", "~"}


def allow_tool(file: Path, entry_id: str, tool: str) -> None:
    """Make the policy entry ``entry_id`` in ``file`` allow ``tool``; raise ConfigError."""
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(
            f"cannot save 'always allow {tool}': {file} does not exist (set the agent's "
            "config_file to the cordis.yml that holds the policy)"
        ) from None
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{file}: cannot edit a file that is not valid YAML: {exc}") from None
    entry = _find(root, entry_id)
    if entry is None:
        raise ConfigError(
            f"{file}: no entry has id {entry_id!r}, so 'always allow {tool}' has no policy to "
            "go in (set the agent's `policy` to the id of the policy entry)"
        )
    key = tool if _PLAIN.fullmatch(tool) and tool.lower() not in _RESERVED else json.dumps(tool)
    node: yaml.MappingNode = entry
    # down entry → config → rules; a level that is missing (or null) is written whole
    for level, whole in (
        ("config", f"{{rules: {{{key}: allow}}}}"),
        ("rules", f"{{{key}: allow}}"),
    ):
        inner = _value(node, level)
        if inner is None or _is_null(inner):
            text = _insert(text, node, level, whole, replace=inner)
            break
        if not isinstance(inner, yaml.MappingNode):
            raise ConfigError(f"{file}: entry {entry_id!r} has a `{level}` that is not a mapping")
        node = inner
    else:  # the rules exist: the tool's rule is replaced, or added
        current = _value(node, tool)
        if current is not None:
            at, end = current.start_mark.index, current.end_mark.index
            text = text[:at] + "allow" + text[end:]
        else:
            text = _insert(text, node, key, "allow")
    _verify(text, file, entry_id, tool)
    write_atomically(file, text)


def _find(node: yaml.Node | None, entry_id: str) -> yaml.MappingNode | None:
    items = _value(node, "insert") if isinstance(node, yaml.MappingNode) else node
    if not isinstance(items, yaml.SequenceNode):
        return None
    for item in items.value:
        if not isinstance(item, yaml.MappingNode):
            continue
        found_id = _value(item, "id")
        if isinstance(found_id, yaml.ScalarNode) and found_id.value == entry_id:
            return item
        found = _find(item, entry_id)
        if found is not None:
            return found
    return None


def _value(node: yaml.Node | None, key: str) -> yaml.Node | None:
    if not isinstance(node, yaml.MappingNode):
        return None
    for key_node, value in node.value:
        if isinstance(key_node, yaml.ScalarNode) and key_node.value == key:
            found: yaml.Node = value
            return found
    return None


def _is_null(node: yaml.Node) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.tag.endswith(":null")


def _insert(
    text: str, mapping: yaml.MappingNode, key: str, value: str, replace: yaml.Node | None = None
) -> str:
    """Add ``key: value`` to ``mapping`` (or put ``value`` in place of a null ``replace``)."""
    if replace is not None:
        at, end = replace.start_mark.index, replace.end_mark.index
        return (
            text[:at] + (" " if at == end and text[at - 1 : at] == ":" else "") + value + text[end:]
        )
    if mapping.flow_style:
        if not mapping.value:
            close = text.rindex("}", mapping.start_mark.index, mapping.end_mark.index)
            return text[:close] + f"{key}: {value}" + text[close:]
        at = mapping.value[-1][1].end_mark.index
        return text[:at] + f", {key}: {value}" + text[at:]
    indent = " " * mapping.value[0][0].start_mark.column
    at = mapping.value[-1][1].end_mark.index
    if at and text[at - 1] == "\n":
        line_start = at
    else:
        line_end = text.find("\n", at)
        if line_end == -1:
            return text + f"\n{indent}{key}: {value}\n"
        line_start = line_end + 1
    return text[:line_start] + f"{indent}{key}: {value}\n" + text[line_start:]


def _verify(text: str, file: Path, entry_id: str, tool: str) -> None:
    try:
        data: Any = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(
            f"{file}: adding the rule for {tool} would break the file: {exc}"
        ) from None
    entry = _find_data(data, entry_id)
    rules = ((entry or {}).get("config") or {}).get("rules") or {}
    if not isinstance(rules, dict) or rules.get(tool) != "allow":
        raise ConfigError(
            f"{file}: could not add '{tool}: allow' to the rules of {entry_id!r} safely; "
            "add it by hand"
        )


def _find_data(node: Any, entry_id: str) -> dict[str, Any] | None:
    items = node.get("insert") if isinstance(node, dict) else node
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict):
            if item.get("id") == entry_id:
                return item
            found = _find_data(item, entry_id)
            if found is not None:
                return found
    return None
