"""The ``prompts`` service: the prompts plugins registered, and rendering them.

A registry (:mod:`harness.registry`) keyed by name: ``register`` is an effect of the calling
plugin, changes emit ``prompts/change``; ``list()`` and ``get(name)`` as for tools. ``await
render(name, args)`` checks the arguments, lets the policy decide (``prompts/pre-get``,
:mod:`harness.tools.access`) and renders the messages (:mod:`.messages`).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import ArgumentsError, DefinitionError, NotFound
from ..registry import Registry
from ..resources.completions import Suggestions, suggest
from ..resources.invoke import invoke, python_context
from ..service import Service, caller_aware
from ..tools.access import Access, admit, settled
from ..tools.call_context import CallContext
from .define import PromptDefinition, prompt
from .messages import messages_of

if TYPE_CHECKING:
    from ..context import Context

__all__ = ["PromptsService"]


class PromptsService(Registry[PromptDefinition], Service):
    """The prompt registry and its rendering, provided as ``ctx.prompts``."""

    name = "prompts"
    provides = ("prompts",)
    inject: ClassVar[dict[str, Any]] = {"tools": {"required": False}}  # its policy gates
    kind = "prompt"
    changes = "prompts/change"

    def __init__(self, ctx: Context) -> None:
        Registry.__init__(self, ctx)
        Service.__init__(self, ctx, "prompts")

    @caller_aware
    def register(
        self, definition: PromptDefinition | Callable[..., Any], *, caller: Context | None = None
    ) -> Callable[[], None]:
        """Register a prompt as an effect of the calling plugin; return its dispose.

        A plain function is made a prompt with ``@prompt`` first. A name another plugin
        holds raises :class:`~harness.errors.NameConflict`.
        """
        owner = caller or self.ctx
        if not isinstance(definition, PromptDefinition):
            if not callable(definition):
                raise DefinitionError(
                    f"{owner.describe()} registered {definition!r}: expected a "
                    "PromptDefinition (define_prompt or @prompt) or a function"
                )
            definition = prompt(definition)
        return self._register(definition.name, definition, owner)

    async def render(
        self, name: str, args: Mapping[str, Any] | None = None, ctx: CallContext | None = None
    ) -> builtins.list[dict[str, Any]]:
        """The messages of prompt ``name`` with ``args``: ``[{"role", "content"}, ...]``.

        Raises :class:`~harness.errors.NotFound` for an unknown name,
        :class:`~harness.errors.ArgumentsError` for arguments it does not take (every
        problem listed), :class:`~harness.errors.AccessDenied` when the policy refuses it,
        and :class:`~harness.errors.ContentError` when the render fails or returns what
        cannot be served. A render that takes a context gets ``ctx`` (else a Python
        surface's, whose questions go to the approval object); an input it needs from a
        client that answers later raises :class:`~harness.tools.inputs.InputRequired`.
        """
        definition = self.get(name)
        if definition is None and await settled(self.ctx):  # its entry was reloading
            definition = self.get(name)
        definition = definition or self._definition(name)
        given = check_args(definition, args)
        await admit(self.ctx, Access("prompt", name, given), "prompts/pre-get")
        what = f"rendering prompt {name!r}"
        if definition.takes_context:
            ctx = ctx or python_context(self.ctx, "prompt", name, given)
            value = await invoke(definition.render, what, given, ctx)
        else:
            value = await invoke(definition.render, what, given)
        return messages_of(value, name)

    async def complete(
        self, name: str, argument: str, prefix: str, args: Mapping[str, str] | None = None
    ) -> Suggestions:
        """Candidates for ``argument`` of prompt ``name``, given what was typed
        (``prefix``) and the other arguments already filled."""
        definition = self._definition(name)
        where = f"argument {argument!r} of prompt {name!r}"
        return await suggest(definition.complete.get(argument), prefix, args or {}, where)

    def _definition(self, name: str) -> PromptDefinition:
        definition = self.get(name)
        if definition is None:
            known = ", ".join(self.list()) or "none are registered"
            raise NotFound(f"prompt {name!r} not found (prompts: {known})", "prompt", name)
        return definition


def check_args(definition: PromptDefinition, args: Mapping[str, Any] | None) -> dict[str, str]:
    """``args`` as the render gets them; raise ArgumentsError listing every problem."""
    if args is None:
        args = {}
    if not isinstance(args, Mapping):
        raise ArgumentsError(
            f"prompt {definition.name!r}: arguments must be an object of strings, "
            f"not {type(args).__name__}"
        )
    known = {argument.name for argument in definition.arguments}
    issues = [
        f"{argument.name}: required"
        for argument in definition.arguments
        if argument.required and argument.name not in args
    ]
    for key, value in args.items():
        if key not in known:
            issues.append(f"{key}: not an argument of this prompt")
        elif not isinstance(value, str):
            issues.append(f"{key}: expected string, got {type(value).__name__}")
    if issues:
        takes = ", ".join(sorted(known)) or "no arguments"
        raise ArgumentsError(
            f"invalid arguments for prompt {definition.name!r} (it takes {takes}): "
            + "; ".join(issues),
            issues,
        )
    return dict(args)
