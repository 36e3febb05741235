"""URI templates: RFC 6570 simple ``{var}`` expressions, matched against URIs.

A template is literal text and ``{name}`` expressions (level 1 of RFC 6570). Expanding a
simple expression percent-encodes everything but unreserved characters, so a variable's
value in a URI never holds ``/``, ``?`` or ``#``: matching reads each variable as the
longest run of other characters (greedy, as a regular expression would, empty allowed) and
percent-decodes it. Operators (``{+var}``, ``{/var}``, ``{?q}``...), modifiers (``{var*}``,
``{var:3}``), two expressions with nothing between them and a variable used twice are
refused when the template is parsed.

Decoded values that could walk a file path out of its folder are refused, not matched: a
NUL, a ``..`` segment that climbs above the start, an absolute path (``/x``, ``\\x``,
``C:x``). This mirrors the MCP SDK's ``UriTemplate`` and its default ``ResourceSecurity``
(``tests/resources/test_template.py`` compares the two, naming the SDK release).
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from urllib.parse import quote, unquote

from ..errors import ArgumentsError, DefinitionError

_EXPRESSION = re.compile(r"\{([^{}]*)\}")
_VARNAME = re.compile(r"^[A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*$")
_VALUE = "([^/?#]*)"


@dataclass(frozen=True, slots=True)
class UriTemplate:
    """A parsed template: its text, its variables in order, and its matcher."""

    text: str
    variables: tuple[str, ...]
    pattern: re.Pattern[str]

    @classmethod
    def parse(cls, text: str) -> UriTemplate:
        """Parse ``text``; raise DefinitionError saying what is not a simple template."""
        where = f"URI template {text!r}"
        variables: list[str] = []
        parts: list[str] = []
        position = 0
        for found in _EXPRESSION.finditer(text):
            literal = text[position : found.start()]
            _check_literal(literal, where)
            if variables and not literal:
                raise DefinitionError(
                    f"{where}: {{{variables[-1]}}} and {{{found.group(1)}}} touch; put a "
                    "literal between them so a URI can be split"
                )
            name = found.group(1)
            if not _VARNAME.match(name):
                raise DefinitionError(
                    f"{where}: {{{name}}} is not a simple expression; only {{name}} "
                    "(letters, digits, _ and .) is supported, no operators or modifiers"
                )
            if name in variables:
                raise DefinitionError(f"{where}: variable {name!r} appears twice")
            variables.append(name)
            parts.append(re.escape(literal))
            parts.append(_VALUE)
            position = found.end()
        _check_literal(text[position:], where)
        parts.append(re.escape(text[position:]))
        return cls(text, tuple(variables), re.compile("".join(parts), re.DOTALL))

    @property
    def is_fixed(self) -> bool:
        """True when the template has no variables (it is a plain URI)."""
        return not self.variables

    def match(self, uri: str) -> dict[str, str] | None:
        """The decoded variables of ``uri``, or None when it does not match.

        Raises ArgumentsError when it matches but a value is refused (see the module).
        """
        found = self.pattern.fullmatch(uri)
        if found is None:
            return None
        values = {
            name: unquote(value) for name, value in zip(self.variables, found.groups(), strict=True)
        }
        for name, value in values.items():
            why = _unsafe(value)
            if why is not None:
                raise ArgumentsError(
                    f"resource URI {uri!r}: variable {name!r} of {self.text!r} is refused: {why}"
                )
        return values

    def expand(self, values: dict[str, str]) -> str:
        """The URI of ``values`` (each percent-encoded but for unreserved characters)."""
        return _EXPRESSION.sub(lambda found: quote(values[found.group(1)], safe=""), self.text)


def _check_literal(literal: str, where: str) -> None:
    if "{" in literal or "}" in literal:
        raise DefinitionError(f"{where}: unbalanced '{{' or '}}'")


def _unsafe(value: str) -> str | None:
    """Why a decoded value is refused, or None."""
    if "\0" in value:
        return "it holds a NUL character"
    depth = 0
    for part in value.replace("\\", "/").split("/"):
        if part == "..":
            depth -= 1
            if depth < 0:
                return "its '..' climbs out of the folder it names"
        elif part and part != ".":
            depth += 1
    if value[:1] in ("/", "\\") or (
        len(value) >= 2 and value[1] == ":" and value[0] in string.ascii_letters
    ):
        return "it is an absolute path"
    return None
