"""The store's side of MCP tasks (:mod:`harness.store.tasks`), with two owners on one SQLite
store in one process (each its own connection and owner lock): what the owner writes, the
answers and cancels another owner gives, a dead owner's task answered ``failed``, expiry."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from harness.store.sqlite import SqliteDatabase
from harness.store.tasks import StoredTasks

pytestmark = pytest.mark.anyio
INTERRUPTED = {
    "code": -32603,
    "message": "interrupted: the host stopped while this task ran; it may or may not have "
    "taken effect",
}
ASK = {"method": "elicitation/create", "params": {"message": "Go on?"}}
YES = {"action": "accept", "content": {"go": True}}


@pytest.fixture
async def owners(tmp_path: Path) -> AsyncIterator[tuple[StoredTasks, StoredTasks]]:
    path = tmp_path / "harness.db"
    a = await SqliteDatabase.open(path, 5)
    b = await SqliteDatabase.open(path, 5)
    try:
        yield StoredTasks(a), StoredTasks(b)
    finally:
        await b.close()
        await a.close()


async def test_answers_and_a_cancel_given_by_another_owner_reach_the_owner(
    owners: tuple[StoredTasks, StoredTasks],
) -> None:
    a, b = owners
    await a.create("t1", "confirm", "client-1", time.time(), 60_000)
    assert await a.ask("t1", {"first": ASK, "second": ASK})
    seen = await b.get("t1")
    assert seen is not None
    assert (seen["status"], seen["owner"], seen["requests"]) == (
        "input_required",
        a.owner,
        {"first": ASK, "second": ASK},
    )
    # only the keys asked for, and answers that are objects, are taken
    assert not await b.answer("t1", {"other": YES, "second": "yes"})
    assert await b.answer("t1", {"first": YES, "other": YES})
    assert (await a.watch(["t1", "gone"])) == {
        "t1": {
            "status": "input_required",
            "cancel_requested": False,
            "answered": True,
            "expires_at": seen["expires_at"],
        }
    }
    assert await a.take_answers("t1", ["first", "second"]) == {"first": YES}
    assert await a.take_answers("t1", ["first", "second"]) == {}
    assert not await b.answer("t1", {"first": YES})  # answered once
    assert await b.answer("t1", {"second": YES})
    assert await a.take_answers("t1", ["second"]) == {"second": YES}
    assert await a.save("t1", "working", "1/2: step")

    assert await b.cancel("t1")
    assert not await b.cancel("t1")  # a cancel of a cancelled task changes nothing
    assert (await a.watch(["t1"]))["t1"]["cancel_requested"]
    # the owner's late result does not overwrite the cancel
    assert not await a.save("t1", "completed", None, {"content": []})
    cancelled = await a.get("t1")
    assert cancelled is not None
    assert (cancelled["status"], cancelled["result"], cancelled["requests"]) == (
        "cancelled",
        None,
        {},
    )


async def test_a_task_of_a_dead_owner_is_failed_and_an_expired_one_is_gone(
    tmp_path: Path,
) -> None:
    path = tmp_path / "harness.db"
    a, b = await SqliteDatabase.open(path, 5), await SqliteDatabase.open(path, 5)
    mine, theirs = StoredTasks(a), StoredTasks(b)
    try:
        await mine.create("done", "job", None, time.time(), 60_000)
        assert await mine.save("done", "completed", None, {"content": [], "isError": False})
        await mine.create("cut", "job", None, time.time(), 60_000)
        await mine.create("old", "job", None, time.time() - 2, 1_000)
        alive = await theirs.get("cut")
        assert alive is not None
        assert alive["status"] == "working"
        assert [row["id"] for row in await theirs.listing()] == ["cut"]
        await a.close()  # as a process that died: its owner lock is gone

        failed = await theirs.get("cut")
        assert failed is not None
        assert (failed["status"], failed["error"]) == ("failed", INTERRUPTED)
        assert await theirs.listing() == []
        listed = await theirs.listing(terminal=True)
        assert [(row["id"], row["status"]) for row in listed] == [
            ("done", "completed"),
            ("cut", "failed"),
        ]
        assert await theirs.get("old") is None  # past its ttlMs
        assert await theirs.purge() == 1
    finally:
        await b.close()
