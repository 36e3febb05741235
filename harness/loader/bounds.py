"""The bounds on what a config file may hold, enforced on the text and on YAML's events.

A config is read before anything else runs and may be hostile: characters YAML forbids,
invalid UTF-8, nesting thousands of levels deep, or aliases that expand into billions of
values (an alias bomb). Each such value becomes a *refused* scalar (tag
:data:`REFUSED_TAG`) at its own line, so the loader reports it as a located problem and
the rest of the file loads:

- :func:`clean` replaces forbidden characters and cuts flow collections (``[[[...]]]``)
  nested past :data:`MAX_DEPTH` out of the text, before any parser sees it;
- :func:`bounded` filters a parser's event stream: collections opened past
  :data:`MAX_DEPTH` and aliases that would take the expanded size past :data:`MAX_NODES`
  are replaced by refused scalars;
- :func:`within_bounds` tells whether a stream needs no such replacement — then a
  composer that does not read the filtered stream (libyaml's) can be used safely.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

import yaml

MAX_DEPTH = 64
"""Deepest nesting of mappings and sequences in a config file."""
MAX_NODES = 200_000
"""Most nodes a config file may hold once its aliases are expanded."""
REFUSED_TAG = "tag:harness,2026:refused"
"""The tag of a scalar standing for a value that was not loaded; its value says why."""

_NON_PRINTABLE = re.compile(
    "[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
)
_FLOW_SIGNS = re.compile(r"""['"#\[\]{}]""")


def _refused_event(event: yaml.Event, message: str) -> yaml.ScalarEvent:
    return yaml.ScalarEvent(
        None, REFUSED_TAG, (False, False), message, event.start_mark, event.end_mark
    )


def bounded(events: Iterable[yaml.Event]) -> Iterator[yaml.Event]:
    """``events``, with too-deep nodes and over-budget aliases made refused scalars."""
    events = iter(events)
    sizes: dict[str, int] = {}
    open_nodes: list[tuple[str | None, int]] = []  # (anchor, expanded size so far)
    total = 0
    for event in events:
        if isinstance(event, yaml.CollectionStartEvent):
            if len(open_nodes) >= MAX_DEPTH:
                depth = 1
                for inner in events:  # drop the whole too-deep node
                    if isinstance(inner, yaml.CollectionStartEvent):
                        depth += 1
                    elif isinstance(inner, yaml.CollectionEndEvent):
                        depth -= 1
                        if depth == 0:
                            break
                total += 1
                yield _refused_event(
                    event, f"nested deeper than {MAX_DEPTH} levels; flatten this value"
                )
                continue
            open_nodes.append((event.anchor, 1))
            total += 1
        elif isinstance(event, yaml.CollectionEndEvent):
            anchor, size = open_nodes.pop()
            if anchor is not None:
                sizes[anchor] = size
            if open_nodes:
                parent_anchor, parent_size = open_nodes[-1]
                open_nodes[-1] = (parent_anchor, parent_size + size)
        elif isinstance(event, yaml.AliasEvent | yaml.ScalarEvent):
            aliased = isinstance(event, yaml.AliasEvent) and event.anchor is not None
            size = sizes.get(event.anchor or "", 1) if aliased else 1
            if total + size > MAX_NODES:
                event = _refused_event(
                    event,
                    f"aliases here would expand the file past {MAX_NODES} values (an alias "
                    "bomb?); write the values out or use fewer aliases",
                )
                size = 1
            elif isinstance(event, yaml.ScalarEvent) and event.anchor is not None:
                sizes[event.anchor] = 1
            total += size
            if open_nodes:
                anchor, so_far = open_nodes[-1]
                open_nodes[-1] = (anchor, so_far + size)
        yield event


def within_bounds(events: Iterable[yaml.Event]) -> bool:
    """True when :func:`bounded` would pass every one of ``events`` through unchanged.

    Stops at the first event it would replace. Parser errors propagate.
    """
    last: list[yaml.Event] = []

    def watched() -> Iterator[yaml.Event]:
        for event in events:
            last[:] = [event]
            yield event

    return all(event is last[0] for event in bounded(watched()))


def marker_for(depth: int) -> str:
    """A scalar that loads as refused: a value nested deeper than ``depth`` levels."""
    return f' !<{REFUSED_TAG}> "nested deeper than {depth} levels; flatten this value"'


def clean(text: str, bad: dict[int, str]) -> str:
    """``text`` with characters YAML forbids replaced by U+FFFD; their lines in ``bad``.

    Flow collections nested too deeply are cut out too (see :func:`flatten_flow`).
    """
    text = flatten_flow(text)

    def replace(found: re.Match[str]) -> str:
        line = text.count("\n", 0, found.start()) + 1
        bad.setdefault(line, f"control character U+{ord(found.group()):04X} is not allowed in YAML")
        return "\ufffd"

    return _NON_PRINTABLE.sub(replace, text)


def flatten_flow(text: str) -> str:
    """``text`` with flow collections (``[``, ``{``) nested past MAX_DEPTH cut out.

    YAML's scanners slow down with every open flow level (quadratically), so a value like
    ``[[[[...]]]]`` is cut before parsing and replaced by a refused marker; the line
    numbers stay as they were. Quotes and comments are skipped roughly as YAML does.
    """
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return text
    depth, at, size = 0, 0, len(text)
    quote = ""
    start = -1
    while True:
        found = _FLOW_SIGNS.search(text, at)  # jump from sign to sign: the rest is plain
        if found is None:
            break
        at = found.start()
        char = text[at]
        before = text[at - 1] if at else "\n"
        if quote:
            if char == quote and not (quote == '"' and before == "\\"):
                quote = ""
        elif char in "'\"" and before in " \t\n[{,:":
            quote = char
        elif char == "#" and before in " \t\n":
            newline = text.find("\n", at)
            at = size if newline == -1 else newline
            continue
        elif char in "[{":
            depth += 1
            if depth == MAX_DEPTH + 1:
                start = at
        elif char in "]}" and depth:
            depth -= 1
            if depth == MAX_DEPTH:
                span = text[start : at + 1]
                marker = marker_for(MAX_DEPTH)
                text = text[:start] + marker + "\n" * span.count("\n") + text[at + 1 :]
                at = start + len(marker) + span.count("\n")
                size = len(text)
                continue
        at += 1
    if depth > MAX_DEPTH and start >= 0:  # never closed: cut to the end
        text = text[:start] + marker_for(MAX_DEPTH) + "\n" * text.count("\n", start)
    return text
