"""The config of the ``tools`` service (``name: harness:tools`` in cordis.yml)."""

from __future__ import annotations

import pydantic

from ..search.config import SearchConfig

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
