"""The ``search`` block of the tools service's config (``harness:tools`` in cordis.yml)."""

from __future__ import annotations

from typing import Literal

import pydantic

from .ranker import RankerName

Defer = Literal["auto"] | bool


class SearchConfig(pydantic.BaseModel):
    """How tools are found instead of all listed (docs/search.md)."""

    model_config = pydantic.ConfigDict(extra="forbid")

    defer: Defer = "auto"
    """Whether the agent sends the model ``search_tools`` and the kept tools instead of every
    tool: ``true``, ``false``, or ``auto`` (when more tools are visible than ``threshold``)."""
    threshold: int = pydantic.Field(40, ge=0)
    """With ``defer: auto``: defer when more tools than this are visible."""
    keep: list[str] = []
    """Globs over tool names: the tools always sent (and served with ``mcp: true``)."""
    ranker: RankerName = "lexical"
    """``lexical`` (BM25, built in), ``embedding`` or ``hybrid`` (the ``search`` extra)."""
    native: Literal["auto", False] = "auto"
    """With deferral: ``auto`` lets a provider whose API searches tools itself (Anthropic's
    tool search tool) do so instead of ``search_tools``; ``false`` keeps ``search_tools``."""
    mcp: bool = False
    """Serve ``search_tools``, ``call_tool`` and the kept tools over MCP instead of every
    tool (also ``harness run --mcp-tools search``)."""

    @pydantic.field_validator("ranker")
    @classmethod
    def _installed(cls, ranker: RankerName) -> RankerName:
        if ranker != "lexical":  # refused at load, not at the first search
            from .embedding import Encoder

            why = Encoder.unavailable_reason()
            if why is not None:
                raise ValueError(f"ranker {ranker!r} cannot run: {why}; or use ranker: lexical")
        return ranker

    def defers(self, visible: int) -> bool:
        """Whether to defer with ``visible`` tools in view."""
        if self.defer == "auto":
            return visible > self.threshold
        return bool(self.defer)
