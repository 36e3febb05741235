"""The call journal in one process: a keyed call runs once, a repeat is answered from the
journal, a reused key is refused, read_only and unkeyed calls are not journaled, and a call
its process left ``started`` is ``interrupted`` (or run again, for an idempotent tool)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from harness import Context, ToolCall
from harness.store.sqlite import SqliteDatabase

from .conftest import Effects

pytestmark = pytest.mark.anyio


async def test_a_repeated_key_is_answered_from_the_journal(root: Context, effects: Effects) -> None:
    first = await root.tools.execute(ToolCall("1", "charge", {"amount": 5}, key="k-1"))
    again = await root.tools.execute(ToolCall("2", "charge", {"amount": 5}, key="k-1"))
    assert first.result == "charged 5"
    assert (again.id, again.result, again.content, again.code) == (
        "2",
        "charged 5",
        first.content,
        None,
    )
    assert effects.lines == ["charge 5"]


async def test_a_key_reused_for_other_arguments_or_another_tool_is_refused(
    root: Context, effects: Effects
) -> None:
    await root.tools.execute(ToolCall("1", "charge", {"amount": 5}, key="k-1"))
    other_args = await root.tools.execute(ToolCall("2", "charge", {"amount": 6}, key="k-1"))
    other_tool = await root.tools.execute(ToolCall("3", "reserve", {"amount": 5}, key="k-1"))
    assert (other_args.code, other_tool.code) == ("invalid_args", "invalid_args")
    assert other_args.error == (
        "Invalid arguments for tool charge: the idempotency key 'k-1' was used for other "
        "arguments; a key names one call: use a new key for a new call"
    )
    assert other_tool.error == (
        "Invalid arguments for tool reserve: the idempotency key 'k-1' was used for tool "
        "charge; a key names one call: use a new key for a new call"
    )
    assert effects.lines == ["charge 5"]


async def test_the_same_arguments_in_another_order_or_as_json_text_are_the_same_call(
    root: Context, effects: Effects
) -> None:
    await root.tools.execute(ToolCall("1", "charge", {"amount": 5}, key="k"))
    again = await root.tools.execute(ToolCall("2", "charge", '{ "amount": 5 }', key="k"))
    assert again.result == "charged 5"
    assert effects.lines == ["charge 5"]


async def test_read_only_and_unkeyed_calls_are_not_journaled(
    root: Context, effects: Effects
) -> None:
    for call_id in "12":
        await root.tools.execute(ToolCall(call_id, "balance", {"amount": 1}, key="read"))
        await root.tools.execute(ToolCall(call_id, "charge", {"amount": 2}))
    assert effects.lines == ["balance 1", "charge 2", "balance 1", "charge 2"]


async def test_concurrent_repeats_run_the_body_once(root: Context, effects: Effects) -> None:
    results = []

    async def call(call_id: str) -> None:
        results.append(
            await root.tools.execute(ToolCall(call_id, "charge", {"amount": 9}, key="k"))
        )

    async with anyio.create_task_group() as group:
        for call_id in "abcd":
            group.start_soon(call, call_id)
    assert [result.result for result in results] == ["charged 9"] * 4
    assert effects.lines == ["charge 9"]


async def left_started(store_url: str, key: str, tool: str, amount: int) -> None:
    """The journal as a process leaves it when it dies inside the call's body."""
    from harness.store.journal import digest_of

    gone = await SqliteDatabase.open(Path(store_url.removeprefix("sqlite:///")), 1.0)
    assert await gone.claim(key, tool, digest_of({"amount": amount})) is None
    await gone.close()  # its owner lock goes, as the operating system drops a dead one's


async def test_a_call_left_started_by_a_dead_process_is_interrupted_once(
    root: Context, effects: Effects, store_url: str
) -> None:
    await left_started(store_url, "cut", "charge", 5)
    first = await root.tools.execute(ToolCall("1", "charge", {"amount": 5}, key="cut"))
    again = await root.tools.execute(ToolCall("2", "charge", {"amount": 5}, key="cut"))
    message = (
        "interrupted: the host stopped while this call ran; it may or may not have taken effect"
    )
    assert (first.code, first.error, first.content) == (
        "interrupted",
        message,
        [{"type": "text", "text": message}],
    )
    assert (again.code, again.error) == ("interrupted", message)
    assert effects.lines == []  # never run again: its effect may have happened


async def test_an_idempotent_call_left_started_runs_again_once(
    root: Context, effects: Effects, store_url: str
) -> None:
    await left_started(store_url, "cut", "reserve", 5)
    first = await root.tools.execute(ToolCall("1", "reserve", {"amount": 5}, key="cut"))
    again = await root.tools.execute(ToolCall("2", "reserve", {"amount": 5}, key="cut"))
    assert (first.result, again.result) == ("reserved 5", "reserved 5")
    assert effects.lines == ["reserve 5"]


@pytest.mark.parametrize(("tool", "repeated"), [("charge", "interrupted"), ("reserve", None)])
async def test_a_call_cancelled_inside_its_body_is_cut_off(
    root: Context, effects: Effects, tool: str, repeated: str | None
) -> None:
    effects.held = True
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as group:
            group.start_soon(root.tools.execute, ToolCall("1", tool, {"amount": 4}, key="k"))
            await effects.inside.wait()
            scope.cancel()
    effects.held = False
    again = await root.tools.execute(ToolCall("2", tool, {"amount": 4}, key="k"))
    assert again.code == repeated
    # charge's effect may have happened: not run again; reserve (idempotent) runs again
    assert effects.lines == [f"{tool} 4"] * (1 if repeated else 2)


async def test_opening_a_store_tidies_the_locks_of_dead_processes(tmp_path: Path) -> None:
    path = tmp_path / "harness.db"
    owners = tmp_path / "harness.db.owners"
    owners.mkdir()
    (owners / "12345.lock").touch()  # left by a process killed with -9: nobody holds it
    database = await SqliteDatabase.open(path, 1.0)
    try:
        assert sorted(file.name for file in owners.iterdir()) == [f"{database.owner}.lock"]
        other = await SqliteDatabase.open(path, 1.0)  # a live one's lock stays
        assert await other.is_alive(database.owner)
        assert sorted(file.name for file in owners.iterdir()) == sorted(
            [f"{database.owner}.lock", f"{other.owner}.lock"]
        )
        await other.close()
    finally:
        await database.close()
    assert list(owners.iterdir()) == []
