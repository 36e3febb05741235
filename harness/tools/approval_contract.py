"""The approval contract: what the pipeline asks when a pre-execute listener says ``ask``.

An :class:`ApprovalService` (the ``approval`` service, or one a surface passes to
``execute(call, approval=...)``) receives the call and the reason and answers with

- :class:`Approved` (or the boolean ``True``): the call runs;
- :class:`Denied` (or anything else: ``False``, ``"yes"``, ``1``, None): the call is denied;
- :class:`Pending`: the answer will come in a later request (MCP 2026-07-28's
  ``inputResponses`` round trip). The call ends as ``approval_pending`` — not a denial — and a
  later ``execute`` of the same call resumes it, for instance with :class:`Resumed`.

An approval service that raises, or that a timeout cancels, denies: approvals fail closed.
The pipeline awaits ``request`` inline, so a broker may block until a person answers.

:class:`CallSeal` (:mod:`harness.tools.seal`) binds an approval to the exact call it was asked
for (name and canonical arguments), sealed with HMAC-SHA256 under ``HARNESS_SECRET``, so a
replayed or edited token approves nothing.
"""

from __future__ import annotations

import json
import logging
import unicodedata
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from .calls import Pending, ToolCall
from .seal import CallSeal, SealError, call_key

__all__ = [
    "ApprovalAnswer",
    "ApprovalScope",
    "ApprovalService",
    "Approved",
    "CallSeal",
    "Denied",
    "Pending",
    "Resumed",
    "SealError",
    "call_key",
    "decide",
    "interpret",
    "prompt",
    "show_args",
    "visible",
]

_log = logging.getLogger("harness.approval")

ApprovalScope = Literal["once", "session", "always"]


@dataclass(frozen=True, slots=True)
class Approved:
    """Run the call. ``scope`` tells a broker how long to remember the decision."""

    scope: ApprovalScope = "once"

    @property
    def decision(self) -> str:
        """The decision this answer is (``allow_once``, ``allow_session``, ``allow_always``)."""
        return "allow_" + self.scope


@dataclass(frozen=True, slots=True)
class Denied:
    """Do not run the call; ``reason`` is shown to the model after the policy's reason."""

    reason: str = ""


ApprovalAnswer = Approved | Denied | Pending | bool


@runtime_checkable
class ApprovalService(Protocol):
    """What the pipeline calls for an ``ask`` decision."""

    async def request(self, call: ToolCall, reason: str) -> ApprovalAnswer:
        """Decide ``call``; ``reason`` is the pre-execute listener's (the policy's) reason."""
        ...


def interpret(answer: object) -> Approved | Denied | Pending:
    """Normalise an answer: only ``True`` and :class:`Approved` approve."""
    if answer is True:
        return Approved()
    if isinstance(answer, Approved | Denied | Pending):
        return answer
    return Denied()


async def decide(service: Any, call: ToolCall, reason: str) -> Approved | Denied | Pending:
    """Ask ``service`` about ``call``; an exception or a malformed service denies.

    Cancellation of the caller propagates (the call then ends ``cancelled``); a timeout inside
    the service shows up here as whatever the service returns or raises, and denies.
    """
    request = getattr(service, "request", None)
    if not callable(request):
        _log.error("the approval service %r has no request(call, reason) method", service)
        return Denied("the approval service is broken (no request method); see the host log")
    try:
        answer = await request(call, reason)
    except Exception:
        _log.exception("the approval service raised for tool %r (call %s)", call.name, call.id)
        return Denied("the approval service failed; see the host log")
    return interpret(answer)


class Resumed:
    """An approval service for a resumed call: the answer given for ``call`` and no other.

    Any call whose name or canonical arguments differ is denied, so an answer cannot be moved
    to another call.
    """

    def __init__(self, call: ToolCall, answer: ApprovalAnswer) -> None:
        self.key = call_key(call)
        self.answer = answer

    async def request(self, call: ToolCall, reason: str) -> ApprovalAnswer:
        if call_key(call) != self.key:
            return Denied("the approval was given for another call")
        return self.answer


# -- showing a call to a person ----------------------------------------------------------------

_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def visible(text: str) -> str:
    """``text`` with control, format (bidirectional included) and separator characters escaped.

    ``U+202E`` (right-to-left override) becomes the six characters ``\\u202e``, so a path such
    as ``evil\\u202etxt.sh`` cannot pass for ``evilhs.txt`` in a prompt. Newlines and tabs are
    escaped too: a prompt shows one call on one line.
    """
    out = []
    for char in text:
        category = unicodedata.category(char)
        if char in _BIDI or category in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"):
            code = ord(char)
            out.append(f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}")
        elif category == "Zs" and char != " ":
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return "".join(out)


def show_args(args: Any) -> str:
    """The arguments as JSON (a JSON string parsed first), every hidden character visible."""
    if isinstance(args, str | bytes):
        try:
            args = json.loads(args)
        except ValueError:
            return visible(args if isinstance(args, str) else repr(args))
    try:
        text = json.dumps(args, ensure_ascii=False, sort_keys=False)
    except (TypeError, ValueError):
        text = repr(args)
    return visible(text)


def prompt(call: ToolCall, reason: str) -> str:
    """The question a person is asked: ``Allow the tool call NAME(ARGS)? REASON``."""
    return f"Allow the tool call {visible(call.name)}({show_args(call.args)})? {visible(reason)}"
