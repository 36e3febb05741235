"""run_code: programs whose calls go through the pipeline, with stubs, results and cards."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness import Host, ToolCall, ToolResult

from .conftest import SEED, git_repo, run

pytestmark = pytest.mark.anyio


async def test_the_seed_question_in_one_program(host: Host, tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo", commits=8)
    seen: list[tuple[str, str | None]] = []
    host.ctx.on("tools/result", lambda call, result: seen.append((call.name, call.parent)))
    result = await run(host, SEED.format(repo=str(repo)), "seed")
    assert result.ok, result.error
    value = result.result
    assert value["output"] == "4 of 8 commits touched more than 3 files\n"
    assert value["value"] == [f"change {n} (4 files)" for n in (6, 4, 2, 0)]
    names = [item["name"] for item in value["calls"]]
    assert names == ["git_log_reader"] + ["git_diff"] * 8
    assert all(item["ok"] and item["code"] is None for item in value["calls"])
    assert set(value["calls"][0]) == {"name", "ok", "code", "duration_ms"}
    # every inner call went through the pipeline as a call of its own, parented
    assert seen[:-1] == [("git_log_reader", "seed")] + [("git_diff", "seed")] * 8
    assert seen[-1] == ("run_code", None)
    # people read the program, a nested card per call, then the output
    blocks = result.content
    assert blocks[0] == {"type": "code", "language": "python", "text": SEED.format(repo=str(repo))}
    cards = [block for block in blocks if block["type"] == "tool_call"]
    assert [card["name"] for card in cards] == names
    assert cards[1]["parent"] == "seed"
    assert cards[1]["id"] == "seed/2"
    assert cards[1]["status"] == "done"
    assert cards[1]["args"]["repoPath"] == str(repo)
    assert cards[1]["content"][0]["type"] == "text"
    assert blocks[len(cards) + 1] == {"type": "text", "text": value["output"]}


async def test_the_description_carries_the_stubs(host: Host) -> None:
    definition = host.ctx.tools.get("run_code")
    assert definition is not None
    text = definition.description
    assert "async def add(a: float, b: float) -> float:" in text
    assert "class GitLogReaderResult(TypedDict):" in text
    assert "async def git_log_reader(repoPath: str, maxCount: int | None = None)" in text
    assert "async def call_tool(name: str, args: dict[str, Any] | None = None) -> Any:" in text
    assert "async def run_code" not in text
    assert definition.parameters == {
        "type": "object",
        "properties": {
            "code": {
                "type": "string",
                "description": "The Python program; its last expression is the value",
                "contentMediaType": "text/x-python",
            }
        },
        "required": ["code"],
    }


async def test_the_stubs_follow_the_registry(host: Host) -> None:
    from harness import define_tool

    dispose = host.ctx.tools.register(
        define_tool(
            name="shout-loud",
            description="Shout",
            parameters={"text": {"type": "string", "required": True}},
            execute=lambda args: args["text"].upper(),
        )
    )
    definition = host.ctx.tools.get("run_code")
    assert definition is not None
    assert "reachable only through call_tool: 'shout-loud'" in definition.description
    result = await run(host, 'await call_tool("shout-loud", {"text": "hi"})')
    assert result.ok, result.error
    assert result.result["value"] == "HI"
    dispose()
    definition = host.ctx.tools.get("run_code")
    assert definition is not None
    assert "shout-loud" not in definition.description


async def test_a_type_error_is_invalid_args_with_the_checkers_message(host: Host) -> None:
    result = await run(host, 'x = await add(a="one", b=2)')
    assert result.code == "invalid_args"
    assert result.error is not None
    assert result.error.startswith(
        "Invalid arguments for tool run_code: the program does not type-check against the "
        "tool stubs:\nerror[invalid-argument-type]: Argument to function `add` is incorrect"
    )
    assert 'Expected `float`, found `Literal["one"]`' in result.error
    missing = await run(host, "await git_log_reader()")
    assert missing.code == "invalid_args"
    assert "repoPath" in (missing.error or "")
    typo = await run(host, 'r = await git_log_reader(repoPath=".")\nr["formated"]')
    assert typo.code == "invalid_args"
    assert 'Unknown key "formated" for TypedDict `GitLogReaderResult`' in (typo.error or "")
    syntax = await run(host, "def (:")
    assert syntax.code == "invalid_args"


async def test_positional_arguments_aliases_and_the_last_value(host: Host) -> None:
    result = await run(host, "f = add\nx = await f(1, 2)\ny = await add(x, b=4)\n{'sum': y}")
    assert result.ok, result.error
    assert result.result["value"] == {"sum": 7}
    assert [c["name"] for c in result.result["calls"]] == ["add", "add"]


async def test_a_failed_call_raises_a_catchable_exception_whose_text_begins_with_the_code(
    host: Host,
) -> None:
    program = """
from typing import Any
try:
    await multiply(a=2, b=3)
except Exception as e:
    print(type(e).__name__, "|", str(e))
    try:
        anything: Any = e
        anything.code
    except AttributeError:
        print("no attributes")
try:
    await call_tool("add", {"a": 1, "b": "2"})
except ValueError as e:
    print(str(e))
try:
    await call_tool("missing", {})
except LookupError as e:
    print(str(e))
await add(a=1, b=1)
"""
    result = await run(host, program)
    assert result.ok, result.error
    assert result.result["output"].splitlines() == [
        "PermissionError | denied: Tool denied: the policy forbids multiply (rule 'multiply')",
        "no attributes",
        "invalid_args: Invalid arguments for tool add: b: expected number, got string",
        "unknown_tool: no tool 'missing' may be called from this program",
    ]
    assert result.result["value"] == 2
    codes = [(c["name"], c["code"]) for c in result.result["calls"]]
    assert codes == [("multiply", "denied"), ("add", "invalid_args"), ("add", None)]


async def test_an_uncaught_exception_fails_the_call_with_the_traceback_and_output(
    host: Host,
) -> None:
    result = await run(host, 'print("before")\n1 / 0')
    assert result.code == "tool_error"
    assert result.error == (
        "the program raised an exception:\nTraceback (most recent call last):\n"
        '  File "<python-input-0>", line 2, in <module>\n    1 / 0\n    ~~~~~\n'
        "ZeroDivisionError: division by zero\nOutput before it stopped:\nbefore\n"
    )


async def test_gather_runs_calls_together_within_max_parallel(tmp_path: Path) -> None:
    from .conftest import Hold, project

    async with Host(project(tmp_path, "{max_parallel: 2, timeout: 10}")) as host:
        hold = Hold(host.ctx.tools)
        running: list[int] = []
        peak: list[int] = []

        async def around(call: ToolCall, next: Any) -> ToolResult:
            if call.parent is None:
                return await next()  # type: ignore[no-any-return]
            running.append(1)
            peak.append(len(running))
            if len(running) == 2:
                hold.release.set()
            try:
                return await next()  # type: ignore[no-any-return]
            finally:
                running.pop()

        host.ctx.on("tools/execute", around)
        program = "import asyncio\nawait asyncio.gather(*[hold() for _ in range(5)])"
        result = await run(host, program)
    assert result.ok, result.error
    assert result.result["value"] == ["released"] * 5
    assert max(peak) == 2
