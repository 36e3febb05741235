"""To callers a reload is atomic (DESIGN §5): real files, the real watcher, many callers.

A call that arrives while its tool's entry, or a plugin listening on ``tools/pre-execute``,
is reloading waits for the transaction and runs on the new version (the old one after a
rollback): it never finds the tool missing and never runs unchecked; a reload that hangs
past the tools service's ``reload_wait`` gets the call a clear refusal, not a hang.
"""

from __future__ import annotations

import itertools
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from harness import Host, ToolCall, ToolResult

from .test_reload import Reloads

pytestmark = pytest.mark.anyio

CALLS = 20_000
"""The least number of calls each race test makes while the edits land."""
EDITS = 100
"""The least number of edits; every tenth one is broken (its apply raises)."""
PACE = 0.03
"""Seconds between two edits (about 100 in 3 s, as in issue #21)."""

POLICY = """
from harness import Ask


def apply(ctx):
    async def check(call, next):
        if call.name == "write_text_file":
            return Ask("policy {version}")
        return await next()

    ctx.on("tools/pre-execute", check)
    {after}
"""

WRITER = """
from pathlib import Path

from harness import tool

inject = ["tools"]
ROOT = Path({root!r})


@tool
def write_text_file(path: str, content: str) -> str:
    "Write a file."
    (ROOT / path).write_text(content)
    return "written"


def apply(ctx):
    ctx.tools.register(write_text_file)
"""

ADD = """
from harness import tool

inject = ["tools"{inject}]


@tool
async def add(a: int, b: int) -> str:
    "Add two numbers."
    return f"{{a + b}} {version}"


async def apply(ctx):
    {before}
    ctx.tools.register(add)
    {after}
"""


def write(path: Path, template: str, **fields: str) -> None:
    path.write_text(textwrap.dedent(template).format(**fields))


def policy(path: Path, version: str, broken: bool = False) -> None:
    write(path, POLICY, version=version, after="raise ValueError('broken')" if broken else "")


def adder(
    path: Path, version: str, broken: bool = False, before: str = "", inject: str = ""
) -> None:
    after = "raise ValueError('broken')" if broken else ""
    write(path, ADD, version=version, before=before or "pass", after=after, inject=inject)


class Denier:
    """The approval service: denies every call, counting them."""

    def __init__(self) -> None:
        self.asked = 0

    async def request(self, call: ToolCall, reason: str) -> bool:
        self.asked += 1
        return False


async def edit_while_calling(
    edit: Any, calls: list[ToolResult], finals: Any, reloads: Reloads
) -> int:
    """Edit (``edit(step)``) at least EDITS times, and until CALLS calls were made; then make
    the final edit and wait until ``finals()`` says it is live. Returns the edits made."""
    step = 0
    with anyio.fail_after(120):
        while step < EDITS or len(calls) < CALLS:
            step += 1
            edit(step)
            await anyio.sleep(PACE)
        edit(None)
        await reloads.until(finals, seconds=30)
    return step


