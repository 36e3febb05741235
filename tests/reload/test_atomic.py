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
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from anyio.abc import TaskGroup

from harness import Host, ToolCall, ToolResult

from .test_hot_reload import Reloads

pytestmark = pytest.mark.anyio

Call = dict[str, Any] | Callable[[], ToolCall]
"""What a caller calls: one call made again and again, or a function making each one."""

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


ADD_CALL = {"name": "add", "args": {"a": 1, "b": 2}}
WRITE_X = {"name": "write_text_file", "args": {"path": "x", "content": "x"}}


@pytest.fixture
def plugins(tmp_path: Path) -> Path:
    """The project's plugins folder (``tmp_path/plugins``), made."""
    folder = tmp_path / "plugins"
    folder.mkdir()
    return folder


def entry(name: str, more: str = "") -> str:
    """The cordis.yml line of ``plugins/<name>.py``, with the id ``name`` (``more``: further
    keys, as ``, enabled: false``)."""
    return f"- {{ id: {name}, name: ./plugins/{name}.py{more} }}\n"


def cordis(folder: Path, *names: str, first: str = "") -> Path:
    """``folder/cordis.yml``: ``first``, then one :func:`entry` per name, in order."""
    config = folder / "cordis.yml"
    config.write_text(first + "".join(entry(name) for name in names))
    return config


@asynccontextmanager
async def watched(config: Path, **services: Any) -> AsyncIterator[tuple[Host, Reloads]]:
    """A Host on ``config`` with the real watcher, ``services`` provided, its reloads read."""
    async with Host(config, watch=True) as host:
        for name, service in services.items():
            host.ctx.provide(name, service)
        yield host, Reloads(host)


class Callers:
    """Tasks that call tools in a loop until :attr:`stop`, every result kept in order."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.results: list[ToolResult] = []
        self.stop = anyio.Event()

    def start(self, group: TaskGroup, count: int, *calls: Call) -> None:
        """``count`` callers of each of ``calls`` (a call, or a function making each one)."""
        for _ in range(count):
            for call in calls:
                group.start_soon(self._call, call)

    async def _call(self, call: Call) -> None:
        while not self.stop.is_set():
            made = call() if callable(call) else call
            self.results.append(await self.host.tools.execute(made))
            await anyio.lowlevel.checkpoint()  # a denial awaits nothing: let others run


async def edit_while_calling(
    rewrite: Callable[[str, bool], None], calls: list[ToolResult], finals: Any, reloads: Reloads
) -> int:
    """Rewrite the source (``rewrite(version, broken)``: ``v1``, ``v2``... every tenth one
    broken) at least EDITS times, and until CALLS calls were made; then write ``final`` and
    wait until ``finals()`` says it is live. Returns the edits made."""
    step = 0
    with anyio.fail_after(120):
        while step < EDITS or len(calls) < CALLS:
            step += 1
            rewrite(f"v{step}", step % 10 == 0)
            await anyio.sleep(PACE)
        rewrite("final", False)
        await reloads.until(finals, seconds=30)
    return step


async def test_no_call_runs_unchecked_while_the_policy_is_edited(
    tmp_path: Path, plugins: Path
) -> None:
    """Issue #21's race: a policy asks before write_text_file, the approver always denies,
    the policy's source is rewritten about 100 times in 3 s while four tasks write in a loop;
    not one write runs, and the last edit goes live."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    source = plugins / "policy.py"
    policy(source, "v0")
    write(plugins / "writer.py", WRITER, root=str(workspace))
    denier = Denier()
    async with watched(cordis(tmp_path, "writer", "policy"), approval=denier) as (host, reloads):
        callers = Callers(host)
        results = callers.results
        counter = itertools.count()

        def new_file() -> ToolCall:
            path = f"f{next(counter)}.txt"
            return ToolCall(path, "write_text_file", {"path": path, "content": "x"})

        async def final_is_live() -> bool:
            return bool(results) and (results[-1].error or "").startswith(
                "Tool denied: policy final"
            )

        async with anyio.create_task_group() as group:
            callers.start(group, 4, new_file)
            edits = await edit_while_calling(
                partial(policy, source), results, final_is_live, reloads
            )
            callers.stop.set()
    written = sorted(item.name for item in workspace.iterdir())
    codes = Counter(result.code for result in results)
    assert written == [], f"{len(written)} of {len(results)} writes ran without approval"
    assert codes == {"denied": len(results)}, codes
    assert len(results) >= CALLS
    assert denier.asked == len(results)  # every call was asked about: none slipped past
    assert edits >= EDITS
    assert sum(1 for report in reloads.reports if report.ok) >= 10
    assert any(not report.ok for report in reloads.reports)  # the broken edits rolled back


