"""A failed program still shows itself and the cards of the calls it made."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import Host

from .conftest import project, run

pytestmark = pytest.mark.anyio

RAISES = "first = await add(a=1, b=2)\nprint('got', first)\nraise ValueError('no good')"


async def test_a_program_that_raises_keeps_its_cards(host: Host) -> None:
    result = await run(host, RAISES)
    assert result.code == "tool_error"
    assert result.error is not None
    assert "ValueError: no good" in result.error
    blocks = result.content
    assert blocks[0] == {"type": "code", "language": "python", "text": RAISES}
    card = blocks[1]
    assert card["type"] == "tool_call"
    assert (card["id"], card["name"], card["status"], card["parent"]) == (
        "rc/1",
        "add",
        "done",
        "rc",
    )
    assert card["args"] == {"a": 1, "b": 2}
    assert blocks[2] == {"type": "text", "text": result.error}
    assert len(blocks) == 3


async def test_a_program_out_of_time_keeps_its_cards_and_ends_timeout(tmp_path: Path) -> None:
    code = "await add(a=1, b=2)\nwhile True:\n    pass"
    async with Host(project(tmp_path, "{timeout: 1, max_calls: 50}")) as host:
        result = await run(host, code)
    assert result.code == "timeout"
    assert result.error == "Tool run_code timed out after 1 seconds"
    assert [block["type"] for block in result.content] == ["code", "tool_call", "text"]
    assert result.content[1]["name"] == "add"
    assert result.content[2]["text"] == result.error


async def test_a_program_that_does_not_type_check_shows_only_why(host: Host) -> None:
    result = await run(host, "await add(a='x', b=2)")
    assert result.code == "invalid_args"
    assert result.content == [{"type": "text", "text": result.error}]
