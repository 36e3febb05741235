"""Approvals over MCP: the client's user decides, through elicitation."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

import mcp_types as types

from ..tools.approval_contract import (
    ApprovalAnswer,
    Approved,
    CallSeal,
    Denied,
    Pending,
    SealError,
    prompt,
)
from ..tools.approval_requests import unanswerable
from ..tools.calls import ToolCall
from ..tools.inputs import Answer

_log = logging.getLogger("harness.mcp")
APPROVAL_KEY = "harness/approval"
Elicit = Callable[[str, dict[str, Any]], Awaitable[Any]]
"""Asks a handshake-era client's user: ``(message, requested_schema)`` to its answer."""


class CallParams(Protocol):
    """What a ``tools/call`` is asked with: the SDK's ``CallToolRequestParams``, or the fast
    path's plain params (:mod:`.http.fast_path`)."""

    @property
    def name(self) -> str: ...
    @property
    def arguments(self) -> dict[str, Any] | None: ...
    @property
    def request_state(self) -> str | None: ...
    @property
    def input_responses(self) -> Mapping[str, Any] | None: ...


APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approve": {
            "type": "boolean",
            "title": "Approve",
            "description": "Run this tool call?",
            "default": True,
        }
    },
}


class McpApproval:
    """The approval of one MCP request: the client's user decides, through elicitation.

    Handshake-era connections get an ``elicitation/create`` request while the call waits. On
    2026-07-28 connections the first round answers :class:`Pending`: the call ends as an
    ``InputRequiredResult`` whose ``requestState`` is sealed to the call's name and canonical
    arguments (:class:`~harness.tools.approval_contract.CallSeal`); the client's next round
    carries the answer in ``inputResponses`` with that state, and only then is it read. An
    answer without a valid state for this exact call, or a state used before, approves
    nothing.
    """

    def __init__(
        self,
        params: CallParams,
        seal: CallSeal,
        capabilities: types.ClientCapabilities | None,
        elicit: Elicit | None = None,
    ) -> None:
        """``elicit`` asks a handshake-era client mid-call; without it (2026-07-28) the
        question becomes an ``InputRequiredResult`` round trip."""
        self.params = params
        self.seal = seal
        self.capabilities = capabilities
        self.elicit = elicit

    async def request(self, call: ToolCall, reason: str) -> ApprovalAnswer:
        """Ask the client's user; Approved, Denied, or Pending (a later round answers)."""
        capabilities = self.capabilities
        if capabilities is None or capabilities.elicitation is None:
            return Denied(
                unanswerable(call, "this MCP client cannot ask its user (no elicitation)")
            )
        message = prompt(call, reason)
        if self.elicit is not None:
            return _accepted(await self.elicit(message, APPROVAL_SCHEMA))
        state = self.params.request_state
        if state is None:
            # A first round: ask. inputResponses sent without our state are not an answer.
            request = types.ElicitRequest(
                params=types.ElicitRequestFormParams(
                    message=message, requested_schema=APPROVAL_SCHEMA
                )
            )
            return Pending(message, request)
        try:
            self.seal.open(state, call)
        except SealError as exc:
            _log.warning("refused an MCP approval for tool %r: %s", call.name, exc)
            return Denied(str(exc))
        return _accepted((self.params.input_responses or {}).get(APPROVAL_KEY))

    async def question(self, call: ToolCall, message: str, schema: dict[str, Any]) -> Answer:
        """Put a running call's question (an upstream's form, passed on as written) to the
        client's user; ``decline`` when the client cannot be asked mid-call (no elicitation,
        or a 2026-07-28 connection, whose rounds harness does not pass on yet)."""
        capabilities = self.capabilities
        if self.elicit is None or capabilities is None or capabilities.elicitation is None:
            return Answer("decline")
        result = await self.elicit(message, schema)
        if not isinstance(result, types.ElicitResult):
            return Answer("decline")
        if result.action == "accept":
            return Answer("accept", dict(result.content or {}))
        return Answer(result.action)


def _accepted(answer: Any) -> Approved | Denied:
    """Only an accepted form whose ``approve`` is the boolean True approves."""
    if isinstance(answer, dict):
        try:
            answer = types.ElicitResult.model_validate(answer)
        except ValueError:
            return Denied("the client's answer is not an elicitation result")
    if not isinstance(answer, types.ElicitResult) or answer.action != "accept":
        return Denied("the user declined")
    if (answer.content or {}).get("approve") is not True:
        return Denied("the user did not approve")
    return Approved()