async def test_no_call_runs_unchecked_while_the_policy_is_edited(tmp_path: Path) -> None:
    """Issue #21's race: a policy asks before write_text_file, the approver always denies,
    the policy's source is rewritten about 100 times in 3 s while four tasks write in a loop;
    not one write runs, and the last edit goes live."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    source = plugins / "policy.py"
    policy(source, "v0")
    write(plugins / "writer.py", WRITER, root=str(workspace))
    (tmp_path / "cordis.yml").write_text(
        "- { id: writer, name: ./plugins/writer.py }\n- { id: policy, name: ./plugins/policy.py }\n"
    )
    denier = Denier()
    results: list[ToolResult] = []
    async with Host(tmp_path / "cordis.yml", watch=True) as host:
        host.ctx.provide("approval", denier)
        reloads = Reloads(host)
        stop = anyio.Event()
        counter = itertools.count()

        async def writer() -> None:
            while not stop.is_set():
                path = f"f{next(counter)}.txt"
                call = ToolCall(path, "write_text_file", {"path": path, "content": "x"})
                results.append(await host.tools.execute(call))
                await anyio.lowlevel.checkpoint()  # a denial awaits nothing: let others run

        def edit(step: int | None) -> None:
            if step is None:
                policy(source, "final")
            else:
                policy(source, f"v{step}", broken=step % 10 == 0)

        async def final_is_live() -> bool:
            return bool(results) and (results[-1].error or "").startswith(
                "Tool denied: policy final"
            )

        async with anyio.create_task_group() as group:
            for _ in range(4):
                group.start_soon(writer)
            edits = await edit_while_calling(edit, results, final_is_live, reloads)
            stop.set()
    written = sorted(item.name for item in workspace.iterdir())
    codes = Counter(result.code for result in results)
    assert written == [], f"{len(written)} of {len(results)} writes ran without approval"
    assert codes == {"denied": len(results)}, codes
    assert len(results) >= CALLS
    assert denier.asked == len(results)  # every call was asked about: none slipped past
    assert edits >= EDITS
    assert sum(1 for report in reloads.reports if report.ok) >= 10
    assert any(not report.ok for report in reloads.reports)  # the broken edits rolled back


async def test_no_caller_finds_the_tool_missing_while_it_is_edited(tmp_path: Path) -> None:
    """Issue #21's load case in process: 16 callers of ``add`` while add.py is edited about
    100 times (every tenth edit broken); no call gets ``unknown_tool``, every call answers,
    and the last edit goes live."""
    source = tmp_path / "plugins" / "add.py"
    source.parent.mkdir()
    adder(source, "v0")
    (tmp_path / "cordis.yml").write_text("- { id: add, name: ./plugins/add.py }\n")
    results: list[ToolResult] = []
    async with Host(tmp_path / "cordis.yml", watch=True) as host:
        reloads = Reloads(host)
        stop = anyio.Event()

        async def caller() -> None:
            while not stop.is_set():
                results.append(await host.tools.execute({"name": "add", "args": {"a": 1, "b": 2}}))
                await anyio.lowlevel.checkpoint()

        def edit(step: int | None) -> None:
            if step is None:
                adder(source, "final")
            else:
                adder(source, f"v{step}", broken=step % 10 == 0)

        async def final_is_live() -> bool:
            return bool(results) and results[-1].result == "3 final"

        async with anyio.create_task_group() as group:
            for _ in range(16):
                group.start_soon(caller)
            await edit_while_calling(edit, results, final_is_live, reloads)
            stop.set()
    codes = Counter(result.code for result in results)
    assert codes == {None: len(results)}, codes
    assert len(results) >= CALLS
    assert {result.result for result in results} <= {f"3 v{i}" for i in range(10_000)} | {"3 final"}
    assert sum(1 for report in reloads.reports if report.ok) >= 10


async def test_a_broken_edit_keeps_calls_answering_on_the_old_version(tmp_path: Path) -> None:
    """A rollback is atomic too: the tool and the policy each get an edit whose apply
    raises; calls made meanwhile wait, then answer on (and are checked by) the old version."""
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    adder(plugins / "add.py", "v1")
    policy(plugins / "policy.py", "v1")
    write(plugins / "writer.py", WRITER, root=str(tmp_path))
    (tmp_path / "cordis.yml").write_text(
        "- { id: add, name: ./plugins/add.py }\n- { id: writer, name: ./plugins/writer.py }\n"
        "- { id: policy, name: ./plugins/policy.py }\n"
    )
    results: list[ToolResult] = []
    async with Host(tmp_path / "cordis.yml", watch=True) as host:
        host.ctx.provide("approval", Denier())
        reloads = Reloads(host)
        stop = anyio.Event()

        async def caller(call: dict[str, Any]) -> None:
            while not stop.is_set():
                results.append(await host.tools.execute(call))
                await anyio.lowlevel.checkpoint()

        async with anyio.create_task_group() as group:
            for _ in range(4):
                group.start_soon(caller, {"name": "add", "args": {"a": 1, "b": 2}})
                group.start_soon(
                    caller, {"name": "write_text_file", "args": {"path": "x", "content": "x"}}
                )
            adder(plugins / "add.py", "v2", broken=True)
            report = await reloads.next()
            assert not report.ok
            assert report.entries == ["add"]
            policy(plugins / "policy.py", "v2", broken=True)
            report = await reloads.next()
            assert not report.ok
            assert report.entries == ["policy"]
            stop.set()
    answers = Counter((result.code, result.result or result.error) for result in results)
    assert set(answers) == {
        (None, "3 v1"),
        ("denied", "Tool denied: policy v1 (approval was refused)"),
    }
    assert not (tmp_path / "x").exists()


HANG = "ctx.latch.entered.set(); await ctx.latch.released.wait()"


class Latch:
    """A service a hanging plugin version waits on (saying so), released by the test."""

    def __init__(self) -> None:
        self.entered = anyio.Event()
        self.released = anyio.Event()


def hanging_host(tmp_path: Path, entries: str) -> Host:
    (tmp_path / "cordis.yml").write_text(
        "- { id: tools, name: harness:tools, config: { reload_wait: 0.2 } }\n" + entries
    )
    return Host(tmp_path / "cordis.yml", watch=True)


async def test_a_reload_that_hangs_past_the_bound_refuses_its_tools_calls(tmp_path: Path) -> None:
    """The tool's entry hangs in its new apply: a call waits ``reload_wait`` seconds, then
    gets a clear ``timeout``; once the reload finishes, calls run on the new version."""
    source = tmp_path / "plugins" / "add.py"
    source.parent.mkdir()
    adder(source, "v1")
    async with hanging_host(tmp_path, "- { id: add, name: ./plugins/add.py }\n") as host:
        latch = Latch()
        host.ctx.provide("latch", latch)
        reloads = Reloads(host)
        adder(source, "v2", before=HANG, inject=', "latch"')
        with anyio.fail_after(15):
            await latch.entered.wait()  # the transaction has begun: v2's apply hangs
        assert host.tools.get("add") is None
        with anyio.fail_after(10):  # bounded: never a hang
            result = await host.tools.execute({"name": "add", "args": {"a": 1, "b": 2}})
        assert result.code == "timeout"
        assert result.error == (
            "Tool add is being reloaded (plugin 'add') and the reload did not finish within "
            "0.2 seconds (the tools service's reload_wait); the call did not run: try again, "
            "and see the host log if it persists"
        )
        latch.released.set()
        assert (await reloads.next()).ok
        result = await host.tools.execute({"name": "add", "args": {"a": 1, "b": 2}})
        assert result.result == "3 v2"


async def test_a_checker_that_hangs_in_its_reload_refuses_every_call(tmp_path: Path) -> None:
    """A plugin listening on tools/pre-execute hangs in its new apply: calls to any tool are
    refused after ``reload_wait``, not run unchecked; then the new checks apply."""
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    adder(plugins / "add.py", "v1")
    source = plugins / "policy.py"
    source.write_text(
        "async def apply(ctx):\n    ctx.on('tools/pre-execute', lambda call, next: next())\n"
    )
    entries = "- { id: add, name: ./plugins/add.py }\n- { id: policy, name: ./plugins/policy.py }\n"
    async with hanging_host(tmp_path, entries) as host:
        latch = Latch()
        host.ctx.provide("latch", latch)
        reloads = Reloads(host)
        assert (await host.tools.execute({"name": "add", "args": {"a": 1, "b": 2}})).ok
        source.write_text(
            "from harness import Deny\n\ninject = ['latch']\n\n\nasync def apply(ctx):\n"
            f"    {HANG}\n    ctx.on('tools/pre-execute', lambda call, next: Deny('v2 says no'))\n"
        )
        with anyio.fail_after(15):
            await latch.entered.wait()
        assert host.ctx.bus.count("tools/pre-execute") == 0  # no checks: none may run
        with anyio.fail_after(10):
            result = await host.tools.execute({"name": "add", "args": {"a": 1, "b": 2}})
        assert result.code == "denied"
        assert result.error == (
            "Tool denied: plugin 'policy', which checks calls before they run, is being "
            "reloaded and the reload did not finish within 0.2 seconds (the tools service's "
            "reload_wait); the call was refused, not run unchecked: try again, and see the "
            "host log if it persists"
        )
        latch.released.set()
        assert (await reloads.next()).ok
        result = await host.tools.execute({"name": "add", "args": {"a": 1, "b": 2}})
        assert result.error == "Tool denied: v2 says no"


PROVIDER = """
class Store:
    version = {version!r}


