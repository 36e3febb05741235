"""A ``requestState`` that started an ``ask_first`` task cannot start another, for the same
arguments or others: -32602."""

from __future__ import annotations

import httpx2
import pytest

from ..mcp.test_ask_first_tasks import accept, allowed, call, post  # noqa: F401

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_a_replayed_state_starts_no_second_task(allowed: str) -> None:  # noqa: F811
    async with httpx2.AsyncClient() as client:
        first = await call(client, allowed)
        answers = {"user_name": accept(name="Ada")}
        second = await call(
            client, allowed, inputResponses=answers, requestState=first["requestState"]
        )
        assert second["resultType"] == "task"
        again = await post(
            client,
            allowed,
            "tools/call",
            True,
            400,
            name="onboard",
            arguments={"team": "ops"},
            inputResponses=answers,
            requestState=first["requestState"],
        )
        assert again["error"]["code"] == -32602, again
        other = await post(
            client,
            allowed,
            "tools/call",
            True,
            400,
            name="onboard",
            arguments={"team": "dev"},
            inputResponses=answers,
            requestState=first["requestState"],
        )
        assert other["error"]["code"] == -32602, other