async def test_no_caller_finds_the_tool_missing_while_it_is_edited(
    tmp_path: Path, plugins: Path
) -> None:
    """Issue #21's load case in process: 16 callers of ``add`` while add.py is edited about
    100 times (every tenth edit broken); no call gets ``unknown_tool``, every call answers,
    and the last edit goes live."""
    source = plugins / "add.py"
    adder(source, "v0")
    async with watched(cordis(tmp_path, "add")) as (host, reloads):
        callers = Callers(host)
        results = callers.results

        async def final_is_live() -> bool:
            return bool(results) and results[-1].result == "3 final"

        async with anyio.create_task_group() as group:
            callers.start(group, 16, ADD_CALL)
            await edit_while_calling(partial(adder, source), results, final_is_live, reloads)
            callers.stop.set()
    codes = Counter(result.code for result in results)
    assert codes == {None: len(results)}, codes
    assert len(results) >= CALLS
    assert {result.result for result in results} <= {f"3 v{i}" for i in range(10_000)} | {"3 final"}
    assert sum(1 for report in reloads.reports if report.ok) >= 10


async def test_a_broken_edit_keeps_calls_answering_on_the_old_version(
    tmp_path: Path, plugins: Path
) -> None:
    """A rollback is atomic too: the tool and the policy each get an edit whose apply
    raises; calls made meanwhile wait, then answer on (and are checked by) the old version."""
    adder(plugins / "add.py", "v1")
    policy(plugins / "policy.py", "v1")
    write(plugins / "writer.py", WRITER, root=str(tmp_path))
    config = cordis(tmp_path, "add", "writer", "policy")
    async with watched(config, approval=Denier()) as (host, reloads):
        callers = Callers(host)
        async with anyio.create_task_group() as group:
            callers.start(group, 4, ADD_CALL, WRITE_X)
            adder(plugins / "add.py", "v2", broken=True)
            report = await reloads.next()
            assert not report.ok
            assert report.entries == ["add"]
            policy(plugins / "policy.py", "v2", broken=True)
            report = await reloads.next()
            assert not report.ok
            assert report.entries == ["policy"]
            callers.stop.set()
    answers = Counter((result.code, result.result or result.error) for result in callers.results)
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


def hanging_config(folder: Path, *names: str) -> Path:
    """A cordis.yml of ``names`` after a tools service that waits 0.2 s for a reload."""
    return cordis(
        folder, *names, first="- { id: tools, name: harness:tools, config: { reload_wait: 0.2 } }\n"
    )


async def test_a_reload_that_hangs_past_the_bound_refuses_its_tools_calls(
    tmp_path: Path, plugins: Path
) -> None:
    """The tool's entry hangs in its new apply: a call waits ``reload_wait`` seconds, then
    gets a clear ``timeout``; once the reload finishes, calls run on the new version."""
    source = plugins / "add.py"
    adder(source, "v1")
    latch = Latch()
    async with watched(hanging_config(tmp_path, "add"), latch=latch) as (host, reloads):
        adder(source, "v2", before=HANG, inject=', "latch"')
        with anyio.fail_after(15):
            await latch.entered.wait()  # the transaction has begun: v2's apply hangs
        assert host.tools.get("add") is None
        with anyio.fail_after(10):  # bounded: never a hang
            result = await host.tools.execute(ADD_CALL)
        assert result.code == "timeout"
        assert result.error == (
            "Tool add is being reloaded (plugin 'add') and the reload did not finish within "
            "0.2 seconds (the tools service's reload_wait); the call did not run: try again, "
            "and see the host log if it persists"
        )
        latch.released.set()
        assert (await reloads.next()).ok
        result = await host.tools.execute(ADD_CALL)
        assert result.result == "3 v2"


