"""The store: what a harness keeps across restarts and shares between replicas (DESIGN §18).

``harness:store`` (:mod:`.service`) opens an SQLite file (:mod:`.sqlite`) or a PostgreSQL
database (:mod:`.postgres`) at a schema version (:mod:`.schema`), and lends the tools
service its call journal (:mod:`.journal`).
"""

from __future__ import annotations

from .config import StoreConfig
from .service import StoreService

__all__ = ["StoreConfig", "StoreService"]
