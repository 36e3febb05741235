"""An upstream's 2026-07-28 input rounds, passed on to the caller (DESIGN §12, §16).

A 2026-07-28 server asks for input by ending a request with an ``InputRequiredResult``: its
requests by key and its own ``requestState``. A mounted tool puts those requests to its
caller in one round (:meth:`CallContext.inputs`), under the upstream's keys and as written,
and calls the upstream again with the answers and the upstream's state:

- a caller that answers while the call waits (an MCP client of the handshake era, the
  console, an agent session) answers at once, and the call goes on;
- a caller that answers in its next request (an MCP 2026-07-28 client) gets the requests as
  its own round. The upstream's state is what the call carries out of the round
  (:attr:`CallContext.carried`), sealed inside harness's own ``requestState``; the next round
  resumes there with the client's answers, so the upstream call is not repeated.

Nothing is answered on the person's behalf: a request harness cannot carry (a URL-mode
elicitation) is declined, and one nobody behind the call can answer is declined (a form) or
ends the call saying so (sampling, roots).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import anyio
import mcp_types as types

from ..tools.call_context import CallContext
from ..tools.inputs import (
    Answer,
    AskInput,
    Input,
    RootsInput,
    SampleInput,
    answer_to_wire,
)
from .results import UpstreamToolError

__all__ = ["MAX_ROUNDS", "Send", "answers_of", "through"]

MAX_ROUNDS = 16
"""Input rounds one upstream call may take (a server that asks forever cannot hang harness)."""
WAIT = 0.25
"""Seconds before calling again when the server asked for nothing but to be called again."""

R = TypeVar("R")
Send = Callable[[dict[str, Any] | None, str | None], Awaitable[R | types.InputRequiredResult]]
"""One upstream request (``tools/call``, ``prompts/get``), given the answers by key and the
upstream's ``requestState``."""

_SAMPLING_OPTIONS = {
    "temperature": "temperature",
    "stopSequences": "stop_sequences",
    "includeContext": "include_context",
    "metadata": "metadata",
    "modelPreferences": "model_preferences",
}


async def through(call: CallContext | None, tool: str, send: Send[R]) -> R:
    """Send the request for upstream ``tool`` (a tool's name, or ``prompt NAME``) until it
    is answered, its input rounds put to ``call``'s caller (see the module); without a
    context nobody can answer, so the call fails saying so."""
    responses: dict[str, Any] | None = None
    state: str | None = None
    carried = call.carried if call is not None else None
    if call is not None and isinstance(carried, dict) and carried.get("tool") == tool:
        # The next round of a call that ended its last one: resume at the upstream's state.
        call.carried = None
        state = carried.get("state")
        asked = set(carried.get("asked", []))
        latest = call.recorded[-1] if call.recorded else {}
        responses = {key: _wire(value) for key, value in latest.items() if key in asked}
        call.used = len(call.recorded)
    for _ in range(MAX_ROUNDS):
        result = await send(responses, state)
        if not isinstance(result, types.InputRequiredResult):
            return result  # R: the request's own result
        state = result.request_state
        wanted = {
            key: request.model_dump(mode="json", by_alias=True, exclude_none=True)
            for key, request in (result.input_requests or {}).items()
        }
        if not wanted:  # only "call again" (with the state), after a pause
            responses = None
            await anyio.sleep(WAIT)
            continue
        responses = await answers_of(call, tool, wanted, state)
    raise UpstreamToolError(
        f"the server asked for input more than {MAX_ROUNDS} times in one call; harness gave up"
    )


async def answers_of(
    call: CallContext | None, tool: str, wanted: Mapping[str, dict[str, Any]], state: str | None
) -> dict[str, Any]:
    """The answers to one upstream round (an ``InputRequiredResult``'s, or an
    ``input_required`` task's), by the upstream's keys, as the wire's JSON."""
    answers: dict[str, Any] = {}
    inputs: dict[str, Input] = {}
    for key, wire in wanted.items():
        request = input_of(wire)
        if request is None:
            answers[key] = {"action": "decline"}  # a URL to open: harness carries none
        else:
            inputs[key] = request
    if not inputs:
        return answers
    if call is None:
        raise _nobody(inputs)
    if state is not None:
        call.carried = {"tool": tool, "state": state, "asked": sorted(inputs)}
    given = await call.inputs(**inputs)  # a caller that answers later ends the round here
    call.carried = None
    answers.update((key, _wire(answer)) for key, answer in given.items())
    return answers


def input_of(wire: Mapping[str, Any]) -> Input | None:
    """harness's input for one of an upstream's input requests (the wire's JSON); None for
    one harness cannot carry (a URL-mode elicitation)."""
    method = wire.get("method")
    params = wire.get("params") or {}
    if method == "elicitation/create":
        if params.get("mode", "form") != "form":
            return None
        schema = params.get("requestedSchema") or {"type": "object", "properties": {}}
        return AskInput(str(params.get("message", "")), dict(schema))
    if method == "sampling/createMessage":
        options = {name: params[key] for key, name in _SAMPLING_OPTIONS.items() if key in params}
        return SampleInput(
            tuple(dict(message) for message in params.get("messages", [])),
            int(params.get("maxTokens", 1)),
            params.get("systemPrompt"),
            options,
        )
    if method == "roots/list":
        return RootsInput()
    return None


def _wire(answer: Any) -> Any:
    """A typed answer as the wire's JSON (an answer recorded from the wire already is); an
    :class:`Answer` nobody could give is declined at the upstream."""
    if isinstance(answer, Answer) and answer.reason is not None:
        return {"action": "decline"}
    return answer_to_wire(answer)


def _nobody(inputs: Mapping[str, Input]) -> Exception:
    kinds = sorted({request.kind for request in inputs.values()})
    return UpstreamToolError(
        f"the server asked for input ({', '.join(kinds)}) and this call has no caller to ask"
    )
