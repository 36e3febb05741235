"""Reads and gets as a policy sees them.

Reading a resource or getting a prompt is not a tool call, but what decides calls decides
them too. ``resources/pre-read`` and ``prompts/pre-get`` are waterfalls like
``tools/pre-execute``: each listener is ``async (access, next)`` and returns ``await next()``
or a decision (``"allow"``, ``"deny"``, ``"ask"``, ``Deny(reason)``, ``Ask(reason)``). Nobody
is asked about a read, so ``ask`` refuses it as ``deny`` does. A gate a policy left closed
while it reloads (:mod:`.policy_gates`) refuses what it gated here too, by the access's
:attr:`~Access.subject` (``resource:<uri>``, ``prompt:<name>``), which is also what the
bundled policy's rules match.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ..errors import AccessDenied
from ..service import unwrap
from .calls import Ask, Deny

if TYPE_CHECKING:
    from ..context import Context

_NO_ARGS: Mapping[str, str] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Access:
    """One resource read or prompt get, as the ``*/pre-read`` and ``*/pre-get`` listeners
    see it."""

    kind: str
    """``resource`` or ``prompt``."""
    target: str
    """The URI read, or the prompt's name."""
    args: Mapping[str, str] = field(default_factory=lambda: _NO_ARGS)
    """The prompt's arguments, or the variables the URI filled in its template."""

    @property
    def subject(self) -> str:
        """``resource:<uri>`` or ``prompt:<name>``: what policies match."""
        return f"{self.kind}:{self.target}"


async def admit(ctx: Context, access: Access, stage: str) -> None:
    """Raise :class:`~harness.errors.AccessDenied` unless ``access`` passes the closed gates
    of the tools service and the ``stage`` listeners; return at once when neither exists."""
    tools = ctx.get("tools")
    if tools is not None:
        gates = unwrap(tools)._gates
        if gates.closed:
            why = gates.refusal(access.subject)
            if why is not None:
                raise AccessDenied(f"denied: {why}")
    bus = ctx.bus
    if stage not in bus.layers:
        return
    decision = await bus.waterfall(stage, (access,), _allow)
    if decision == "allow":
        return
    raise AccessDenied(denial(access, decision, stage))


async def settled(ctx: Context) -> bool:
    """Whether reloads were under way when a look-up missed, once they have ended: the
    caller then looks again, so a reload is atomic to readers (``ToolsService.settled``)."""
    tools = ctx.get("tools")
    return tools is not None and bool(await tools.settled())


def denial(access: Access, decision: Any, stage: str) -> str:
    """The message of a refusal: it begins ``denied:`` and says why."""
    if decision == "deny":
        return f"denied: {access.subject} is refused"
    if decision == "ask":
        return f"denied: {access.subject} needs approval, and reads are never asked about"
    if isinstance(decision, Deny):
        return f"denied: {decision.reason or access.subject + ' is refused'}"
    if isinstance(decision, Ask):
        why = decision.reason or f"{access.subject} needs approval"
        return f"denied: {why} (reads and gets are never asked about, so this is a refusal)"
    raise TypeError(
        f"{stage} produced {decision!r}; listeners must return 'allow', 'deny', 'ask', "
        "Deny(reason), Ask(reason) or the result of await next()"
    )


async def _allow() -> str:
    return "allow"
