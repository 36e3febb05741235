"""A running call's question to its person (an upstream's ``elicitation/create``): never an
approval.

A tool may need an answer from the person behind the call while it runs: a mounted MCP
server asks "Transfer ALL funds?". That is not the policy's ``ask``. A remembered approval
(``allow_session``, ``allow_always``), ``harness call --yes`` and an ``approval`` service
answer the policy and nothing else; a question goes to the person on the calling surface,
or it is declined:

- the call's asker (``ToolCall.asker``), when it has ``question(call, message, schema)``:
  an MCP client's user, asked through elicitation with the form passed on as written. An
  asker without that method cannot ask (``harness call``'s terminal, ``--yes``): declined;
- else the approval object (:mod:`.approval_requests`), as a request only a person answers: the
  agent session's card or prompt, or a console page with its event stream open. Yes
  accepts the form with its defaults and ``true`` for its yes/no fields
  (:func:`consent_content`); no, or no answer, declines; nothing is remembered. A form that
  asks for typed input, or a call nobody can be asked about, is declined at once.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Literal

from .approval_contract import Approved
from .approval_requests import Approvals
from .calls import ToolCall

__all__ = ["Answer", "ask", "consent_content"]

_log = logging.getLogger("harness.approval")


@dataclass(frozen=True, slots=True)
class Answer:
    """A person's answer to a form (MCP's ``ElicitResult``)."""

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None
    """The form's values, with ``accept``."""

    @property
    def accepted(self) -> bool:
        """Whether the person accepted (and filled in) the form."""
        return self.action == "accept"


DECLINE = Answer("decline")


async def ask(
    approvals: Approvals, call: ToolCall, message: str, schema: dict[str, Any], reason: str
) -> Answer:
    """Ask the person behind ``call`` (see the module); ``reason`` says who asks and why, for
    a request of the approval object."""
    asker = call.asker
    if asker is not None:
        question = getattr(asker, "question", None)
        if not callable(question):
            return DECLINE
        try:
            answer = await question(call, message, schema)
        except Exception:
            _log.exception("asking the person behind tool %r (call %s) failed", call.name, call.id)
            return DECLINE
        return answer if isinstance(answer, Answer) else DECLINE
    content = consent_content(schema)
    if content is None:
        return DECLINE
    # shown as a request of the call itself, so it appears where the call does (its card)
    shown = ToolCall(
        call.id,
        call.name,
        {"message": message, "requested": schema, "call": call.args},
        parent=call.parent,
        session=call.session,
        client=call.client,
    )
    decided = await approvals.decide(shown, reason, question=True)
    return Answer("accept", content) if isinstance(decided, Approved) else DECLINE


def consent_content(schema: dict[str, Any]) -> dict[str, Any] | None:
    """The answer to a form when a person says yes: defaults, and ``true`` for yes/no fields.

    None when the form asks for something only a person could type (a required field that
    has no default and is not a boolean): the question is then declined.
    """
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    content: dict[str, Any] = {}
    for key, node in properties.items():
        node = node if isinstance(node, dict) else {}
        if "default" in node:
            content[key] = node["default"]
        elif node.get("type") == "boolean":
            content[key] = True
        elif key in required:
            return None
    return content
