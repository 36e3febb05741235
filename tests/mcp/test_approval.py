"""MCP approvals through the official client: bound to the exact call, never a fake denial.

A ``requestState`` that was moved to another call, replayed or edited is the protocol's error
-32602 (DESIGN §6b), never a result, and approves nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from harness import Host, ToolCall, ToolResult
from harness.mcp import APPROVAL_KEY, McpSurface

from ..helpers import ALL_ON, Elicitor

ACCEPT = types.ElicitResult(action="accept", content={"approve": True})

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the MCP SDK's in-memory modern transport runs on asyncio


@pytest.fixture
async def surface(config: Path, workspace: Path) -> AsyncIterator[McpSurface]:
    async with Host(config, overrides=ALL_ON) as host:
        served = McpSurface(host.ctx)
        served.attach()
        yield served


def text(result: types.CallToolResult) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


async def first_round(client: Client, args: dict[str, Any]) -> types.InputRequiredResult:
    result = await client.session.call_tool("write_text_file", args, allow_input_required=True)
    assert isinstance(result, types.InputRequiredResult), result
    return result


async def test_a_round_trip_approves_the_call_it_was_asked_for(
    surface: McpSurface, workspace: Path
) -> None:
    args = {"path": "a.txt", "content": "A"}
    async with Client(surface.server, elicitation_callback=Elicitor()) as client:
        asked = await first_round(client, args)
        assert not (workspace / "a.txt").exists()
        assert set(asked.input_requests or {}) == {APPROVAL_KEY}
        assert asked.request_state is not None
        assert asked.request_state.startswith("v1.")
        done = await client.session.call_tool(
            "write_text_file",
            args,
            input_responses={APPROVAL_KEY: ACCEPT},
            request_state=asked.request_state,
        )
    assert done.is_error is False, text(done)
    assert (workspace / "a.txt").read_text() == "A"


async def test_prefilled_input_responses_approve_nothing(
    surface: McpSurface, workspace: Path
) -> None:
    async with Client(surface.server, elicitation_callback=Elicitor()) as client:
        result = await client.session.call_tool(
            "write_text_file",
            {"path": "x.txt", "content": "pwned"},
            input_responses={APPROVAL_KEY: ACCEPT},
            allow_input_required=True,
        )
    assert isinstance(result, types.InputRequiredResult)  # asked afresh, not approved
    assert not (workspace / "x.txt").exists()


async def test_a_state_moved_to_other_arguments_approves_nothing(
    surface: McpSurface, workspace: Path
) -> None:
    async with Client(surface.server, elicitation_callback=Elicitor()) as client:
        asked = await first_round(client, {"path": "notes.txt", "content": "harmless"})
        with pytest.raises(MCPError) as refused:
            await client.session.call_tool(
                "write_text_file",
                {"path": "evil.sh", "content": "rm -rf ~"},
                input_responses={APPROVAL_KEY: ACCEPT},
                request_state=asked.request_state,
            )
    assert refused.value.code == INVALID_PARAMS
    assert refused.value.message == (
        "requestState refused: the requestState was issued for another call "
        "(tool or arguments differ)"
    )
    assert not (workspace / "evil.sh").exists()
    assert not (workspace / "notes.txt").exists()


async def test_a_replayed_state_approves_nothing(surface: McpSurface, workspace: Path) -> None:
    args = {"path": "once.txt", "content": "1"}
    async with Client(surface.server, elicitation_callback=Elicitor()) as client:
        asked = await first_round(client, args)
        state = asked.request_state
        responses: types.InputResponses = {APPROVAL_KEY: ACCEPT}
        first = await client.session.call_tool(
            "write_text_file", args, input_responses=responses, request_state=state
        )
        assert first.is_error is False, text(first)
        (workspace / "once.txt").unlink()
        with pytest.raises(MCPError) as refused:
            await client.session.call_tool(
                "write_text_file", args, input_responses=responses, request_state=state
            )
    assert refused.value.code == INVALID_PARAMS
    assert refused.value.message.endswith("was already used; call the tool again")
    assert not (workspace / "once.txt").exists()


@pytest.mark.parametrize("edit", ["flip", "first", "forged", "garbage"])
async def test_an_edited_state_approves_nothing(
    surface: McpSurface, workspace: Path, edit: str
) -> None:
    args = {"path": "e.txt", "content": "e"}
    async with Client(surface.server, elicitation_callback=Elicitor()) as client:
        asked = await first_round(client, args)
        state = asked.request_state
        assert state is not None
        if edit == "flip":
            version, body, mac = state.split(".")
            state = f"{version}.{body}.{mac[:-1]}{'A' if mac[-1] != 'A' else 'B'}"
        elif edit == "first":
            version, body, mac = state.split(".")
            state = f"{version}.{body}.{'A' if mac[0] != 'A' else 'B'}{mac[1:]}"
        elif edit == "forged":
            state = surface.seal.seal(ToolCall("1", "write_text_file", args), "rounds") + "x"
        else:
            state = "call-1"
        with pytest.raises(MCPError) as refused:
            await client.session.call_tool(
                "write_text_file",
                args,
                input_responses={APPROVAL_KEY: ACCEPT},
                request_state=state,
            )
    assert refused.value.code == INVALID_PARAMS
    assert refused.value.message.startswith("requestState refused: the requestState ")
    assert not (workspace / "e.txt").exists()


@pytest.mark.parametrize("mode", ["auto", "legacy"])
@pytest.mark.parametrize("content", [{"approve": "false"}, {"approve": 1}, {}, {"approve": "yes"}])
async def test_only_a_boolean_true_approves(
    surface: McpSurface, workspace: Path, mode: str, content: dict[str, Any]
) -> None:
    async with Client(
        surface.server, mode=mode, elicitation_callback=Elicitor(content=content)
    ) as client:
        result = await client.call_tool("write_text_file", {"path": "b.txt", "content": "b"})
    assert result.is_error is True
    assert text(result).endswith("(the user did not approve)")
    assert not (workspace / "b.txt").exists()


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_waiting_for_the_client_is_never_recorded_as_a_denial(
    surface: McpSurface, workspace: Path, mode: str
) -> None:
    seen: list[ToolResult] = []
    post: list[ToolResult] = []

    async def audit(call: ToolCall, result: ToolResult, next: Any) -> Any:
        post.append(result)
        return await next()

    surface.root.on("tools/result", lambda call, result: seen.append(result))
    surface.root.on("tools/post-execute", audit)
    async with Client(surface.server, mode=mode, elicitation_callback=Elicitor()) as client:
        result = await client.call_tool("write_text_file", {"path": "w.txt", "content": "w"})
    assert result.is_error is False, text(result)
    codes = [item.code for item in seen]
    assert "denied" not in codes
    assert codes == (["approval_pending", None] if mode == "auto" else [None])
    assert [item.code for item in post] == [None]


async def test_the_prompt_shows_bidirectional_and_control_characters(
    surface: McpSurface, workspace: Path
) -> None:
    elicitor = Elicitor(action="decline")
    async with Client(surface.server, elicitation_callback=elicitor) as client:
        result = await client.call_tool(
            "write_text_file", {"path": "invoice\u202etxt.sh", "content": "x\x1b[8m"}
        )
    assert result.is_error is True
    [message] = elicitor.asked
    assert "\u202e" not in message
    assert "\x1b" not in message
    assert "invoice\\u202etxt.sh" in message
    assert "\\u001b[8m" in message
