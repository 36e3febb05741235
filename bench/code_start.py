"""A program's start in code mode: harness against pydantic-ai-harness, on the same Monty.

Both run the same programs one after another, with a tool ``add``, in this process:

- harness: ``run_code`` through ``tools.execute`` (the pipeline, the type check against the
  tools' stubs, a fresh sandbox session, the calls). Every program is type-checked.
- pydantic-ai-harness (PyPI ``pydantic-ai-harness``, its ``CodeMode`` capability on a
  pydantic-ai ``Agent`` whose model, a ``FunctionModel``, asks for the programs one per step
  of one run): its ``run_code`` tool's execution, timed by a capability around it
  (``wrap_tool_execute``). It type-checks the first program of a run only; the later ones
  run unchecked, in the same REPL session as the first (they share its names).

first: the first program (harness: after the entry started; pydantic-ai-harness: its pool
and session start then); warm: the median of the next ones.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import yaml

from harness import Host, ToolCall

PLUGINS = Path(__file__).resolve().parents[1] / "plugins"
WARM = 20
PROGRAMS = {
    "1 + 1": "1 + 1",
    "gather, str, json": """\
import asyncio
import json
numbers = await asyncio.gather(*[add(a=i, b=1) for i in range(3)])
words = "alpha | beta | gamma".split(" | ")
summary = {w.upper(): n for w, n in zip(words, numbers) if n > 1}
print(json.dumps(summary))
sorted(summary)
""",
}


async def harness_starts(folder: Path, code: str) -> tuple[float, float]:
    """ms: the first program after the entry started, and the median warm one."""
    path = folder / "start.yml"
    entries = [
        {"id": "add", "name": str(PLUGINS / "add.py")},
        {"id": "code", "name": "harness:code"},
    ]
    path.write_text(yaml.safe_dump({"insert": entries}))
    async with AsyncExitStack() as stack:
        host = await stack.enter_async_context(Host(path))
        took = []
        for number in range(WARM + 1):
            began = time.perf_counter()
            result = await host.ctx.tools.execute(
                ToolCall(f"c{number}", "run_code", {"code": code})
            )
            took.append(time.perf_counter() - began)
            assert result.ok, result.error
    return took[0] * 1000, statistics.median(took[1:]) * 1000


async def pydantic_ai_harness_starts(code: str) -> tuple[float, float]:
    """ms: the first program of an agent run, and the median of the next ones."""
    from pydantic_ai import Agent
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai_harness import CodeMode

    @dataclass
    class Timer(AbstractCapability[Any]):
        took: list[float] = field(default_factory=list)

        async def wrap_tool_execute(self, ctx: Any, *, call: Any, handler: Any, **rest: Any) -> Any:
            began = time.perf_counter()
            try:
                return await handler(rest["args"])
            finally:
                if call.tool_name == "run_code":
                    self.took.append(time.perf_counter() - began)

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        step = sum(1 for message in messages if isinstance(message, ModelResponse))
        if step <= WARM:
            return ModelResponse(parts=[ToolCallPart("run_code", {"code": code}, f"c{step}")])
        return ModelResponse(parts=[TextPart("done")])

    timer = Timer()
    agent = Agent(FunctionModel(respond), capabilities=[CodeMode(), timer])

    @agent.tool_plain
    def add(a: float, b: float) -> float:
        """Add two numbers and return the sum."""
        return a + b

    await agent.run("go")
    took = timer.took
    assert len(took) == WARM + 1, took
    return took[0] * 1000, statistics.median(took[1:]) * 1000


async def main() -> None:
    try:
        other = metadata.version("pydantic-ai-harness")
    except metadata.PackageNotFoundError:
        other = None
    print(f"pydantic-monty {metadata.version('pydantic-monty')}, pydantic-ai-harness {other}")
    with tempfile.TemporaryDirectory() as temp:
        for name, code in PROGRAMS.items():
            first, warm = await harness_starts(Path(temp), code)
            line = f"  {name!r}: harness first {first:.1f} ms, warm {warm:.2f} ms (checked)"
            if other is not None:
                their_first, their_warm = await pydantic_ai_harness_starts(code)
                line += (
                    f"; pydantic-ai-harness first {their_first:.1f} ms, warm {their_warm:.2f} ms"
                    f" (unchecked); warm x{warm / their_warm:.1f}"
                )
            print(line)
    if other is None:
        print("  pydantic-ai-harness is not installed: pip install -e '.[bench]'")
