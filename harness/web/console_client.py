"""The console's :class:`~harness.tools.call_context.Client`: what a tool run from the Tools
page (``POST /api/tools/{name}/call``) can reach while it runs (DESIGN §16).

- ``ctx.progress`` and ``ctx.log`` go out on the live event stream as ``tool/progress {id,
  done, total, message}`` and ``tool/log {id, level, message, data}`` (with ``parent`` for a
  program's inner call): the page that ran the call shows a bar and a log in its card (a
  progress report that says nothing new goes out at most every tenth of a second);
- ``ctx.ask`` is a request of the approval object with ``question: true`` and its ``form``,
  which a page with its event stream open fills in (``POST /api/approvals/{id}`` with
  ``content``); with no page open it is ``cancel`` at once, with the reason;
- ``ctx.roots`` is the project's folder (where ``cordis.yml`` is) as one ``file://`` root;
- ``ctx.sample`` raises :class:`~harness.tools.inputs.InputUnavailable`: the console has no
  model of its own to offer a tool.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import Any

from ..tools.call_context import CallContext, Client, unavailable
from ..tools.inputs import Input, InputUnavailable, Root
from ..tools.jsonvalue import printable
from ..tools.progress_shown import Later, ShownProgress
from .stream import EventHub


class ConsoleClient(Client):
    """The client of the calls one console runs (see the module)."""

    def __init__(self, hub: EventHub, folder: Path, later: Later | None = None) -> None:
        super().__init__(None)
        self.hub = hub
        self.shown = ShownProgress(later)
        """A call's progress reports that say something new, or one a tenth of a second."""
        folder = folder.resolve()
        self.roots = [Root(folder.as_uri(), folder.name or str(folder))]

    async def answer(self, ctx: CallContext, requests: Mapping[str, Input]) -> dict[str, Any]:
        answers: dict[str, Any] = {}
        for key, request in requests.items():
            if request.kind == "ask":
                answers[key] = await ctx.approvals_question(request)
            elif request.kind == "roots":
                answers[key] = list(self.roots)
            else:
                raise InputUnavailable(unavailable(ctx, request))
        return answers

    async def progress(
        self, ctx: CallContext, done: float, total: float | None, message: str | None
    ) -> None:
        fields = _nested(ctx, {"id": ctx.call.id, "done": done, "total": total, "message": message})
        show = partial(self.hub.publish, "tool/progress", fields)
        self.shown.offer(ctx.call.id, done, total, message, show)

    async def log(self, ctx: CallContext, level: str, message: str, data: dict[str, Any]) -> None:
        fields = {"id": ctx.call.id, "level": level, "message": message, "data": printable(data)}
        self.hub.publish("tool/log", _nested(ctx, fields))


def _nested(ctx: CallContext, fields: dict[str, Any]) -> dict[str, Any]:
    if ctx.call.parent is not None:
        fields["parent"] = ctx.call.parent
    return fields
