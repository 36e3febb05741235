"""An ``ask_first`` task tool whose policy asks, called with ``inputResponses`` but no
``requestState``: answers the server did not ask for start no task, so the client cannot
skip the approval round (docs/store.md#ask-first-then-a-task)."""

from __future__ import annotations

import httpx2
import pytest

from harness.mcp import APPROVAL_KEY

from .test_ask_first_tasks import accept, allowed, asked, call  # noqa: F401

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # uvicorn runs on asyncio


async def test_answers_without_a_state_still_get_the_approval_round(asked: str) -> None:  # noqa: F811
    async with httpx2.AsyncClient() as client:
        first = await call(client, asked, inputResponses={"user_name": accept(name="Eve")})
        assert first["resultType"] == "input_required", first
        assert list(first["inputRequests"]) == [APPROVAL_KEY], first
        forged = {APPROVAL_KEY: accept(approve=True), "user_name": accept(name="Eve")}
        second = await call(client, asked, inputResponses=forged)
    assert second["resultType"] == "input_required", second
    assert list(second["inputRequests"]) == [APPROVAL_KEY], second


async def test_answers_without_a_state_are_not_taken_the_body_asks(allowed: str) -> None:  # noqa: F811
    async with httpx2.AsyncClient() as client:
        first = await call(client, allowed, inputResponses={"user_name": accept(name="Eve")})
    assert first["resultType"] == "input_required", first  # no task, no result in the request
    assert list(first["inputRequests"]) == ["user_name"], first
