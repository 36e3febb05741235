"""The ``resources`` service: the resources plugins registered, and reading them.

A registry (:mod:`harness.registry`) keyed by URI or template: ``register`` is an effect of
the calling plugin, changes emit ``resources/change``. ``list()`` gives the fixed URIs and
``templates()`` the templates, both in order; ``await read(uri)`` finds the resource (a
fixed URI first, then the first template in order that matches), lets the policy decide
(``resources/pre-read``, :mod:`harness.tools.access`) and reads it. ``notify_updated(uri)``
tells subscribers (MCP clients) that a resource changed: the ``resources/updated`` event.
``await subscribe(uri)`` and ``await unsubscribe(uri)`` count the surfaces' subscribers
(:mod:`.subscriptions`), so a resource with a ``watch`` hears of its first and last.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import DefinitionError, NotFound
from ..registry import Registry
from ..service import Service, caller_aware
from ..tools.access import Access, admit, settled
from ..tools.call_context import CallContext
from .completions import Suggestions, suggest
from .contents import ResourceContents, contents_of
from .define import ResourceDefinition
from .invoke import invoke, python_context
from .subscriptions import Subscriptions

if TYPE_CHECKING:
    from ..context import Context

__all__ = ["ResourcesService"]


class ResourcesService(Registry[ResourceDefinition], Service):
    """The resource registry and its reads, provided as ``ctx.resources``."""

    name = "resources"
    provides = ("resources",)
    inject: ClassVar[dict[str, Any]] = {"tools": {"required": False}}  # its policy gates
    kind = "resource"
    changes = "resources/change"

    def __init__(self, ctx: Context) -> None:
        Registry.__init__(self, ctx)
        Service.__init__(self, ctx, "resources")
        self._split: tuple[builtins.list[str], builtins.list[str]] | None = None
        """(fixed URIs, templates) in order, until the registry changes."""
        self.subscriptions = Subscriptions(self)

    @caller_aware
    def register(
        self, definition: ResourceDefinition, *, caller: Context | None = None
    ) -> Callable[[], None]:
        """Register a resource as an effect of the calling plugin; return its dispose.

        A URI (or template) another plugin holds raises :class:`~harness.errors.NameConflict`.
        """
        owner = caller or self.ctx
        if not isinstance(definition, ResourceDefinition):
            raise DefinitionError(
                f"{owner.describe()} registered {definition!r}: expected a ResourceDefinition "
                "(define_resource or @resource)"
            )
        return self._register(definition.uri, definition, owner)

    def list(self) -> builtins.list[str]:
        """The fixed URIs, in order."""
        return builtins.list(self._parts()[0])

    def templates(self) -> builtins.list[str]:
        """The URI templates, in order."""
        return builtins.list(self._parts()[1])

    def find(self, uri: str) -> tuple[ResourceDefinition, dict[str, str]] | None:
        """The resource ``uri`` names and its variables, or None.

        Raises :class:`~harness.errors.ArgumentsError` when a template matches but refuses
        a value (see :mod:`.template`).
        """
        entry = self._entries.get(uri)
        if entry is not None and not entry.definition.is_template:
            return entry.definition, {}
        for key in self._parts()[1]:
            definition = self._entries[key].definition
            params = definition.template.match(uri)
            if params is not None:
                return definition, params
        return None

    async def read(
        self, uri: str, ctx: CallContext | None = None
    ) -> builtins.list[ResourceContents]:
        """Read ``uri``: its contents, one or more.

        Raises :class:`~harness.errors.NotFound` when nothing has this URI,
        :class:`~harness.errors.AccessDenied` when the policy refuses it,
        :class:`~harness.errors.ArgumentsError` when a template refuses a value, and
        :class:`~harness.errors.ContentError` when the read fails or returns what cannot be
        served. A read that takes a context gets ``ctx`` (else a Python surface's).
        """
        if not isinstance(uri, str):
            raise TypeError(f"a resource URI is a string, not {type(uri).__name__}")
        found = self.find(uri)
        if found is None and await settled(self.ctx):  # its entry was reloading: look again
            found = self.find(uri)
        if found is None:
            raise NotFound(
                f"resource {uri!r} not found: no resource has this URI and no template matches it",
                "resource",
                uri,
            )
        definition, params = found
        await admit(self.ctx, Access("resource", uri, params), "resources/pre-read")
        try:
            what = f"reading resource {uri!r}"
            if definition.takes_context:
                ctx = ctx or python_context(self.ctx, "resource", uri, params)
                value = await invoke(definition.read, what, params, ctx)
            else:
                value = await invoke(definition.read, what, params)
        except NotFound as exc:  # the read's own: nothing at this URI
            if not exc.key:
                exc.kind, exc.key = "resource", uri
            raise
        return contents_of(value, uri, definition.mime_type)

    def notify_updated(self, uri: str) -> None:
        """Tell subscribers that the resource at ``uri`` changed (``resources/updated``)."""
        if not isinstance(uri, str):
            raise TypeError(f"a resource URI is a string, not {type(uri).__name__}")
        self._bus.emit("resources/updated", uri)

    async def subscribe(self, uri: str) -> None:
        """A client subscribed to ``uri`` (see :mod:`.subscriptions`); raises
        :class:`~harness.errors.AccessDenied` when the policy refuses reading it (a
        subscription tells when it changes, so it is judged as a read), or what the
        resource's ``watch`` raised when it could not subscribe."""
        await admit(self.ctx, Access("resource", uri), "resources/pre-read")
        await self.subscriptions.subscribe(uri)

    async def unsubscribe(self, uri: str) -> None:
        """A client subscribed to ``uri`` unsubscribed or went away."""
        await self.subscriptions.unsubscribe(uri)

    async def complete(
        self, uri: str, argument: str, prefix: str, args: Mapping[str, str] | None = None
    ) -> Suggestions:
        """Candidates for the variable ``argument`` of the template ``uri``, given what was
        typed (``prefix``) and the other variables already filled."""
        definition = self.get(uri)
        if definition is None:
            raise NotFound(f"resource template {uri!r} not found", "resource", uri)
        where = f"variable {argument!r} of {uri!r}"
        return await suggest(definition.complete.get(argument), prefix, args or {}, where)

    def _changed(self) -> None:
        super()._changed()
        self._split = None

    def _parts(self) -> tuple[builtins.list[str], builtins.list[str]]:
        if self._split is None:
            fixed: builtins.list[str] = []
            templates: builtins.list[str] = []
            for key in self._ordered():
                (templates if self._entries[key].definition.is_template else fixed).append(key)
            self._split = (fixed, templates)
        return self._split
