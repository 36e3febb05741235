"""What a running call may ask of the person or program behind it, and the answers.

Three kinds of input (DESIGN §16), each a request object that a surface's
:class:`~harness.tools.call_context.Client` answers and that MCP carries on the wire:

- :class:`AskInput`: a question with a form (MCP ``elicitation/create``), answered with an
  :class:`Answer` (``accept`` with ``content``, ``decline`` or ``cancel``). An approval is an
  ``AskInput`` with ``approval=True``: the same path, and only an approval may be answered by
  a remembered decision or ``--yes``;
- :class:`SampleInput`: a completion from the caller's model (``sampling/createMessage``),
  answered with :class:`Sampled`;
- :class:`RootsInput`: the caller's roots (``roots/list``), answered with a list of :class:`Root`.

An answer may also arrive as the wire's JSON (a 2026-07-28 client's ``inputResponses``,
recorded in a sealed ``requestState``): :func:`answer_of` turns it into the typed answer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import HarnessError

__all__ = [
    "Answer",
    "AskInput",
    "Input",
    "InputRequired",
    "InputUnavailable",
    "Root",
    "RootsInput",
    "SampleInput",
    "Sampled",
    "answer_of",
    "form_schema",
]

Action = Literal["accept", "decline", "cancel"]


class InputUnavailable(HarnessError):
    """Nobody behind the call can give this input (``sample`` or ``roots`` with no client that
    offers them). Uncaught in a tool, the call ends ``tool_error`` with this message."""


class InputRequired(BaseException):
    """Raised by a client that answers in a later request (MCP 2026-07-28): the call ends
    now, carrying ``requests`` (key → the request's wire form) to the client; its next round
    runs the body again with the answers recorded. A BaseException, so a tool's ``except
    Exception`` does not swallow the end of its round."""

    def __init__(self, requests: dict[str, dict[str, Any]]) -> None:
        super().__init__("the caller answers in its next request")
        self.requests = requests


@dataclass(frozen=True, slots=True)
class Answer:
    """A person's answer to a form (MCP's ``ElicitResult``)."""

    action: Action
    content: dict[str, Any] | None = None
    """The form's values, with ``accept``."""
    reason: str | None = None
    """Why, when nobody could answer (``cancel``)."""

    @property
    def accepted(self) -> bool:
        """Whether the person accepted (and filled in) the form."""
        return self.action == "accept"

    def to_wire(self) -> dict[str, Any]:
        """MCP's ``ElicitResult``."""
        wire: dict[str, Any] = {"action": self.action}
        if self.action == "accept":
            wire["content"] = dict(self.content or {})
        return wire


@dataclass(frozen=True, slots=True)
class Sampled:
    """A completion from the caller's model (MCP's ``CreateMessageResult``)."""

    text: str
    content: list[dict[str, Any]] = field(default_factory=list)
    """The reply's content blocks as MCP spells them."""
    model: str | None = None
    stop_reason: str | None = None


@dataclass(frozen=True, slots=True)
class Root:
    """One of the client's roots: a ``file://`` URI and its name."""

    uri: str
    name: str | None = None


@dataclass(frozen=True, slots=True)
class AskInput:
    """Ask the person a question; ``schema`` is a JSON Schema object (MCP's
    ``requestedSchema``)."""

    message: str
    schema: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})
    approval: bool = False
    """The policy's ``ask`` (an approval), not the tool's own question."""
    kind: Literal["ask"] = "ask"

    def to_wire(self) -> dict[str, Any]:
        return {
            "method": "elicitation/create",
            "params": {"mode": "form", "message": self.message, "requestedSchema": self.schema},
        }


