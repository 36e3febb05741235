"""The policy fails closed: what it gated stays refused while it is not loaded."""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

from harness import Context, Host, ToolCall, ToolResult, ToolsService, define_tool
from harness.reload import ReloadReport

from .conftest import ROOT
from .test_policy import policy_module

pytestmark = pytest.mark.anyio

GATE = (
    ", and plugin 'policy', which decides it, is not loaded right now (reloading or failed); "
    "calls are refused until it is back"
)


class Recorder:
    """An approval service approving every call, remembering which."""

    def __init__(self) -> None:
        self.approved: set[str] = set()

    async def request(self, call: ToolCall, reason: str) -> bool:
        self.approved.add(call.args["path"])
        return True


async def test_tools_the_policy_gated_are_refused_while_it_is_unloaded() -> None:
    ran: list[str] = []

    def plugin(ctx: Context) -> None:
        for tool in ("write", "erase", "echo"):
            ctx.tools.register(
                define_tool(name=tool, description=tool, execute=lambda a, t=tool: ran.append(t))
            )

    plugin.inject = ["tools"]  # type: ignore[attr-defined]
    rules = {"rules": {"write": "ask", "erase": "deny"}}
    async with Context() as root:
        await root.plugin(ToolsService)
        await root.plugin(plugin)
        root.provide("approval", Recorder())
        policy = await root.plugin(policy_module(), rules, name="policy")

        async def call(name: str) -> ToolResult:
            result: ToolResult = await root.tools.execute(ToolCall("1", name, {"path": name}))
            return result

        assert (await call("write")).ok
        await policy.dispose()
        write, erase, echo = await call("write"), await call("erase"), await call("echo")
        assert write.code == "denied"
        assert write.error == (
            "Tool denied: the policy asks before write runs (rule 'write')" + GATE
        )
        assert erase.error == "Tool denied: the policy forbids erase (rule 'erase')" + GATE
        assert echo.ok  # what the policy allowed stays allowed
        assert ran == ["write", "echo"]

        again = await root.plugin(policy_module(), {"rules": {"erase": "deny"}}, name="policy")
        assert (await call("write")).ok  # the new policy decides now
        assert (await call("erase")).error == (
            "Tool denied: the policy forbids erase (rule 'erase')"
        )
        await again.update({"rules": {"erase": "deny", "echo": "deny"}})
        assert (await call("echo")).code == "denied"
        assert ran == ["write", "echo", "write"]


async def test_a_policy_that_fails_to_apply_keeps_its_tools_refused() -> None:
    async with Context() as root:
        await root.plugin(ToolsService)
        await root.plugin(
            lambda ctx: ctx.tools.register(
                define_tool(name="write", description="w", execute=lambda a: "ran")
            ),
            inject=["tools"],
        )
        policy = await root.plugin(policy_module(), {"rules": {"write": "deny"}}, name="policy")
        with pytest.raises(Exception, match="invalid config"):
            await policy.update({"rules": {"write": "maybe"}})  # the old config keeps running
        assert (await root.tools.execute(ToolCall("1", "write"))).error == (
            "Tool denied: the policy forbids write (rule 'write')"
        )


async def test_no_gated_call_runs_unapproved_while_policy_py_is_edited(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    monkeypatch.setenv("HARNESS_WORKSPACE", str(workspace))
    (tmp_path / "plugins").mkdir()
    policy = tmp_path / "plugins" / "policy.py"
    shutil.copy(ROOT / "plugins" / "policy.py", policy)
    (tmp_path / "cordis.yml").write_text(
        "- { id: tools, name: harness:tools }\n"
        f"- id: write_text_file\n  name: {ROOT / 'plugins' / 'write_text_file.py'}\n"
        f"  config: {{ root: {workspace} }}\n"
        "- { id: policy, name: ./plugins/policy.py, config: { rules: { write_text_file: ask } } }\n"
    )
    recorder = Recorder()
    results: list[ToolResult] = []
    async with Host(tmp_path / "cordis.yml", watch=True) as host:
        host.ctx.provide("approval", recorder)
        reloaded: list[ReloadReport] = []
        arrived = anyio.Event()

        def report(item: ReloadReport) -> None:
            nonlocal arrived
            reloaded.append(item)
            arrived.set()

        host.ctx.on("reload/done", report)
        host.ctx.on("reload/failed", report)
        stop = anyio.Event()
        counter = itertools.count()

        async def worker() -> None:
            while not stop.is_set():
                path = f"f{next(counter)}.txt"
                results.append(
                    await host.tools.execute(
                        ToolCall(path, "write_text_file", {"path": path, "content": "x"})
                    )
                )
                # A refused call returns without awaiting anything: let the reload run.
                await anyio.lowlevel.checkpoint()

        async with anyio.create_task_group() as group:
            for _ in range(4):
                group.start_soon(worker)
            for edit in range(5):
                arrived = anyio.Event()
                policy.write_text(policy.read_text() + f"\n# edit {edit}\n")
                with anyio.fail_after(20):
                    await arrived.wait()
                assert reloaded[-1].ok, reloaded[-1]
                assert reloaded[-1].entries == ["policy"]
            stop.set()
    assert len(reloaded) == 5
    written = {item.name for item in workspace.iterdir()}
    assert written <= recorder.approved  # nothing was written without an approval
    for result in results:
        assert result.ok or result.error == (
            "Tool denied: the policy asks before write_text_file runs "
            "(rule 'write_text_file')" + GATE
        ), result
    assert any(result.ok for result in results)
