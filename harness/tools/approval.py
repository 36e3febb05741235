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

:class:`CallSeal` binds an approval to the exact call it was asked for (name and canonical
arguments), sealed with HMAC-SHA256 under ``HARNESS_SECRET`` (a random per-process secret when
unset), so a replayed or edited token approves nothing.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import hmac
import json
import logging
import math
import os
import secrets
import time
import unicodedata
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from .calls import Pending, ToolCall

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


# -- binding an approval to one call -----------------------------------------------------------


def call_key(call: ToolCall) -> str:
    """The tool name and canonical arguments of ``call`` (sorted keys, no spaces)."""
    args = call.args
    if isinstance(args, str | bytes):
        with contextlib.suppress(ValueError):
            args = json.loads(args)
    try:
        canonical = json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    except (TypeError, ValueError):
        canonical = repr(args)
    return json.dumps([call.name, canonical], ensure_ascii=True)


def _secret() -> bytes:
    value = os.environ.get("HARNESS_SECRET")
    if value:
        return value.encode("utf-8", "surrogatepass")
    return secrets.token_bytes(32)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class SealError(Exception):
    """A sealed token failed verification; the message says why (for the log and the model)."""


class CallSeal:
    """Tokens that carry an approval question for one call, safe to hand to a client.

    ``seal(call)`` returns ``v1.<payload>.<mac>``: the payload names the tool, a digest of
    the canonical arguments, a random nonce and an expiry; the MAC is HMAC-SHA256 under
    ``HARNESS_SECRET`` (shared by replicas) or a random secret made when this object is.
    ``open(token, call)`` verifies it against the call being resumed and spends its nonce:
    a second use in this process is refused (replicas sharing the secret bound reuse by
    the expiry, ``ttl`` seconds).
    """

    def __init__(self, secret: bytes | None = None, ttl: float = 600.0) -> None:
        if not (math.isfinite(ttl) and ttl > 0):
            raise ValueError(f"ttl must be a positive number of seconds, got {ttl!r}")
        self._key = hashlib.sha256(b"harness/call-seal/v1" + (secret or _secret())).digest()
        self.ttl = ttl
        self._spent: dict[str, float] = {}

    def seal(self, call: ToolCall, purpose: str = "approval") -> str:
        """A token binding ``purpose`` to ``call``'s name and arguments."""
        digest = hashlib.sha256(call_key(call).encode()).hexdigest()
        payload = json.dumps(
            {
                "v": 1,
                "p": purpose,
                "t": call.name,
                "a": digest,
                "n": secrets.token_urlsafe(16),
                "e": time.time() + self.ttl,
            },
            separators=(",", ":"),
            sort_keys=True,
            ensure_ascii=True,
        ).encode()
        body = _b64(payload)
        return f"v1.{body}.{_b64(self._mac(body))}"

    def open(self, token: object, call: ToolCall, purpose: str = "approval") -> None:
        """Check ``token`` was sealed here for ``call`` and is unspent; raise :class:`SealError`."""
        if not isinstance(token, str) or len(token) > 4096:
            raise SealError("the approval state is not one this server issued")
        parts = token.split(".")
        if len(parts) != 3 or parts[0] != "v1":
            raise SealError("the approval state is not one this server issued")
        # The MAC is compared in its encoded form: base64's last character carries padding
        # bits a decoder ignores, so comparing decoded bytes would accept an edited token.
        if not hmac.compare_digest(parts[2].encode(), _b64(self._mac(parts[1])).encode()):
            raise SealError("the approval state was altered or not issued by this server")
        try:
            claims = json.loads(_unb64(parts[1]))
        except (ValueError, binascii.Error):
            raise SealError("the approval state is not one this server issued") from None
        if not isinstance(claims, dict) or claims.get("v") != 1 or claims.get("p") != purpose:
            raise SealError("the approval state is not one this server issued")
        now = time.time()
        expires = claims.get("e")
        if not isinstance(expires, int | float) or not now < expires:
            raise SealError("the approval state has expired; call the tool again")
        digest = hashlib.sha256(call_key(call).encode()).hexdigest()
        if claims.get("t") != call.name or not hmac.compare_digest(str(claims.get("a")), digest):
            raise SealError("the approval was asked for another call (tool or arguments differ)")
        nonce = str(claims.get("n"))
        self._prune(now)
        if nonce in self._spent:
            raise SealError("the approval state was already used; call the tool again")
        self._spent[nonce] = float(expires)

    def _mac(self, body: str) -> bytes:
        return hmac.new(self._key, body.encode(), hashlib.sha256).digest()

    def _prune(self, now: float) -> None:
        if len(self._spent) > 1024:
            for nonce, expires in list(self._spent.items()):
                if expires <= now:
                    del self._spent[nonce]
