"""A program reads what a mounted tool answered: its structuredContent when the server sent
one, else the text of its content (a text-only server's result has no canonical value,
DESIGN §12, but a program still needs the text). Real upstreams over stdio: the SDK's, which
sends structuredContent, and the hostile test server, which sends text only."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import Host

from ..gateway.conftest import stdio_entry, write_config
from ..gateway.test_hostile import hostile
from .conftest import run

pytestmark = pytest.mark.anyio
CODE = {"id": "code", "name": "harness:code", "config": {"timeout": 20}}


async def test_a_program_reads_a_text_only_answer_and_a_structured_one(tmp_path: Path) -> None:
    entries = [stdio_entry(), hostile("bad", include=["echo"], prefix="bad_"), CODE]
    async with Host(write_config(tmp_path, entries)) as host:
        echoed = await host.ctx.tools.execute(
            {"id": "e", "name": "bad_echo", "args": {"text": "x"}}
        )
        assert echoed.ok
        assert echoed.result is None  # no structuredContent: no value
        program = (
            'said = await bad_echo(text="hello there")\n'
            'weather = await up_weather(city="Paris")\n'
            "[said, weather]"
        )
        result = await run(host, program)
        assert result.ok, result
        said, weather = result.result["value"]
        assert said == "hostile says hello there"
        assert isinstance(weather, dict)  # the structured value, as the server sent it
        assert weather
