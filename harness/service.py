"""Services: named objects plugins provide and inject.

A :class:`Service` registers itself under its name when constructed; the name becomes
visible as ``ctx.<name>`` once the providing plugin is active. Plugins read a service through
a :class:`ServiceView` bound to their own context, so methods marked :func:`caller_aware`
(``tools.register``, say) create their effects on the calling plugin, not on the provider.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

if TYPE_CHECKING:
    from .context import Context

F = TypeVar("F", bound=Callable[..., Any])


def caller_aware(method: F) -> F:
    """Mark a service method that takes ``caller: Context`` as a keyword argument.

    Called through ``ctx.<service>``, the method receives ``caller=ctx``; called directly on
    the service it gets ``caller=None`` and should fall back to the service's own context.
    """
    method.__harness_caller_aware__ = True  # type: ignore[attr-defined]
    return method


class Service:
    """Base class of services. Subclasses call ``super().__init__(ctx, "name")``.

    ``start`` runs after construction (the provider is then still loading) and ``stop``
    when the provider unloads.
    """

    provides: ClassVar[tuple[str, ...]] = ()
    """Names this class provides; declaring them lets the runtime report dependency cycles."""

    def __init__(self, ctx: Context, name: str) -> None:
        self.ctx = ctx
        self.service_name = name
        ctx.provide(name, self)

    async def start(self) -> None:
        """Hook: run once the service is constructed."""

    async def stop(self) -> None:
        """Hook: run when the provider unloads."""


class ServiceView:
    """A service as seen from one context: attribute access passes through to the service."""

    __slots__ = ("_caller", "_service")

    def __init__(self, service: Any, caller: Context) -> None:
        object.__setattr__(self, "_service", service)
        object.__setattr__(self, "_caller", caller)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._service, name)
        if getattr(value, "__harness_caller_aware__", False):
            return partial(value, caller=self._caller)
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._service, name, value)

    @property  # type: ignore[misc]
    def __class__(self) -> type:  # isinstance(ctx.tools, ToolsService) holds
        return type(self._service)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ServiceView):
            other = other._service
        return bool(self._service is other)

    def __hash__(self) -> int:
        return hash(self._service)

    def __repr__(self) -> str:
        return repr(self._service)


def unwrap(service: Any) -> Any:
    """The service behind a :class:`ServiceView` (or the object itself)."""
    if type(service) is ServiceView:
        return object.__getattribute__(service, "_service")
    return service
