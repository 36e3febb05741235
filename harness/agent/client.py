"""The agent surface's :class:`~harness.tools.call_context.Client`: what a tool the model
calls can reach while it runs (DESIGN §16).

Every call of a session's step carries a :class:`~harness.tools.call_context.CallContext`
with surface ``agent`` and the session's :class:`AgentClient`:

- ``ctx.progress`` is a ``tool/progress {id, done, total, message}`` session event, streamed
  to the session's readers (the console's card, ``harness chat``'s bar) and not logged; a
  report that says nothing new goes out at most every tenth of a second
  (:mod:`~harness.tools.progress_shown`);
- ``ctx.log`` is a ``tool/log {id, level, message, data}`` session event, logged;
- ``ctx.ask`` is a request of the approval object with ``question: true`` and its ``form``,
  recorded in the session as its ``approval/request``: the session's reader (the console's
  card, ``harness chat``'s prompt, Python's ``approval.answer(id, "allow_once",
  content={...})``) fills the form in; unanswered, it is ``cancel`` after
  ``approval_timeout``;
- ``ctx.sample`` is one completion of the agent's own ``llm`` (the request's messages,
  ``system``, ``max_tokens``, ``temperature`` and ``stop_sequences``; text only);
- ``ctx.roots`` is the agent's ``roots`` config as ``file://`` roots: by default the
  project's folder (where ``cordis.yml`` is).

A program's inner calls (code mode) share their program's client, so their progress and
logs land in the same session, under their own call ids.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

from ..llm.base import AssistantMessage, ChatRequest, LLMError, UserMessage
from ..tools.call_context import CallContext, Client
from ..tools.inputs import Input, InputUnavailable, Root, Sampled, SampleInput
from ..tools.progress_shown import ShownProgress

if TYPE_CHECKING:
    from pathlib import Path

    from ..llm.base import LLM
    from .session import Session

STOP_REASONS = {"stop": "endTurn", "length": "maxTokens", "tool_calls": "toolUse"}
"""The neutral ``finish_reason`` as MCP's ``stopReason`` names it."""


class AgentClient(Client):
    """The client of one agent session's calls (see the module)."""

    def __init__(self, session: Session) -> None:
        super().__init__(None)
        self.session = session
        self.shown = ShownProgress(self._later)
        """A call's progress reports that say something new, or one a tenth of a second."""

    async def answer(self, ctx: CallContext, requests: Mapping[str, Input]) -> dict[str, Any]:
        agent = self.session.agent
        answers: dict[str, Any] = {}
        for key, request in requests.items():
            if request.kind == "ask":  # the session's reader answers the approval object
                answers[key] = await ctx.approvals_question(request)
            elif request.kind == "sample":
                answers[key] = await sample(agent.llm, ctx, request)
            else:
                answers[key] = list(agent.roots)
        return answers

    async def progress(
        self, ctx: CallContext, done: float, total: float | None, message: str | None
    ) -> None:
        fields = _nested(ctx, {"id": ctx.call.id, "done": done, "total": total, "message": message})
        show = partial(self.session.stream, "tool/progress", **fields)
        self.shown.offer(ctx.call.id, done, total, message, show)

    def _later(self, func: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Run ``func`` in the background while the agent is loaded."""
        ctx = self.session.agent.ctx
        if not ctx.is_disposed:
            ctx.start_soon(func)

    async def log(self, ctx: CallContext, level: str, message: str, data: dict[str, Any]) -> None:
        fields = {"id": ctx.call.id, "level": level, "message": message, "data": data}
        self.session.record("tool/log", **_nested(ctx, fields))


def _nested(ctx: CallContext, fields: dict[str, Any]) -> dict[str, Any]:
    """``fields`` with the call's ``parent`` (a program's inner call: a nested card)."""
    if ctx.call.parent is not None:
        fields["parent"] = ctx.call.parent
    return fields


def project_root(folder: Path) -> Root:
    """A folder as a ``file://`` root named by its last part."""
    folder = folder.resolve()
    return Root(folder.as_uri(), folder.name or str(folder))


async def sample(llm: LLM, ctx: CallContext, request: SampleInput) -> Sampled:
    """One completion of ``llm`` for a tool's sampling request."""
    name = ctx.call.name
    messages: list[UserMessage | AssistantMessage] = []
    for message in request.messages:
        text = _text(message.get("content"))
        if text is None:
            raise InputUnavailable(
                f"tool {name} asked the agent's model about content other than text; "
                "the agent samples text only"
            )
        role = message.get("role")
        messages.append(AssistantMessage(text) if role == "assistant" else UserMessage(text))
    params = request.params
    temperature = params.get("temperature")
    stop = params.get("stop_sequences") or ()
    chat = ChatRequest(
        request.system or "",
        list(messages),
        use_tools=False,
        max_tokens=request.max_tokens,
        temperature=float(temperature) if isinstance(temperature, int | float) else None,
        stop=tuple(str(item) for item in stop) if isinstance(stop, list | tuple) else (),
    )
    try:
        answer = await llm.complete(chat, None)
    except LLMError as exc:
        raise InputUnavailable(
            f"tool {name} asked the agent's model for a completion, and it failed: {exc}"
        ) from None
    reason = answer.finish_reason
    return Sampled(
        answer.text,
        [{"type": "text", "text": answer.text}],
        model_label(llm),
        STOP_REASONS.get(reason or "", reason),
    )


def model_label(llm: object) -> str | None:
    """The model's name for people: the provider's ``label``, else its config's ``model``."""
    label = getattr(llm, "label", None) or getattr(getattr(llm, "config", None), "model", None)
    return str(label) if label else None


def _text(content: Any) -> str | None:
    """The text of a sampling message's content (a block, or a list of blocks); None when
    it holds anything but text."""
    blocks = content if isinstance(content, list) else [content]
    texts = []
    for block in blocks:
        if not isinstance(block, Mapping) or block.get("type") != "text":
            return None
        texts.append(str(block.get("text", "")))
    return "".join(texts)
