"""A context with the tools service, a store in the test's folder, and the journal's tools."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from harness import Context, ToolsService, define_tool
from harness.store import StoreConfig, StoreService

from .postgres import Postgres, running_postgres


class Effects:
    """What the test tools did, in order (their effect: one line per run)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.held = False
        """While True, each body waits after its effect until the call is cancelled."""
        self.inside = anyio.Event()
        """Set when a held body has had its effect."""

    def tools(self) -> list[Any]:
        def effect(kind: str) -> Any:
            async def run(args: dict[str, Any]) -> str:
                self.lines.append(f"{kind} {args['amount']}")
                if self.held:
                    self.inside.set()
                    await anyio.sleep_forever()
                return f"{kind}d {args['amount']}"

            return run

        amount = {"amount": {"type": "integer", "required": True}}
        return [
            define_tool(
                name="charge", description="Charge", parameters=amount, execute=effect("charge")
            ),
            define_tool(
                name="reserve",
                description="Reserve",
                parameters=amount,
                execute=effect("reserve"),
                annotations={"idempotent": True},
            ),
            define_tool(
                name="balance",
                description="Read the balance",
                parameters=amount,
                execute=effect("balance"),
                annotations={"read_only": True},
            ),
        ]


@pytest.fixture
def effects() -> Effects:
    return Effects()


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'store' / 'harness.db'}"


@pytest.fixture
async def root(effects: Effects, store_url: str) -> AsyncIterator[Context]:
    """A running root context: tools, the store at ``store_url``, and the effect tools."""
    async with Context() as ctx:
        await ctx.plugin(ToolsService)
        await ctx.plugin(StoreService, StoreConfig(url=store_url))

        def apply(ctx: Context) -> None:
            for definition in effects.tools():
                ctx.tools.register(definition)

        apply.inject = ["tools"]  # type: ignore[attr-defined]
        await ctx.plugin(apply, name="effects")
        yield ctx


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    """One PostgreSQL cluster for the session's tests (each makes a database of its own)."""
    with running_postgres() as server:
        yield server
