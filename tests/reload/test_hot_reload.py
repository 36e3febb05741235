"""Hot reload under a running Host(watch=True): real files, real watcher, waits on events."""

from __future__ import annotations

import random
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from harness import Host
from harness.reload import ReloadReport
from harness.service import unwrap

pytestmark = pytest.mark.anyio

VERSIONED = """
from harness import define_tool

inject = ["tools"]
{prelude}

def apply(ctx, config):
    {before}
    ctx.tools.register(
        define_tool(name="{tool}", description="d", execute=lambda args: {value})
    )
"""


def plugin(path: Path, tool: str, value: str, prelude: str = "", before: str = "pass") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        textwrap.dedent(VERSIONED).format(tool=tool, value=value, prelude=prelude, before=before)
    )


class Reloads:
    """Collects reload reports and waits for the next one."""

    def __init__(self, host: Host) -> None:
        self.reports: list[ReloadReport] = []
        self._arrived = anyio.Event()
        host.ctx.on("reload/done", self._add)
        host.ctx.on("reload/failed", self._add)

    def _add(self, report: ReloadReport) -> None:
        self.reports.append(report)
        self._arrived.set()

    async def next(self, seconds: float = 15) -> ReloadReport:
        """The next report to arrive."""
        with anyio.fail_after(seconds):
            await self._arrived.wait()
        self._arrived = anyio.Event()
        return self.reports[-1]

    async def until(self, check: Any, seconds: float = 20) -> None:
        """Wait for reports until ``check()`` holds."""
        with anyio.fail_after(seconds):
            while not await check():
                await self.next(seconds)


async def call(host: Host, name: str) -> Any:
    result = await host.tools.execute({"name": name})
    return result.result if result.ok else result.code


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[tuple[Host, Reloads, Path]]:
    plugin(tmp_path / "plugins" / "a.py", "a", "'a1'")
    (tmp_path / "cordis.yml").write_text("- { id: a, name: ./plugins/a.py }\n")
    async with Host(tmp_path / "cordis.yml", watch=True) as host:
        yield host, Reloads(host), tmp_path


async def test_editing_a_plugin_changes_its_tool(world: tuple[Host, Reloads, Path]) -> None:
    host, reloads, root = world
    assert await call(host, "a") == "a1"
    plugin(root / "plugins" / "a.py", "a", "'a2'")
    report = await reloads.next()
    assert report.ok
    assert report.entries == ["a"]
    assert report.changed == ["a"]
    assert await call(host, "a") == "a2"


async def test_shared_helper_reloads_its_importers_and_no_other(tmp_path: Path) -> None:
    helper = tmp_path / "plugins" / "helper.py"
    helper.parent.mkdir(parents=True)
    helper.write_text("VALUE = 'h1'\n")
    prelude = "from . import helper"
    plugin(tmp_path / "plugins" / "one.py", "one", "helper.VALUE", prelude)
    plugin(
        tmp_path / "plugins" / "two.py",
        "two",
        "'two:' + helper.VALUE",
        "from .helper import VALUE as _v\nfrom . import helper",
    )
    plugin(tmp_path / "plugins" / "other.py", "other", "'other'")
    (tmp_path / "cordis.yml").write_text(
        "- { id: one, name: ./plugins/one.py }\n"
        "- { id: two, name: ./plugins/two.py }\n"
        "- { id: other, name: ./plugins/other.py }\n"
    )
    async with Host(tmp_path / "cordis.yml", watch=True) as host:
        reloads = Reloads(host)
        other_fiber = host.status()
        helper.write_text("VALUE = 'h2'\n")
        report = await reloads.next()
        assert report.entries == ["one", "two"]
        assert sorted(report.changed) == ["one", "two"]
        assert await call(host, "one") == "h2"
        assert await call(host, "two") == "two:h2"
        assert await call(host, "other") == "other"
        assert other_fiber[2].state == "active"


async def test_syntax_error_keeps_the_old_tool_and_reports_the_line(
    world: tuple[Host, Reloads, Path],
) -> None:
    host, reloads, root = world
    (root / "plugins" / "a.py").write_text("from harness import define_tool\n\ndef apply(ctx:\n")
    report = await reloads.next()
    assert not report.ok
    [problem] = report.errors
    assert problem.entry == "a"
    assert problem.message.startswith("syntax error in plugin: ")
    assert problem.message.endswith(f"({root / 'plugins' / 'a.py'}:3)")
    assert await call(host, "a") == "a1"
    assert host.status()[0].state == "active"
    plugin(root / "plugins" / "a.py", "a", "'fixed'")
    report = await reloads.next()
    assert report.ok
    assert await call(host, "a") == "fixed"
    assert host.status()[0].error is None


