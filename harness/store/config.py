"""The config of the ``store`` service (``name: harness:store`` in cordis.yml)."""

from __future__ import annotations

import pydantic

DEFAULT_URL = "sqlite:///.harness/harness.db"
"""An SQLite file beside cordis.yml: embedded, nothing to start."""


class StoreConfig(pydantic.BaseModel):
    """Config of the store (``name: harness:store`` in cordis.yml)."""

    model_config = pydantic.ConfigDict(extra="forbid")

    url: str = DEFAULT_URL
    """``sqlite:///PATH`` (a path relative to cordis.yml's folder; ``sqlite:////abs/path``
    for an absolute one) or ``postgresql://USER:PASSWORD@HOST:PORT/DATABASE``, which
    replicas share."""
    lock_timeout: float = pydantic.Field(5.0, ge=0, allow_inf_nan=False)
    """Seconds the start waits for a store another process holds locked (an SQLite file in
    the middle of a write, a schema migration of another replica) before it is reported."""
    keep_days: float = pydantic.Field(7.0, gt=0, allow_inf_nan=False)
    """Finished calls are kept this many days in the journal (a repeat of an older key runs
    again); checked when the store opens."""

    @pydantic.field_validator("url")
    @classmethod
    def _known_scheme(cls, url: str) -> str:
        if not url.startswith(("sqlite:///", "postgresql://", "postgres://")):
            raise ValueError(
                f"url {url!r} is neither sqlite:///PATH nor postgresql://...; "
                f"use {DEFAULT_URL!r} (beside cordis.yml) or a PostgreSQL URL"
            )
        return url