def apply(ctx):
    ctx.provide("store", Store())
"""

DEPENDENT = """
from harness import Ask, tool

inject = ["tools", "store"]


def apply(ctx):
    store = ctx.store

    @tool
    async def peek() -> str:
        "The store's version."
        return store.version

    async def check(call, next):
        if call.name == "write_text_file":
            return Ask("the dependent asks")
        return await next()

    ctx.tools.register(peek)
    ctx.on("tools/pre-execute", check)
"""


async def test_a_reloaded_providers_dependents_are_held_too(tmp_path: Path) -> None:
    """Reloading a plugin that provides a service unloads and re-applies its dependents in
    the same transaction: their tools are never missing and their checks never skipped."""
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    provider = plugins / "store.py"
    write(provider, PROVIDER, version="v0")
    write(plugins / "dependent.py", DEPENDENT)
    write(plugins / "writer.py", WRITER, root=str(tmp_path))
    (tmp_path / "cordis.yml").write_text(
        "- { id: store, name: ./plugins/store.py }\n"
        "- { id: dependent, name: ./plugins/dependent.py }\n"
        "- { id: writer, name: ./plugins/writer.py }\n"
    )
    results: list[ToolResult] = []
    async with Host(tmp_path / "cordis.yml", watch=True) as host:
        host.ctx.provide("approval", Denier())
        reloads = Reloads(host)
        stop = anyio.Event()

        async def caller(call: dict[str, Any]) -> None:
            while not stop.is_set():
                results.append(await host.tools.execute(call))
                await anyio.lowlevel.checkpoint()

        async def final_is_live() -> bool:
            return bool((await host.tools.execute({"name": "peek"})).result == "final")

        async with anyio.create_task_group() as group:
            for _ in range(4):
                group.start_soon(caller, {"name": "peek"})
                group.start_soon(
                    caller, {"name": "write_text_file", "args": {"path": "x", "content": "x"}}
                )
            with anyio.fail_after(60):
                for step in range(30):
                    write(provider, PROVIDER, version=f"v{step + 1}")
                    await anyio.sleep(PACE)
                write(provider, PROVIDER, version="final")
                await reloads.until(final_is_live, seconds=30)
            stop.set()
    codes = Counter(result.code for result in results if result.name == "peek")
    assert set(codes) == {None}, codes
    denied = Counter(result.error for result in results if result.name == "write_text_file")
    assert set(denied) == {"Tool denied: the dependent asks (approval was refused)"}, denied
    assert not (tmp_path / "x").exists()
    assert sum(1 for report in reloads.reports if report.ok) >= 5


FRAGILE = """
from pathlib import Path

