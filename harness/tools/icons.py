"""Icons of a definition, as MCP spells them: ``{"src", "mimeType", "sizes", "theme"}``.

``src`` is required (a URL or a ``data:`` URI); ``mimeType`` a string, ``sizes`` a list of
strings such as ``"48x48"`` or ``"any"``, ``theme`` ``light`` or ``dark``. They are checked
when the definition is made and passed through to MCP lists unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import DefinitionError

KEYS = ("src", "mimeType", "sizes", "theme")


def check_icons(icons: Any, where: str) -> tuple[dict[str, Any], ...]:
    """``icons`` as a tuple of plain dicts; raise DefinitionError naming ``where`` when one
    is malformed. None is no icons."""
    if icons is None:
        return ()
    if isinstance(icons, Mapping) or not isinstance(icons, Sequence) or isinstance(icons, str):
        raise DefinitionError(f"{where}: icons must be a list of {{'src', 'mimeType', 'sizes'}}")
    checked = []
    for index, icon in enumerate(icons):
        at = f"{where}: icons[{index}]"
        if not isinstance(icon, Mapping):
            raise DefinitionError(f"{at} must be a mapping with 'src'")
        unknown = sorted(set(icon) - set(KEYS))
        if unknown:
            raise DefinitionError(f"{at} has unknown keys {unknown}; allowed are {', '.join(KEYS)}")
        if not isinstance(icon.get("src"), str) or not icon["src"]:
            raise DefinitionError(f"{at} needs 'src', a URL or data: URI")
        if "mimeType" in icon and not isinstance(icon["mimeType"], str):
            raise DefinitionError(f"{at}: mimeType must be a string such as 'image/png'")
        sizes = icon.get("sizes")
        if "sizes" in icon and (
            not isinstance(sizes, list) or not all(isinstance(size, str) for size in sizes)
        ):
            raise DefinitionError(f"{at}: sizes must be a list of strings such as '48x48'")
        if "theme" in icon and icon["theme"] not in ("light", "dark"):
            raise DefinitionError(f"{at}: theme must be 'light' or 'dark'")
        checked.append(dict(icon))
    return tuple(checked)
