"""Services: named objects plugins provide and inject.

A :class:`Service` registers itself under its name when constructed; the name becomes
visible as ``ctx.<name>`` once the providing plugin is active. Plugins read a service through
a :class:`ServiceView` bound to their own context, so methods marked :func:`caller_aware`
(``tools.register``, say) create their effects on the calling plugin, not on the provider.
"""

from __future__ import annotations

import inspect
import operator
from collections.abc import Callable, Iterator
from functools import partial
from types import FunctionType, MethodType
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar
from weakref import WeakKeyDictionary

if TYPE_CHECKING:
    from .context import Context

F = TypeVar("F", bound=Callable[..., Any])
S = TypeVar("S")


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


class ServiceView(Generic[S]):
    """A service as seen from one context: it behaves as the service it wraps.

    Attribute access passes through (methods marked :func:`caller_aware` receive the viewing
    context), and so do the protocols people use on a value: ``str``/``format``/``repr``,
    equality and hashing by the underlying value, ordering, item access, calls, ``len``,
    iteration, ``in``, ``bool``, ``int``/``float``/``index``. It answers as its service's
    class, as ``wrapt.ObjectProxy`` does: ``isinstance(ctx.tools, ToolsService)`` is true
    (and so is ``isinstance(view, ServiceView)``; ``type(view)`` is a view class).
    :func:`unwrap` gives the object itself.

    Views are made by :func:`view_of`: each service class gets its own view class, whose
    plain methods (not :func:`caller_aware`, defined on the service's class) are read
    through a property that looks the method up on the service each time, in C: a view
    reads ``ctx.tools.execute`` about as fast as the service itself, and always the
    service's current attribute. Everything else goes through ``__getattr__``.
    """

    __slots__ = ("_caller", "_service")

    _service: Any
    _caller: Context

    def __init__(self, service: S, caller: Context) -> None:
        object.__setattr__(self, "_service", service)
        object.__setattr__(self, "_caller", caller)

    @property  # type: ignore[misc]  # a proxy's class is its target's: isinstance passes
    def __class__(self) -> type[Any]:
        return type(object.__getattribute__(self, "_service"))

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._service, name)
        marks = getattr(value.__func__, "__dict__", None) if type(value) is MethodType else None
        if marks is not None:  # a method: its function's mark, read without an attribute miss
            aware = marks.get("__harness_caller_aware__", False)
        else:
            aware = getattr(value, "__harness_caller_aware__", False)
        if aware:
            return partial(value, caller=self._caller)
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._service, name, value)

    def __delattr__(self, name: str) -> None:
        delattr(self._service, name)

    def __dir__(self) -> list[str]:
        return dir(self._service)

    def __repr__(self) -> str:
        return repr(self._service)

    def __str__(self) -> str:
        return str(self._service)

    def __format__(self, spec: str) -> str:
        return format(self._service, spec)

    def __eq__(self, other: object) -> bool:
        return bool(self._service == unwrap(other))

    def __ne__(self, other: object) -> bool:
        return bool(self._service != unwrap(other))

    def __lt__(self, other: Any) -> Any:
        return self._service < unwrap(other)

    def __le__(self, other: Any) -> Any:
        return self._service <= unwrap(other)

    def __gt__(self, other: Any) -> Any:
        return self._service > unwrap(other)

    def __ge__(self, other: Any) -> Any:
        return self._service >= unwrap(other)

    def __hash__(self) -> int:
        return hash(self._service)

    def __bool__(self) -> bool:
        return bool(self._service)

    def __len__(self) -> int:
        return len(self._service)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._service)

    def __contains__(self, item: object) -> bool:
        return item in self._service

    def __getitem__(self, key: Any) -> Any:
        return self._service[key]

    def __setitem__(self, key: Any, value: Any) -> None:
        self._service[key] = value

    def __delitem__(self, key: Any) -> None:
        del self._service[key]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._service(*args, **kwargs)

    def __int__(self) -> int:
        return int(self._service)

    def __float__(self) -> float:
        return float(self._service)

    def __index__(self) -> int:
        return operator.index(self._service)


_VIEW_TYPES: WeakKeyDictionary[type[Any], type[ServiceView[Any]]] = WeakKeyDictionary()


def view_of(service: S, caller: Context) -> ServiceView[S]:
    """A view of ``service`` from ``caller``, of its class's view class."""
    kind = type(service)
    view_type = _VIEW_TYPES.get(kind)
    if view_type is None:
        view_type = _VIEW_TYPES[kind] = _view_type(kind)
    return view_type(service, caller)


def _view_type(kind: type[Any]) -> type[ServiceView[Any]]:
    namespace: dict[str, Any] = {"__slots__": ()}
    for name in dir(kind):
        if name.startswith("_"):
            continue
        method = inspect.getattr_static(kind, name, None)
        if type(method) is FunctionType and not method.__dict__.get("__harness_caller_aware__"):
            namespace[name] = property(operator.attrgetter(f"_service.{name}"))
    return type(f"ServiceView[{kind.__qualname__}]", (ServiceView,), namespace)


def unwrap(service: ServiceView[S] | S) -> S:
    """The service behind a :class:`ServiceView` (or the object itself)."""
    if isinstance(service, ServiceView):  # its type is a view class (ServiceView or below)
        found: S = object.__getattribute__(service, "_service")
        return found
    return service