async def test_raising_apply_rolls_back(world: tuple[Host, Reloads, Path]) -> None:
    host, reloads, root = world
    plugin(root / "plugins" / "a.py", "a", "'a2'", before="raise RuntimeError('no')")
    report = await reloads.next()
    assert not report.ok
    assert report.errors[0].message.startswith("apply raised RuntimeError: no (")
    assert await call(host, "a") == "a1"
    assert host.status()[0].state == "active"


async def test_config_edits_add_and_disable_entries(world: tuple[Host, Reloads, Path]) -> None:
    host, reloads, root = world
    plugin(root / "plugins" / "b.py", "b", "'b1'")
    config = root / "cordis.yml"
    config.write_text(config.read_text() + "- { id: b, name: ./plugins/b.py }\n")
    report = await reloads.next()
    assert report.config
    assert report.added == ["b"]
    assert await call(host, "b") == "b1"
    config.write_text(config.read_text().replace("b.py }", "b.py, enabled: false }"))
    report = await reloads.next()
    assert report.removed == ["b"]
    assert await call(host, "b") == "unknown_tool"
    plugin(root / "plugins" / "b.py", "b", "'b2'")  # still watched? it is disabled: no reload
    config.write_text(config.read_text().replace(", enabled: false", ""))
    await reloads.until(lambda: _equals(host, "b", "b2"))


async def _equals(host: Host, name: str, value: Any) -> bool:
    return bool(await call(host, name) == value)


async def test_a_broken_plugin_recovers_when_fixed(tmp_path: Path) -> None:
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "a.py").write_text("def apply(ctx:\n")
    (tmp_path / "cordis.yml").write_text("- { id: a, name: ./plugins/a.py }\n")
    async with Host(tmp_path / "cordis.yml", watch=True) as host:
        reloads = Reloads(host)
        assert host.status()[0].state == "failed"
        plugin(tmp_path / "plugins" / "a.py", "a", "'ok'")
        await reloads.until(lambda: _equals(host, "a", "ok"))
        assert host.status()[0].state == "active"


async def test_burst_of_edits_ends_on_the_last_version(world: tuple[Host, Reloads, Path]) -> None:
    host, reloads, root = world
    for version in range(20):
        plugin(root / "plugins" / "a.py", "a", repr(f"v{version}"))
    await reloads.until(lambda: _equals(host, "a", "v19"))
    assert all(report.ok for report in reloads.reports)
    assert len(reloads.reports) < 20  # coalesced


async def test_calls_in_flight_finish_on_their_version(tmp_path: Path) -> None:
    (tmp_path / "plugins").mkdir()
    slow = """
import anyio
from harness import define_tool

inject = ["tools"]
GATE = anyio.Event()


def apply(ctx):
    async def run(args):
        if args.get("wait"):
            await GATE.wait()
        return "{version}"

    ctx.tools.register(define_tool(name="slow", description="d", execute=run, timeout=None))
    return GATE.set
"""
    file = tmp_path / "plugins" / "slow.py"
    file.write_text(slow.format(version="old"))
    (tmp_path / "cordis.yml").write_text("- { id: slow, name: ./plugins/slow.py }\n")
    async with Host(tmp_path / "cordis.yml", watch=True) as host:
        reloads = Reloads(host)
        results: list[Any] = []

        async def in_flight() -> None:
            results.append(await call(host, "slow"))

        async def waiting() -> None:
            results.append(
                (await host.tools.execute({"name": "slow", "args": {"wait": True}})).result
            )

        async with anyio.create_task_group() as group:
            group.start_soon(waiting)
            await anyio.lowlevel.checkpoint()
            file.write_text(slow.format(version="new"))
            await reloads.next()
            group.start_soon(in_flight)
        assert sorted(results) == ["new", "old"]


async def test_changes_to_harness_itself_are_ignored_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import harness.reload

    fake = tmp_path / "fake_harness"
    plugin(fake / "inside.py", "inside", "'v1'")
    monkeypatch.setattr(harness.reload, "HARNESS_DIR", fake.resolve())
    (tmp_path / "cordis.yml").write_text("- { id: inside, name: ./fake_harness/inside.py }\n")
    async with Host(tmp_path / "cordis.yml", watch=True) as host:
        reloads = Reloads(host)
        plugin(fake / "inside.py", "inside", "'v2'")
        report = await reloads.next()
        assert report.ignored == [(fake / "inside.py").resolve()]
        assert report.entries == []
        assert await call(host, "inside") == "v1"
    assert any("restart harness" in record.getMessage() for record in caplog.records)


