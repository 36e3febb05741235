"""The loop on asyncio and trio, through an llm provider that does not use the openai SDK.

The provider is the guide's "another llm provider" example (docs/agent.md), run verbatim as
a plugin by path.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
import yaml

from harness import Host

from .conftest import ONE_TOOL_TURN, PLUGINS, SLOW_PLUGIN, kinds, send_cancelling, write

pytestmark = pytest.mark.anyio

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "agent.md"


def guide_provider() -> str:
    """The provider of the guide's section 10, verbatim."""
    text = GUIDE.read_text(encoding="utf-8")
    section = text[text.index("## 10. Writing another `llm` provider") :]
    return section.split("```python\n", 2)[2].split("```", 1)[0]


PROVIDER = guide_provider()


def config(tmp_path: Path, tool: str) -> Path:
    provider = write(tmp_path / "parrot.py", PROVIDER)
    slow = write(tmp_path / "slow.py", SLOW_PLUGIN)
    items = [
        {"id": "echo", "name": str(PLUGINS / "echo.py")},
        {"id": "slow", "name": str(slow)},
        {"id": "model", "name": str(provider), "config": {"tool": tool}},
        {"id": "agent", "name": "harness:agent", "config": {"sessions": "./sessions"}},
    ]
    path = tmp_path / "cordis.yml"
    path.write_text(yaml.safe_dump({"insert": items}), encoding="utf-8")
    return path


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def test_a_turn_with_a_tool_call(tmp_path: Path) -> None:
    async with Host(config(tmp_path, "echo")) as host:
        session = host.ctx.agent.session()
        events = [event async for event in session.send("hello")]
    assert kinds(events) == ONE_TOOL_TURN
    assert events[-1]["reason"] == "done"
    assert events[-2]["usage"] == {"total_tokens": len('The tool said {"text":"Echo: hello"}')}
    log = tmp_path / "sessions" / f"{session.id}.jsonl"
    assert len(log.read_text().splitlines()) == len(ONE_TOOL_TURN)


async def test_cancelling_a_running_tool(tmp_path: Path) -> None:
    async with Host(config(tmp_path, "slow")) as host:
        started = anyio.Event()
        host.ctx.on("test/started", lambda args: started.set())
        session = host.ctx.agent.session()
        events = await send_cancelling(
            session, "wait", "slow", started, lambda _id: session.cancel()
        )
    assert events[-1]["reason"] == "cancelled"
    result = next(e for e in events if e["type"] == "tool/result")["result"]
    assert result["code"] == "cancelled"


def test_the_guide_python_blocks_compile() -> None:
    import ast
    import re

    for index, block in enumerate(re.findall(r"```python\n(.*?)```", GUIDE.read_text(), re.S)):
        compile(block, f"agent.md[{index}]", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
