"""The type check of a warm program covers only the program: the checker keeps what it built
for the stubs between programs, follows them when they change (a hot reload), and lets no
program see another's names. Programs may sleep (``asyncio.sleep``, ``time.sleep``)."""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import anyio
import pydantic_monty as monty
import pytest

from harness import Host, define_tool
from harness.code.checker import REFUSED, guarded

from ..helpers import write
from .conftest import project, run

pytestmark = pytest.mark.anyio

PROGRAM = """\
import asyncio
import json
numbers = await asyncio.gather(*[add(a=i, b=1) for i in range(3)])
words = "alpha | beta | gamma".split(" | ")
summary = {w.upper(): n for w, n in zip(words, numbers) if n > 1}
print(json.dumps(summary))
sorted(summary)
"""


async def test_a_warm_program_is_not_checked_from_scratch(host: Host) -> None:
    """The whole warm run_code (check, run, three calls) against a check from scratch of the
    same program alone, in a fresh Monty session: measured in turns, so that both see the
    same load (this machine may be busy: the ratio holds, milliseconds would not). From
    scratch the check alone took 20-35 ms; warm, the whole call 1-4 ms (bench/code.py)."""
    definition = host.tools.get("run_code")
    assert definition is not None
    stubs = definition.description.split("```python\n", 1)[1].rsplit("```", 1)[0]
    first = await run(host, PROGRAM)
    assert first.ok, first.error
    warm, scratch = [], []
    with monty.Monty(min_processes=1, max_processes=1) as pool:
        for _ in range(9):
            began = time.perf_counter()
            result = await run(host, PROGRAM)
            warm.append(time.perf_counter() - began)
            assert result.result["value"] == ["BETA", "GAMMA"], result.error
            began = time.perf_counter()
            session = pool.checkout(type_check=True, type_check_stubs=stubs)
            with session, pytest.raises(monty.MontyRuntimeError, match=REFUSED):
                session.feed_run(guarded(PROGRAM)[0])
            scratch.append(time.perf_counter() - began)
    assert statistics.median(warm) < statistics.median(scratch) / 2, (warm, scratch)


async def test_programs_see_none_of_each_other_s_names(host: Host) -> None:
    assert (await run(host, "secret = 42\nsecret")).result["value"] == 42
    unchecked = await run(host, "secret")
    assert unchecked.code == "invalid_args"
    assert "Name `secret` used when not defined" in (unchecked.error or "")
    through_eval = await run(host, 'eval("secret")')
    assert through_eval.code == "tool_error"
    assert "NameError: name 'secret' is not defined" in (through_eval.error or "")
    # a name declared by one program does not fix its type for the next
    assert (await run(host, "x: int = 1\nx")).result["value"] == 1
    assert (await run(host, 'x: str = "a"\nx')).result["value"] == "a"
    # a program that does not type-check leaves nothing behind either
    assert (await run(host, 'y: int = "no"')).code == "invalid_args"
    assert (await run(host, 'y: str = "yes"\ny')).result["value"] == "yes"


async def test_a_checked_program_runs_once(host: Host) -> None:
    calls: list[str] = []
    host.ctx.on("tools/result", lambda call, result: calls.append(call.name))
    result = await run(host, 'print("once")\nawait add(a=1, b=2)')
    assert result.ok, result.error
    assert result.result["output"] == "once\n"
    assert calls == ["add", "run_code"]


STAMP = """
from harness import define_tool

inject = ["tools"]


def apply(ctx):
    ctx.tools.register(define_tool(
        name="stamp", description="Stamp a text.", parameters={params},
        output={{"schema": {{"type": "string"}}}}, execute=lambda args: str(args)))
"""


async def test_the_check_follows_the_stubs_through_a_hot_reload(tmp_path: Path) -> None:
    source = write(
        tmp_path / "plugins" / "stamp.py",
        STAMP.format(params='{"n": {"type": "integer", "required": True}}'),
    )
    config = project(tmp_path, extra=f"  - {{ id: stamp, name: {source} }}\n")
    async with Host(config, watch=True) as host:
        assert (await run(host, "await stamp(n=1)")).ok
        assert (await run(host, 'await stamp(n="one")')).code == "invalid_args"
        reloaded = anyio.Event()
        host.ctx.on("reload/done", lambda report: reloaded.set())
        write(source, STAMP.format(params='{"text": {"type": "string", "required": True}}'))
        with anyio.fail_after(30):
            await reloaded.wait()
        renamed = await run(host, "await stamp(n=1)")
        assert renamed.code == "invalid_args"
        assert "stamp" in (renamed.error or "")
        result = await run(host, 'await stamp(text="one")')
        assert result.ok, result.error
        assert result.result["value"] == "{'text': 'one'}"


async def test_a_tool_added_or_removed_is_in_the_next_check(host: Host) -> None:
    assert (await run(host, "await shout()")).code == "invalid_args"
    dispose = host.ctx.tools.register(
        define_tool(
            name="shout",
            description="Shout.",
            output={"schema": {"type": "string"}},
            execute=lambda args: "HEY",
        )
    )
    assert (await run(host, "await shout()")).result["value"] == "HEY"
    dispose()
    assert (await run(host, "await shout()")).code == "invalid_args"


async def test_programs_sleep_on_the_program_s_clock(tmp_path: Path) -> None:
    """Both sleeps sleep (a lower bound only: load makes a run slower, never faster), and
    gathered sleeps overlap: both coroutines start before either ends (their order, not a
    stopwatch, shows it)."""
    async with Host(project(tmp_path, "{timeout: 3, max_calls: 50}")) as host:
        began = time.perf_counter()
        result = await run(
            host,
            "import asyncio\nimport time\ntime.sleep(0.05)\n"
            "await asyncio.sleep(0.05, 'ignored')\n"
            "order = []\n"
            "async def nap(label):\n"
            "    order.append(label + ' starts')\n"
            "    await asyncio.sleep(0.4)\n"
            "    order.append(label + ' ends')\n"
            "    return label\n"
            "[await asyncio.gather(nap('a'), nap('b'), add(a=1, b=2)), order]",
        )
        took = time.perf_counter() - began
        assert result.ok, result.error
        gathered, order = result.result["value"]
        assert gathered == ["a", "b", 3]
        assert sorted(order[:2]) == ["a starts", "b starts"], order  # overlapping, not in turn
        assert sorted(order[2:]) == ["a ends", "b ends"], order
        assert took >= 0.5
        slept = await run(host, "import asyncio\nawait asyncio.sleep(60)")
        assert slept.code == "timeout"
        assert slept.error == "Tool run_code timed out after 3 seconds"


async def test_a_type_error_quotes_the_program_as_it_was_sent(host: Host) -> None:
    result = await run(host, 'x = 1\nawait add(a="x", b=1)\n\n')
    assert result.code == "invalid_args"
    assert (result.error or "").startswith(
        "Invalid arguments for tool run_code: the program does not type-check against the "
        "tool stubs:\nerror[invalid-argument-type]: Argument to function `add` is incorrect\n"
        ' --> program.py:2:11\n  |\n1 | x = 1\n2 | await add(a="x", b=1)\n'
        '  |           ^^^^^ Expected `float`, found `Literal["x"]`\n  |\ninfo: '
    )