async def test_chaos_every_call_gets_one_result(tmp_path: Path) -> None:
    """Thousands of calls while random edits land; nothing raises, the end state is right."""
    plugin(tmp_path / "plugins" / "c.py", "c", "'c0'")
    config = tmp_path / "cordis.yml"
    on = "- { id: c, name: ./plugins/c.py }\n"
    config.write_text(on)
    rng = random.Random(7)
    async with Host(config, watch=True) as host:
        reloads = Reloads(host)
        sent = 0
        results: list[Any] = []
        stop = anyio.Event()

        async def caller() -> None:
            nonlocal sent
            while not stop.is_set():
                sent += 1
                result = await host.tools.execute({"name": "c"})
                results.append(result.code or result.result)
                await anyio.lowlevel.checkpoint()

        last_valid = "c0"
        async with anyio.create_task_group() as group:
            for _ in range(3):
                group.start_soon(caller)
            for step in range(36):
                kind = rng.choice(["valid", "valid", "syntax", "raises", "toggle"])
                if kind == "valid":
                    last_valid = f"c{step + 1}"
                    plugin(tmp_path / "plugins" / "c.py", "c", repr(last_valid))
                elif kind == "syntax":
                    (tmp_path / "plugins" / "c.py").write_text("def apply(ctx:\n")
                elif kind == "raises":
                    plugin(tmp_path / "plugins" / "c.py", "c", "'x'", before="raise ValueError()")
                else:
                    config.write_text(on.replace("}", ", enabled: false }"))
                    await anyio.sleep(rng.random() / 20)
                    config.write_text(on)
                await anyio.sleep(rng.random() / 10)
            plugin(tmp_path / "plugins" / "c.py", "c", repr("final"))
            await reloads.until(lambda: _equals(host, "c", "final"))
            stop.set()
        assert len(results) == sent
        assert sent > 1000
        allowed = {"unknown_tool", "x", "final"} | {f"c{i}" for i in range(40)}
        assert set(results) <= allowed
        assert host.status()[0].state == "active"
        assert last_valid


async def test_reload_entries_swaps_all_or_nothing(tmp_path: Path) -> None:
    """The host's transaction on its own: a failing apply brings every old version back."""
    helper = tmp_path / "plugins" / "helper.py"
    helper.parent.mkdir(parents=True)
    helper.write_text("VALUE = 'h1'\nFAIL = False\n")
    prelude = "from . import helper"
    plugin(tmp_path / "plugins" / "one.py", "one", "helper.VALUE", prelude)
    before = "if helper.FAIL:\n        raise RuntimeError('two refuses')"
    plugin(tmp_path / "plugins" / "two.py", "two", "'two:' + helper.VALUE", prelude, before)
    (tmp_path / "cordis.yml").write_text(
        "- { id: one, name: ./plugins/one.py }\n- { id: two, name: ./plugins/two.py }\n"
    )
    async with Host(tmp_path / "cordis.yml") as host:
        assert sorted(host.sources()) == ["one", "two"]
        assert helper.resolve() in host.sources()["two"]
        helper.write_text("VALUE = 'h2'\nFAIL = True\n")
        [problem] = await host.reload_entries(["one", "two"])
        assert problem.entry == "two"
        assert "apply raised RuntimeError: two refuses" in problem.message
        assert await call(host, "one") == "h1"
        assert await call(host, "two") == "two:h1"
        assert {s.id: (s.state, s.error) for s in host.status()} == {
            "one": ("active", None),
            "two": ("active", problem.message),
        }
        helper.write_text("VALUE = 'h3'\nFAIL = False\n")
        assert await host.reload_entries(["one", "two"]) == []
        assert await call(host, "one") == "h3"
        assert await call(host, "two") == "two:h3"
        assert host.problems() == []


async def test_the_reload_service_injects_the_host(tmp_path: Path) -> None:
    from harness.reload import Reloader

    plugin(tmp_path / "plugins" / "a.py", "a", "'a1'")
    (tmp_path / "cordis.yml").write_text("- { id: a, name: ./plugins/a.py }\n")
    async with Host(tmp_path / "cordis.yml") as host:
        assert host.ctx.get("host") == host
        assert host.ctx.get("reload") is None
        fiber = await host.ctx.plugin(Reloader)
        reloads = Reloads(host)
        plugin(tmp_path / "plugins" / "a.py", "a", "'a2'")
        assert (await reloads.next()).entries == ["a"]
        assert await call(host, "a") == "a2"
        await fiber.dispose()
    async with Host(tmp_path / "cordis.yml", watch=True) as host:
        assert isinstance(unwrap(host.ctx.get("reload")), Reloader)