@dataclass(frozen=True, slots=True)
class SampleInput:
    """Ask the caller's model for a completion."""

    messages: tuple[dict[str, Any], ...]
    """``{"role", "content"}`` with ``content`` one MCP content block."""
    max_tokens: int
    system: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    """``temperature``, ``stop_sequences`` ... as MCP's ``sampling/createMessage`` names them
    (snake_case; sent in camelCase)."""
    kind: Literal["sample"] = "sample"

    @classmethod
    def of(
        cls,
        text_or_messages: str | Sequence[Mapping[str, Any]],
        max_tokens: int,
        system: str | None = None,
        **params: Any,
    ) -> SampleInput:
        """A request from a prompt string or a list of ``{"role", "content"}`` messages (whose
        content is a string or a content block)."""
        if isinstance(text_or_messages, str):
            raw: Sequence[Mapping[str, Any]] = [{"role": "user", "content": text_or_messages}]
        else:
            raw = text_or_messages
        messages = []
        for message in raw:
            content = message.get("content")
            if isinstance(content, str):
                content = {"type": "text", "text": content}
            messages.append({"role": str(message.get("role", "user")), "content": content})
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise ValueError(f"max_tokens must be a positive integer, got {max_tokens!r}")
        return cls(tuple(messages), max_tokens, system, dict(params))

    def to_wire(self) -> dict[str, Any]:
        params: dict[str, Any] = {"messages": list(self.messages), "maxTokens": self.max_tokens}
        if self.system is not None:
            params["systemPrompt"] = self.system
        for key, value in self.params.items():
            head, *rest = key.split("_")
            params[head + "".join(part.title() for part in rest)] = value
        return {"method": "sampling/createMessage", "params": params}


@dataclass(frozen=True, slots=True)
class RootsInput:
    """Ask for the caller's roots."""

    kind: Literal["roots"] = "roots"

    def to_wire(self) -> dict[str, Any]:
        return {"method": "roots/list", "params": {}}


Input = AskInput | SampleInput | RootsInput


def form_schema(schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """A form's JSON Schema object: ``schema`` as written when it is one (``type: object``),
    else a flat parameter spec (``{"field": {"type": ..., "required": True}}``) made into one."""
    if schema is None:
        return {"type": "object", "properties": {}}
    if not isinstance(schema, Mapping):
        raise TypeError(f"a form's schema must be a mapping, got {type(schema).__name__}")
    if schema.get("type") == "object" or "properties" in schema:
        return dict(schema)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, node in schema.items():
        if not isinstance(node, Mapping):
            raise TypeError(f"the form field {name!r} must be a mapping, got {node!r}")
        spec = {key: value for key, value in node.items() if key != "required"}
        if node.get("required") is True:
            required.append(str(name))
        properties[str(name)] = spec
    form: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        form["required"] = required
    return form


def answer_of(request: Input, raw: Any) -> Any:
    """The typed answer to ``request`` from ``raw``: already typed, or the wire's JSON."""
    if request.kind == "ask":
        if isinstance(raw, Answer):
            return raw
        if isinstance(raw, Mapping) and raw.get("action") in ("accept", "decline", "cancel"):
            content = raw.get("content")
            return Answer(raw["action"], dict(content) if isinstance(content, Mapping) else None)
        return Answer("cancel", reason="the answer was not an elicitation result")
    if request.kind == "sample":
        if isinstance(raw, Sampled):
            return raw
        if not isinstance(raw, Mapping):
            raise InputUnavailable("the caller's model sent no completion")
        content = raw.get("content")
        blocks = content if isinstance(content, list) else [content] if content else []
        text = "".join(
            str(block.get("text", ""))
            for block in blocks
            if isinstance(block, Mapping) and block.get("type") == "text"
        )
        return Sampled(text, [dict(b) for b in blocks], raw.get("model"), raw.get("stopReason"))
    if isinstance(raw, list) and all(isinstance(root, Root) for root in raw):
        return raw
    roots = raw.get("roots") if isinstance(raw, Mapping) else raw
    if not isinstance(roots, list):
        raise InputUnavailable("the caller sent no roots")
    return [
        Root(str(root.get("uri")), root.get("name"))
        for root in roots
        if isinstance(root, Mapping) and root.get("uri")
    ]


def answer_to_wire(answer: Any) -> Any:
    """A typed answer (:class:`Answer`, :class:`Sampled`, a list of :class:`Root`) as the
    wire's JSON, the inverse of :func:`answer_of` (what a 2026-07-28 client sends in
    ``inputResponses``); anything else (an answer recorded from the wire) as it is."""
    if isinstance(answer, Answer):
        return answer.to_wire()
    if isinstance(answer, Sampled):
        wire: dict[str, Any] = {
            "role": "assistant",
            "content": answer.content[0]
            if answer.content
            else {"type": "text", "text": answer.text},
            "model": answer.model or "unknown",
        }
        if answer.stop_reason is not None:
            wire["stopReason"] = answer.stop_reason
        return wire
    if isinstance(answer, list) and all(isinstance(root, Root) for root in answer):
        return {
            "roots": [
                {"uri": root.uri, **({"name": root.name} if root.name else {})} for root in answer
            ]
        }
    return answer
