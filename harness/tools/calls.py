"""Tool calls, their results, and the decisions of the pre-execute stage."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from .render import default_text

ErrorCode = Literal[
    "unknown_tool",
    "invalid_args",
    "denied",
    "approval_pending",
    "timeout",
    "cancelled",
    "tool_error",
    "invalid_output",
    "internal",
    "interrupted",
]
ERROR_CODES: tuple[ErrorCode, ...] = get_args(ErrorCode)

_call_ids = itertools.count(1)


@dataclass(slots=True)
class ToolCall:
    """A model's request to run a tool."""

    id: str
    """Echoed in the result, so callers can match results to calls."""
    name: str
    args: Any = field(default_factory=dict)
    """A dict, or a JSON string (parsed and validated before the body runs)."""
    parent: str | None = None
    """The id of the call this one runs inside (a ``run_code`` program's), else None. Every
    ``tools/*`` listener sees it on the call, so audit and tracing can nest inner calls."""
    session: str | None = None
    """The agent session the call belongs to, else None: its approval request is listed,
    recorded and remembered (``allow_session``) under it."""
    client: str | None = None
    """The client session the call came from outside any agent session (an MCP
    connection's, ``mcp-...``), else None: an ``allow_session`` answer covers that client's
    later calls of the tool. With neither a session nor a client it counts as ``allow_once``."""
    key: str | None = None
    """The call's idempotency key, else None: with a store loaded (``harness:store``), a
    keyed call of a tool that is not ``read_only`` is journaled, and a repeat of the key is
    answered from the journal (an agent's calls: its session and call id; MCP's
    ``_meta["harness/idempotency-key"]``; the console API's ``Idempotency-Key`` header)."""
    context: Any = field(default=None, repr=False, compare=False)
    """The call's :class:`~harness.tools.call_context.CallContext`: made where the call
    entered (``CallContext(call, surface, client)`` sets it), else by the kernel when a stage
    or the body needs one. Listeners read it here."""

    @classmethod
    def of(cls, call: ToolCall | Mapping[str, Any]) -> ToolCall:
        """Accept a ``ToolCall`` or a mapping with ``id``, ``name`` and ``args`` keys."""
        if isinstance(call, ToolCall):
            return call
        if not isinstance(call, Mapping):
            raise TypeError(
                f"a tool call must be a ToolCall or a mapping with id, name and args, "
                f"got {type(call).__name__}"
            )
        name = call.get("name")
        if not isinstance(name, str):
            raise TypeError(f"a tool call needs a string 'name', got {name!r}")
        call_id = call.get("id")
        args = call.get("args", call.get("arguments"))
        parent = call.get("parent")
        session = call.get("session")
        client = call.get("client")
        key = call.get("key")
        return cls(
            id=str(call_id) if call_id is not None else f"call-{next(_call_ids)}",
            name=name,
            args={} if args is None else args,
            parent=None if parent is None else str(parent),
            session=None if session is None else str(session),
            client=None if client is None else str(client),
            key=None if key is None else str(key),
        )


@dataclass(frozen=True, slots=True)
class Pending:
    """An approval answer: it comes in a later request; the call ends as ``approval_pending``.

    ``prompt`` is what the person is asked; ``data`` is whatever the surface needs to send the
    question (an MCP elicitation request, say). Neither is interpreted by the pipeline. (Part
    of the approval contract, :mod:`harness.tools.approval_contract`; defined here for ToolResult.)
    """

    prompt: str = ""
    data: Any = None


DEFAULT_TEXT: Any = type("DefaultText", (), {"__repr__": lambda self: "DEFAULT_TEXT"})()
"""A result's ``content`` before it is read, when it is the value's default text: the kernel
leaves a plain scalar's rendering to the first reader (most in-process callers read
``result`` only). Not part of the API; ``content`` never returns it."""


class ToolResult:
    """The outcome of one call: a canonical value and its rendering, or an error.

    A class with slots, compared and shown as a dataclass of its fields would be (``pending``
    left out of both). ``content`` is read as an attribute; for a plain scalar the kernel
    makes it on first read (the same blocks, made once).
    """

    __slots__ = ("_content", "code", "error", "id", "name", "pending", "result")
    __match_args__ = ("id", "name", "result", "content", "error", "code", "pending")

    id: str
    name: str
    result: Any
    """The canonical value (what programs consume); None on failure."""
    error: str | None
    """A message a model can act on; None on success."""
    code: ErrorCode | None
    """None on success, else one of :data:`ERROR_CODES`."""
    pending: Pending | None
    """With code ``approval_pending``: the approval question, to answer in a later request."""

    def __init__(
        self,
        id: str,
        name: str,
        result: Any = None,
        content: list[dict[str, Any]] | None = None,
        error: str | None = None,
        code: ErrorCode | None = None,
        pending: Pending | None = None,
    ) -> None:
        self.id = id
        self.name = name
        self.result = result
        self._content = [] if content is None else content
        self.error = error
        self.code = code
        self.pending = pending

    @property
    def content(self) -> list[dict[str, Any]]:
        """The rendered content blocks (what people and models read)."""
        content = self._content
        if content is DEFAULT_TEXT:
            content = self._content = [{"type": "text", "text": default_text(self.result)}]
        return content

    @content.setter
    def content(self, blocks: list[dict[str, Any]]) -> None:
        self._content = blocks

    @property
    def ok(self) -> bool:
        """True when the call succeeded."""
        return self.code is None

    @classmethod
    def failure(cls, call: ToolCall, code: ErrorCode, message: str) -> ToolResult:
        """A failed result whose content is the message as text."""
        return cls(call.id, call.name, None, [{"type": "text", "text": message}], message, code)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: ``id, name, ok, result, content, error, code``."""
        return {
            "id": self.id,
            "name": self.name,
            "ok": self.code is None,
            "result": self.result,
            "content": self.content,
            "error": self.error,
            "code": self.code,
        }

    def _fields(self) -> tuple[Any, ...]:
        return (self.id, self.name, self.result, self.content, self.error, self.code)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]  # mutable, as a dataclass with eq is

    def __repr__(self) -> str:
        return (
            f"ToolResult(id={self.id!r}, name={self.name!r}, result={self.result!r}, "
            f"content={self.content!r}, error={self.error!r}, code={self.code!r})"
        )

    def __reduce__(self) -> tuple[Any, ...]:  # pickled (the Ray executor) with its content
        return (ToolResult, (*self._fields(), self.pending))


@dataclass(frozen=True, slots=True)
class Deny:
    """A pre-execute decision: refuse the call, telling the model why."""

    reason: str = "denied by a pre-execute listener"


@dataclass(frozen=True, slots=True)
class Ask:
    """A pre-execute decision: run the call only if the ``approval`` service approves."""

    reason: str = "this call needs approval"


Decision = Literal["allow", "deny", "ask"] | Deny | Ask
