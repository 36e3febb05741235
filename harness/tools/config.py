"""The config of the ``tools`` service (``name: harness:tools`` in cordis.yml)."""

from __future__ import annotations

import pydantic


class ToolsConfig(pydantic.BaseModel):
    """Config of the tools service (``name: harness:tools`` in cordis.yml)."""

    model_config = pydantic.ConfigDict(extra="forbid")

    timeout: float | None = pydantic.Field(60.0, gt=0, allow_inf_nan=False)
    """Default seconds a call may run; null for no limit."""
    max_parallel: int = pydantic.Field(10, ge=1)
    """Default bound on concurrent calls in ``execute_many``."""
    strict: bool = False
    """Default strictness of ``schemas("openai")``."""
