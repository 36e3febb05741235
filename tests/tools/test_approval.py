"""The approval contract: answers, the pending / resumed path, call-bound seals, prompts."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from harness import Ask, Context, Service, ToolCall, ToolResult, define_tool
from harness.tools.approval_contract import (
    ApprovalService,
    Approved,
    CallSeal,
    Denied,
    Pending,
    Resumed,
    SealError,
    prompt,
    visible,
)
from harness.tools.call_context import ApproverClient, CallContext

from .conftest import tool_plugin

pytestmark = pytest.mark.anyio

RAN: list[Any] = []


def _write(args: dict[str, Any]) -> str:
    RAN.append(args)
    return "written"


WRITE = define_tool(
    name="write",
    description="Write",
    parameters={"path": {"type": "string", "required": True}},
    execute=_write,
)


class Answer(Service):
    """An ``approval`` service answering what it is told to."""

    def __init__(self, ctx: Context, config: Any = None) -> None:
        super().__init__(ctx, "approval")
        self.answer: Any = True
        self.asked: list[tuple[str, str]] = []

    async def request(self, call: ToolCall, reason: str) -> Any:
        self.asked.append((call.name, reason))
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer


@pytest.fixture
async def gated(root: Context) -> Context:
    RAN.clear()
    await root.plugin(tool_plugin(WRITE))
    root.on("tools/pre-execute", lambda call, next: Ask("writes files"))
    return root


async def test_the_protocol_describes_every_approval_service(root: Context) -> None:
    fiber = await root.plugin(Answer)
    assert isinstance(fiber.ctx.approval if fiber.ctx else None, ApprovalService)
    assert isinstance(Resumed(ToolCall("1", "x"), True), ApprovalService)
    assert not isinstance(object(), ApprovalService)


@pytest.mark.parametrize(
    "answer",
    [False, "true", "yes", "false", "no", 1, 0, None, [True], {"approve": True}, 1.0, Denied()],
)
async def test_only_true_or_approved_approves(gated: Context, answer: Any) -> None:
    await gated.plugin(Answer)
    gated.approval.answer = answer
    result = await gated.tools.execute(ToolCall("c", "write", {"path": "a"}))
    assert result.code == "denied"
    assert result.error == "Tool denied: writes files (approval was refused)"
    assert RAN == []


@pytest.mark.parametrize("answer", [True, Approved(), Approved("session"), Approved("always")])
async def test_true_and_approved_run_the_call(gated: Context, answer: Any) -> None:
    await gated.plugin(Answer)
    gated.approval.answer = answer
    result = await gated.tools.execute(ToolCall("c", "write", {"path": "a"}))
    assert result.ok, result.error
    assert RAN == [{"path": "a"}]


async def test_denied_reason_is_shown(gated: Context) -> None:
    await gated.plugin(Answer)
    gated.approval.answer = Denied("the user said no")
    result = await gated.tools.execute(ToolCall("c", "write", {"path": "a"}))
    assert result.error == "Tool denied: writes files (the user said no)"


async def test_a_raising_approval_service_denies(
    gated: Context, caplog: pytest.LogCaptureFixture
) -> None:
    await gated.plugin(Answer)
    gated.approval.answer = RuntimeError("broker crashed")
    result = await gated.tools.execute(ToolCall("c", "write", {"path": "a"}))
    assert result.code == "denied"
    assert result.error == (
        "Tool denied: writes files (the approval service failed; see the host log)"
    )
    assert "broker crashed" in caplog.text
    assert RAN == []


async def test_an_approval_service_that_times_out_denies(gated: Context) -> None:
    class Slow:
        async def request(self, call: ToolCall, reason: str) -> bool:
            with anyio.move_on_after(0.01):
                await anyio.sleep_forever()
            raise TimeoutError("nobody answered")

    result = await gated.tools.execute(ToolCall("c", "write", {"path": "a"}), approval=Slow())
    assert result.code == "denied"
    assert RAN == []


async def test_pending_is_an_outcome_not_a_denial(gated: Context) -> None:
    post: list[ToolResult] = []
    seen: list[ToolResult] = []

    async def audit(call: ToolCall, result: ToolResult, next: Any) -> Any:
        post.append(result)
        return await next()

    gated.on("tools/post-execute", audit)
    gated.on("tools/result", lambda call, result: seen.append(result))

    class Later:
        async def request(self, call: ToolCall, reason: str) -> Pending:
            return Pending(prompt(call, reason), data={"ask": "the client"})

    call = ToolCall("c", "write", {"path": "a"})
    result = await gated.tools.execute(call, approval=Later())
    assert result.code == "approval_pending"
    assert not result.ok
    assert result.error == "Tool write is waiting for approval: writes files"
    assert result.pending == Pending(
        'Allow the tool call write({"path": "a"})? writes files', {"ask": "the client"}
    )
    assert RAN == []
    assert post == []  # stages 2 and 3 do not run, as for a denial
    assert [item.code for item in seen] == ["approval_pending"]  # observed, never as "denied"

    resumed = await gated.tools.execute(
        ToolCall("c2", "write", {"path": "a"}), approval=Resumed(call, True)
    )
    assert resumed.ok
    assert RAN == [{"path": "a"}]
    assert [item.code for item in seen] == ["approval_pending", None]
    assert [item.code for item in post] == [None]


async def test_a_resumed_answer_approves_only_its_own_call(gated: Context) -> None:
    asked = ToolCall("c", "write", {"path": "a"})
    other = await gated.tools.execute(
        ToolCall("c", "write", {"path": "/etc/passwd"}), approval=Resumed(asked, True)
    )
    assert other.code == "denied"
    assert other.error == "Tool denied: writes files (the approval was given for another call)"
    same = await gated.tools.execute(
        ToolCall("x", "write", '{"path":  "a"}'), approval=Resumed(asked, Approved())
    )
    assert same.ok  # the same call: JSON text and a dict with equal content match
    assert RAN == [{"path": "a"}]


async def test_a_per_call_approval_beats_the_service(gated: Context) -> None:
    await gated.plugin(Answer)
    gated.approval.answer = True
    result = await gated.tools.execute(
        ToolCall("c", "write", {"path": "a"}), approval=Resumed(ToolCall("c", "write"), True)
    )
    assert result.code == "denied"
    assert gated.approval.asked == []


# -- prompts -----------------------------------------------------------------------------------


def test_prompt_shows_hidden_characters() -> None:
    call = ToolCall("c", "write", {"path": "invoice\u202egpj.exe", "note": "a\nb\x1b[2Jc\u200b"})
    shown = prompt(call, "writes files")
    assert "\u202e" not in shown
    assert "\x1b" not in shown
    assert "\u200b" not in shown
    assert "invoice\\u202egpj.exe" in shown
    assert "\\u001b[2J" in shown
    assert "\\u200b" in shown
    assert shown.startswith('Allow the tool call write({"path": "invoice\\u202egpj.exe"')
    assert visible("caf\u00e9 \u4e2d\u6587") == "caf\u00e9 \u4e2d\u6587"  # letters stay readable
    assert visible("a\u2066b\u2069\u00a0") == "a\\u2066b\\u2069\\u00a0"


# -- call seals --------------------------------------------------------------------------------


def test_a_seal_opens_once_for_its_own_call() -> None:
    seal = CallSeal(b"s" * 32)
    call = ToolCall("1", "write", {"path": "a", "n": 1})
    token = seal.seal(call)
    seal.open(token, ToolCall("2", "write", {"n": 1, "path": "a"}))  # key order does not matter
    with pytest.raises(SealError, match="already used"):
        seal.open(token, call)


@pytest.mark.parametrize(
    ("other", "why"),
    [
        (ToolCall("1", "write", {"path": "b", "n": 1}), "another call"),
        (ToolCall("1", "delete", {"path": "a", "n": 1}), "another call"),
        (ToolCall("1", "write", {"path": "a", "n": 1.5}), "another call"),
    ],
)
def test_a_seal_refuses_another_call(other: ToolCall, why: str) -> None:
    seal = CallSeal(b"s" * 32)
    token = seal.seal(ToolCall("1", "write", {"path": "a", "n": 1}))
    with pytest.raises(SealError, match=why):
        seal.open(token, other)


def test_an_edited_or_foreign_seal_is_refused() -> None:
    seal = CallSeal(b"s" * 32)
    call = ToolCall("1", "write", {"path": "a"})
    token = seal.seal(call)
    version, body, mac = token.split(".")
    edited = f"{version}.{body[:-2]}{'A' if body[-2] != 'A' else 'B'}{body[-1]}.{mac}"
    for bad in [edited, token + "x", "", "v1..", "v2." + token[3:], 42, None, "x" * 10000]:
        with pytest.raises(SealError):
            seal.open(bad, call)
    with pytest.raises(SealError, match="altered"):
        CallSeal(b"t" * 32).open(token, call)
    seal.open(token, call)  # the attempts above spent nothing


def test_a_seal_expires(monkeypatch: pytest.MonkeyPatch) -> None:
    seal = CallSeal(b"s" * 32, ttl=60)
    call = ToolCall("1", "write", {"path": "a"})
    token = seal.seal(call)
    later = time.time() + 61
    monkeypatch.setattr(time, "time", lambda: later)
    with pytest.raises(SealError, match="expired"):
        seal.open(token, call)


def test_replicas_sharing_harness_secret_open_each_others_seals(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    call = ToolCall("1", "write", {"path": "a"})
    monkeypatch.setenv("HARNESS_SECRET", "shared by the replicas")
    monkeypatch.setenv("HARNESS_STATE_DIR", str(tmp_path))  # required with the secret
    token = CallSeal().seal(call)
    CallSeal().open(token, call)
    monkeypatch.delenv("HARNESS_SECRET")
    with pytest.raises(SealError, match="altered"):
        CallSeal().open(CallSeal().seal(call), call)  # each gets its own random secret


class Says:
    """A per-call approver (what a surface passes), giving one answer and counting asks."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.asked: list[str] = []

    async def request(self, call: ToolCall, reason: str) -> Any:
        self.asked.append(call.id)
        return self.answer