async def test_a_checker_that_hangs_in_its_reload_refuses_every_call(
    tmp_path: Path, plugins: Path
) -> None:
    """A plugin listening on tools/pre-execute hangs in its new apply: calls to any tool are
    refused after ``reload_wait``, not run unchecked; then the new checks apply."""
    adder(plugins / "add.py", "v1")
    source = plugins / "policy.py"
    source.write_text(
        "async def apply(ctx):\n    ctx.on('tools/pre-execute', lambda call, next: next())\n"
    )
    latch = Latch()
    async with watched(hanging_config(tmp_path, "add", "policy"), latch=latch) as (host, reloads):
        assert (await host.tools.execute(ADD_CALL)).ok
        source.write_text(
            "from harness import Deny\n\ninject = ['latch']\n\n\nasync def apply(ctx):\n"
            f"    {HANG}\n    ctx.on('tools/pre-execute', lambda call, next: Deny('v2 says no'))\n"
        )
        with anyio.fail_after(15):
            await latch.entered.wait()
        assert host.ctx.bus.count("tools/pre-execute") == 0  # no checks: none may run
        with anyio.fail_after(10):
            result = await host.tools.execute(ADD_CALL)
        assert result.code == "denied"
        assert result.error == (
            "Tool denied: plugin 'policy', which checks calls before they run, is being "
            "reloaded and the reload did not finish within 0.2 seconds (the tools service's "
            "reload_wait); the call was refused, not run unchecked: try again, and see the "
            "host log if it persists"
        )
        latch.released.set()
        assert (await reloads.next()).ok
        result = await host.tools.execute(ADD_CALL)
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


async def test_a_reloaded_providers_dependents_are_held_too(tmp_path: Path, plugins: Path) -> None:
    """Reloading a plugin that provides a service unloads and re-applies its dependents in
    the same transaction: their tools are never missing and their checks never skipped."""
    provider = plugins / "store.py"
    write(provider, PROVIDER, version="v0")
    write(plugins / "dependent.py", DEPENDENT)
    write(plugins / "writer.py", WRITER, root=str(tmp_path))
    config = cordis(tmp_path, "store", "dependent", "writer")
    async with watched(config, approval=Denier()) as (host, reloads):
        callers = Callers(host)

        async def final_is_live() -> bool:
            return bool((await host.tools.execute({"name": "peek"})).result == "final")

        async with anyio.create_task_group() as group:
            callers.start(group, 4, {"name": "peek"}, WRITE_X)
            with anyio.fail_after(60):
                for step in range(30):
                    write(provider, PROVIDER, version=f"v{step + 1}")
                    await anyio.sleep(PACE)
                write(provider, PROVIDER, version="final")
                await reloads.until(final_is_live, seconds=30)
            callers.stop.set()
    results = callers.results
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
    tmp_path: Path, plugins: Path
) -> None:
    """The new version of a plugin that checks calls fails, and so does the old one put
    back (its apply depends on a file now gone): its checks are gone, so every call is
    refused, not run unchecked, until the entry is active again or switched off."""
    flag = tmp_path / "flag.txt"
    flag.write_text("on")
    source = plugins / "fragile.py"
    write(source, FRAGILE, flag=str(flag), broken="")
    adder(plugins / "add.py", "v1")
    write(plugins / "writer.py", WRITER, root=str(tmp_path))
    config = cordis(tmp_path, "add", "writer", "fragile")
    add, write_x = ADD_CALL, WRITE_X
    async with watched(config, approval=Denier()) as (host, reloads):
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
        config.write_text(entry("add") + entry("writer") + entry("fragile", ", enabled: false"))
        assert (await reloads.next()).ok
        assert (await host.tools.execute(add)).result == "3 v1"
    assert not (tmp_path / "x").exists()
