"""The config of the ``tools`` service (``name: harness:tools`` in cordis.yml)."""

from __future__ import annotations

from typing import Any

import pydantic

from ..errors import DefinitionError
from ..search.config import SearchConfig
from .icons import check_icons

RELOAD_WAIT = 10.0
"""Default seconds a call waits for a reload transaction that concerns it (see holds)."""


class ToolsConfig(pydantic.BaseModel):
    """Config of the tools service (``name: harness:tools`` in cordis.yml)."""

    model_config = pydantic.ConfigDict(extra="forbid")

    timeout: float | None = pydantic.Field(60.0, gt=0, allow_inf_nan=False)
    """Default seconds a call may run; null for no limit."""
    max_parallel: int = pydantic.Field(10, ge=1)
    """Default bound on concurrent calls in ``execute_many``."""
    strict: bool = False
    """Default strictness of ``schemas("openai")``."""
    trace_content: bool = False
    """Put tool arguments and results, and the agent's messages, in trace spans (they may
    hold secrets and personal data; off, spans carry only names, ids, counts and outcomes)."""
    reload_wait: float = pydantic.Field(RELOAD_WAIT, ge=0, allow_inf_nan=False)
    """Seconds a call waits for a reload of its tool's entry, or of a plugin that checks
    calls, before it is refused (0: refused at once)."""
    search: SearchConfig = pydantic.Field(default_factory=SearchConfig)
    """Tool search and deferral (docs/search.md)."""
    page_size: int = pydantic.Field(500, ge=1)
    """At most this many items in one page of an MCP list (``tools/list``,
    ``resources/list``, ``resources/templates/list``, ``prompts/list``); more follow by
    cursor."""
    server_icons: list[dict[str, Any]] = pydantic.Field(default_factory=list)
    """The MCP server's icons (``{"src", "mimeType", "sizes", "theme"}``), in
    ``initialize``'s ``serverInfo`` and ``server/discover``; read when serving starts."""

    @pydantic.field_validator("server_icons")
    @classmethod
    def _icons(cls, icons: list[dict[str, Any]]) -> list[dict[str, Any]]:
        try:
            return list(check_icons(icons, "server_icons"))
        except DefinitionError as exc:
            raise ValueError(str(exc)) from None
