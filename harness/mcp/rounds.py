"""Input rounds over MCP 2026-07-28: the sealed ``requestState`` and the answers it carries.

A 2026-07-28 request that needs input ends with an ``InputRequiredResult``: the requests by
key, and a ``requestState`` sealed with :class:`~harness.tools.seal.CallSeal` (HMAC under
``HARNESS_SECRET``, a nonce spent once, bound to the request's name and canonical
arguments) that carries every answer so far and the keys just asked. The client's next
request brings the state back with ``inputResponses``; :meth:`Rounds.recorded` opens it and
gives the body's context the answers in order (the state's, then the new ones), so the body
runs again from its start and each input takes its recorded answer (DESIGN §16). What the
body carried out of the round (:attr:`CallContext.carried`: a mounted tool's upstream
``requestState``) is sealed with it and given back (:meth:`Rounds.opened`).

A state that was altered, issued for another call, expired or used before is the protocol's
error -32602, never a result (DESIGN §6b); so are ``inputResponses`` that are not objects.
Answers sent without a state are taken as the answers of a first round, except an approval's:
only a state this server sealed after asking carries an approval.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, MISSING_REQUIRED_CLIENT_CAPABILITY

from ..tools.call_context import APPROVAL_KEY, CallContext
from ..tools.calls import ToolCall
from ..tools.inputs import answer_to_wire
from ..tools.seal import CallSeal, SealError
from .client import McpClient

__all__ = ["Rounds", "missing_capability"]


class Rounds:
    """Opens and seals the ``requestState`` of the requests of one server."""

    def __init__(self, seal: CallSeal) -> None:
        self.seal = seal

    def recorded(self, call: ToolCall, params: Any, purpose: str = "rounds") -> list[Any]:
        """The answers so far for ``call``: the state's, then this request's
        ``inputResponses`` to what the state says was asked. Raises ``MCPError`` -32602 for
        a state this server will not open for this call, or answers that are not objects."""
        return self.opened(call, params, purpose)[0]

    def opened(self, call: ToolCall, params: Any, purpose: str = "rounds") -> tuple[list[Any], Any]:
        """:meth:`recorded`, and what the body carried out of its last round
        (:attr:`CallContext.carried`; None when it carried nothing)."""
        responses = _wire_responses(getattr(params, "input_responses", None))
        state = getattr(params, "request_state", None)
        if state is None:
            responses.pop(APPROVAL_KEY, None)
            return ([responses] if responses else []), None
        try:
            payload = self.seal.open(state, call, purpose)
        except SealError as exc:
            raise MCPError(INVALID_PARAMS, f"requestState refused: {exc}") from None
        if not isinstance(payload, dict):
            raise MCPError(INVALID_PARAMS, "requestState refused: it carries no rounds")
        recorded = list(payload.get("recorded", []))
        asked = set(payload.get("asked", []))
        answers = dict(payload.get("partial", {}))
        answers.update((key, value) for key, value in responses.items() if key in asked)
        recorded.append(answers)
        return recorded, payload.get("carried")

    def required(
        self,
        call: ToolCall,
        ctx: CallContext,
        client: McpClient,
        requests: Mapping[str, Any],
        purpose: str = "rounds",
    ) -> types.InputRequiredResult:
        """The end of a round: ``requests`` and a state sealing every answer so far."""
        recorded = [
            {key: answer_to_wire(answer) for key, answer in entry.items()}
            for entry in ctx.recorded[: ctx.used]
        ]
        payload = {"recorded": recorded, "asked": sorted(requests), "partial": client.answered}
        if ctx.carried is not None:
            payload["carried"] = ctx.carried
        return types.InputRequiredResult(
            input_requests=dict(requests),
            request_state=self.seal.seal(call, purpose, payload),
        )


def missing_capability(what: str, client: McpClient) -> MCPError:
    """The -32021 error of a request that needed capabilities the client did not declare."""
    names = ", ".join(sorted(client.missing))
    return MCPError(
        MISSING_REQUIRED_CLIENT_CAPABILITY,
        f"{what} needs the client's {names} capability, which this client did not declare",
        {"requiredCapabilities": dict(client.missing)},
    )


def _wire_responses(responses: Any) -> dict[str, Any]:
    """``inputResponses`` as the wire's JSON, each checked to be an object."""
    if responses is None:
        return {}
    if not isinstance(responses, Mapping):
        raise MCPError(INVALID_PARAMS, "inputResponses must be an object of answers by key")
    wire: dict[str, Any] = {}
    for key, value in responses.items():
        if hasattr(value, "model_dump"):
            value = value.model_dump(by_alias=True, mode="json", exclude_none=True)
        if not isinstance(value, dict):
            raise MCPError(
                INVALID_PARAMS,
                f"inputResponses[{key!r}] must be an object (an elicitation, sampling or "
                f"roots result), not {type(value).__name__}",
            )
        wire[str(key)] = value
    return wire