async def _outer_tools(
    root: Context, started: anyio.Event, go: anyio.Event, outers: int, people: dict[str, Any]
) -> None:
    """``outer`` runs ``write`` inside itself (parent = its own id, asker = ``people[who]``
    when given), once ``go`` is set, and ends when ``outers`` of them have made their inner
    call."""
    made: list[str] = []
    everyone = anyio.Event()

    async def outer(args: dict[str, Any]) -> Any:
        started.set()
        await go.wait()
        asker = people.get(args.get("who", ""))
        inner = ToolCall(f"{args['id']}/1", "write", {"path": "a"}, parent=args["id"])
        if asker is not None:
            CallContext(inner, "code", ApproverClient(asker))
        result = await root.tools.execute(inner)
        made.append(inner.id)
        if len(made) == outers:
            everyone.set()
        await everyone.wait()
        return result.code or "ok"

    root.tools.register(
        define_tool(
            name="outer",
            description="calls write inside",
            parameters={"id": {"type": "string", "required": True}, "who": {"type": "string"}},
            execute=outer,
        )
    )


async def test_the_surface_s_asker_is_recorded_on_the_call(gated: Context) -> None:
    person = Says(True)
    call = ToolCall("1", "write", {"path": "a"})
    result = await gated.tools.execute(call, approval=person)
    assert result.ok, result
    # what a program's inner calls inherit (harness.code): the context's client
    assert call.context.client.approver(call.context) is person
    assert person.asked == ["1"]