from harness import Ask

FLAG = Path({flag!r})


def apply(ctx):
    FLAG.read_text()  # raises while the flag file is missing
    {broken}

    async def check(call, next):
        if call.name == "write_text_file":
            return Ask("fragile asks")
        return await next()

    ctx.on("tools/pre-execute", check)
"""


async def test_a_checker_whose_rollback_fails_too_refuses_calls_until_it_is_back(
    tmp_path: Path,
) -> None:
    """The new version of a plugin that checks calls fails, and so does the old one put
    back (its apply depends on a file now gone): its checks are gone, so every call is
    refused, not run unchecked, until the entry is active again or switched off."""
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    flag = tmp_path / "flag.txt"
    flag.write_text("on")
    source = plugins / "fragile.py"
    write(source, FRAGILE, flag=str(flag), broken="")
    adder(plugins / "add.py", "v1")
    write(plugins / "writer.py", WRITER, root=str(tmp_path))
    config = tmp_path / "cordis.yml"
    entries = "- { id: add, name: ./plugins/add.py }\n- { id: writer, name: ./plugins/writer.py }\n"
    config.write_text(entries + "- { id: fragile, name: ./plugins/fragile.py }\n")
    add = {"name": "add", "args": {"a": 1, "b": 2}}
    write_x = {"name": "write_text_file", "args": {"path": "x", "content": "x"}}
    async with Host(config, watch=True) as host:
        host.ctx.provide("approval", Denier())
        reloads = Reloads(host)
        assert (await host.tools.execute(add)).ok
        flag.unlink()
        write(source, FRAGILE, flag=str(flag), broken="raise ValueError('broken')")
        report = await reloads.next()
        assert not report.ok
        assert [entry.state for entry in host.status() if entry.id == "fragile"] == ["failed"]
        refusal = (
            "Tool denied: every call is checked by a plugin that failed to reload (its "
            "previous version too), and plugin 'fragile', which decides it, is not loaded "
            "right now (reloading or failed); calls are refused until it is back"
        )
        for call in (write_x, add):
            result = await host.tools.execute(call)
            assert (result.code, result.error) == ("denied", refusal)
        flag.write_text("on")  # fixed: the entry comes back, and its checks with it
        write(source, FRAGILE, flag=str(flag), broken="")
        assert (await reloads.next()).ok
        assert (await host.tools.execute(add)).result == "3 v1"
        assert (await host.tools.execute(write_x)).error == (
            "Tool denied: fragile asks (approval was refused)"
        )
        flag.unlink()  # broken again, then switched off in the config: calls run again
        write(source, FRAGILE, flag=str(flag), broken="raise ValueError('broken')")
        assert not (await reloads.next()).ok
        assert (await host.tools.execute(add)).code == "denied"
        config.write_text(
            entries + "- { id: fragile, name: ./plugins/fragile.py, enabled: false }\n"
        )
        assert (await reloads.next()).ok
        assert (await host.tools.execute(add)).result == "3 v1"
    assert not (tmp_path / "x").exists()