async def test_an_inner_call_asks_the_asker_it_carries(gated: Context) -> None:
    started, go = anyio.Event(), anyio.Event()
    go.set()
    outside, inside = Says(True), Says(True)
    await _outer_tools(gated, started, go, 1, {"inside": inside})
    call = ToolCall("1", "outer", {"id": "1", "who": "inside"})
    result = await gated.tools.execute(call, approval=outside)
    assert result.result == "ok", result
    assert outside.asked == ["1"]
    assert inside.asked == ["1/1"]


async def test_a_parent_id_finds_no_approver(gated: Context) -> None:
    """Two clients' requests may share an id: an inner call that names its parent by id
    only is asked of neither client's person (nobody else can answer: denied)."""
    started, go = anyio.Event(), anyio.Event()
    await _outer_tools(gated, started, go, 2, {})
    alice, bob = Says(True), Says(True)
    results: dict[str, ToolResult] = {}

    async def run(name: str, person: Says) -> None:
        call = ToolCall("1", "outer", {"id": "1"})
        results[name] = await gated.tools.execute(call, approval=person)

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(run, "alice", alice)
            group.start_soon(run, "bob", bob)
            await anyio.wait_all_tasks_blocked()
            go.set()
    assert results["alice"].result == results["bob"].result == "denied"
    assert alice.asked == bob.asked == ["1"]  # the inner calls asked nobody
