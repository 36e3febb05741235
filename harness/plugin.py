"""What counts as a plugin, and how its config is validated.

A plugin is a function ``apply(ctx[, config])``, a class instantiated with ``(ctx[, config])``,
or any object (a module, say) with an ``apply`` attribute. Optional attributes on the plugin:
``name``, ``inject``, ``provides`` and ``Config``. :func:`spec_of` reads them once and
returns a :class:`PluginSpec` the runtime uses without further introspection.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pydantic

from .errors import ConfigError, PluginError

if TYPE_CHECKING:
    from .context import Context


@dataclass(frozen=True, slots=True)
class PluginSpec:
    """A plugin read once: how to apply it and what it declares."""

    plugin: Any
    """The plugin object as given."""
    name: str
    """Used in logs, errors and the logger name ``harness.plugin.<name>``."""
    apply: Callable[[Context, Any], Any]
    """Normalised to ``(ctx, config)``; may return an awaitable, a disposer or a service."""
    inject: Mapping[str, bool]
    """Service name → required."""
    provides: tuple[str, ...]
    """Services the plugin declares it provides (used to report dependency cycles)."""
    config_model: Any
    """The ``Config`` attribute: a pydantic model, a callable validator, or None."""
    is_class: bool


def spec_of(
    plugin: Any, name: str | None = None, extra_inject: Mapping[str, Any] | list[str] | None = None
) -> PluginSpec:
    """Read ``plugin``'s shape; raise :class:`PluginError` when it is not a plugin."""
    is_class, target, arity, label, inject = _shape(plugin, name, extra_inject)
    if arity == 1:

        def apply(ctx: Context, config: Any) -> Any:
            return target(ctx)

    else:

        def apply(ctx: Context, config: Any) -> Any:
            return target(ctx, config)

    provides = getattr(plugin, "provides", ())
    if isinstance(provides, str):
        provides = (provides,)
    if not provides:
        provides = learned_provides(plugin)
    return PluginSpec(
        plugin=plugin,
        name=label,
        apply=apply,
        inject=inject,
        provides=tuple(provides),
        config_model=getattr(plugin, "Config", None),
        is_class=is_class,
    )


def check_plugin(plugin: Any) -> None:
    """Raise the :class:`PluginError` :func:`spec_of` would raise for ``plugin``, if any,
    without building its spec (what it provides is not read)."""
    _shape(plugin, None, None)


def _shape(
    plugin: Any, name: str | None, extra_inject: Mapping[str, Any] | list[str] | None
) -> tuple[bool, Any, int, str, dict[str, bool]]:
    """Whether ``plugin`` is a class, what to call, its arity, its name and its inject."""
    is_class = inspect.isclass(plugin)
    if is_class:
        target: Any = plugin
        arity = _arity(plugin.__init__, skip_self=True)
    elif inspect.isfunction(plugin) or inspect.ismethod(plugin):
        target = plugin
        arity = _arity(plugin)
    elif callable(getattr(plugin, "apply", None)):
        target = plugin.apply
        arity = _arity(target)
    else:
        raise PluginError(
            f"{plugin!r} is not a plugin: expected a function apply(ctx[, config]), a class, "
            "or an object with an apply attribute"
        )
    label = name or _name_of(plugin)
    if arity == 0:
        raise PluginError(f"plugin {label!r}: apply must accept (ctx) or (ctx, config)")
    inject = parse_inject(getattr(plugin, "inject", None), label)
    if extra_inject:
        inject = {**inject, **parse_inject(extra_inject, label)}
    return is_class, target, arity, label, inject


def learned_provides(plugin: Any) -> tuple[str, ...]:
    """Service names a plugin's code provides with literal names, read from its source.

    Finds ``super().__init__(ctx, "name")`` in the ``__init__`` of a class and its bases
    (how a :class:`~harness.service.Service` names itself) and ``ctx.provide("name", ...)``
    in ``apply`` or ``__init__``, so dependency cycles are reported without a ``provides``
    declaration. Names computed at run time are not seen: declare them in ``provides``.
    """
    functions: list[Any] = []
    if inspect.isclass(plugin):
        functions = [
            klass.__dict__["__init__"]
            for klass in plugin.__mro__
            if klass is not object and "__init__" in klass.__dict__
        ]
    elif inspect.isfunction(plugin) or inspect.ismethod(plugin):
        functions = [plugin]
    elif callable(getattr(plugin, "apply", None)):
        functions = [plugin.apply]
    names: list[str] = []
    for function in functions:
        if not _may_provide(getattr(function, "__code__", None)):
            continue  # reading and parsing the source would find nothing
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
        except (OSError, TypeError, SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            literals = [
                arg.value
                for arg in node.args
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str)
            ]
            target = node.func.value
            is_super_init = (
                node.func.attr == "__init__"
                and isinstance(target, ast.Call)
                and isinstance(target.func, ast.Name)
                and target.func.id == "super"
            )
            wanted = is_super_init or node.func.attr == "provide"
            if wanted and literals and literals[0] not in names:
                names.append(literals[0])
    return tuple(names)


def _may_provide(code: Any) -> bool:
    """False when ``code`` (and the code nested in it) names no ``provide`` and no
    ``super().__init__``: then its source holds no call :func:`learned_provides` looks for."""
    if not isinstance(code, types.CodeType):
        return True
    pending = [code]
    while pending:
        current = pending.pop()
        names = current.co_names
        if "provide" in names or ("super" in names and "__init__" in names):
            return True
        pending.extend(c for c in current.co_consts if isinstance(c, types.CodeType))
    return False


def parse_inject(value: Any, plugin_name: str) -> dict[str, bool]:
    """Normalise ``inject`` (a list of names, or a mapping name → options) to name → required."""
    if value is None:
        return {}
    if isinstance(value, str):
        return {value: True}
    if isinstance(value, Mapping):
        result: dict[str, bool] = {}
        for key, options in value.items():
            if options is None or options is True:
                result[str(key)] = True
            elif options is False:
                result[str(key)] = False
            elif isinstance(options, Mapping):
                result[str(key)] = bool(options.get("required", True))
            else:
                raise PluginError(
                    f"plugin {plugin_name!r}: inject[{key!r}] must be a mapping such as "
                    f"{{'required': False}}, got {options!r}"
                )
        return result
    if isinstance(value, list | tuple | set | frozenset):
        return {str(item): True for item in value}
    raise PluginError(
        f"plugin {plugin_name!r}: inject must be a list of service names or a mapping, "
        f"got {type(value).__name__}"
    )


def validate_config(spec: PluginSpec, raw: Any) -> Any:
    """Validate ``raw`` with the plugin's ``Config``; raise :class:`ConfigError` listing issues."""
    model = spec.config_model
    if model is None:
        return {} if raw is None else raw
    if inspect.isclass(model) and issubclass(model, pydantic.BaseModel):
        try:
            return model.model_validate({} if raw is None else raw)
        except pydantic.ValidationError as exc:
            raise ConfigError(f"invalid config for plugin {spec.name!r}", issues_of(exc)) from exc
    if not callable(model):
        raise PluginError(f"plugin {spec.name!r}: Config must be a pydantic model or a callable")
    try:
        return model(raw)
    except pydantic.ValidationError as exc:
        raise ConfigError(f"invalid config for plugin {spec.name!r}", issues_of(exc)) from exc
    except ConfigError:
        raise
    except Exception as exc:
        raise ConfigError(f"invalid config for plugin {spec.name!r}", [str(exc)]) from exc


def issues_of(error: pydantic.ValidationError) -> list[str]:
    """Every issue of a pydantic error as ``path: message``.

    A validator's own ``ValueError`` (or ``AssertionError``) is already written for people:
    its text is used as it is, without pydantic's "Value error, " in front.
    """
    issues = []
    for item in error.errors(include_url=False):
        path = format_path(item["loc"])
        raised = item.get("ctx", {}).get("error")
        own = item["type"] in ("value_error", "assertion_error") and str(raised or "")
        message = own or str(item["msg"])
        issues.append(f"{path}: {message}" if path else message)
    return issues


def format_path(loc: tuple[int | str, ...] | list[int | str]) -> str:
    """Render a location as ``a.b[2].c``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _arity(func: Callable[..., Any], skip_self: bool = False) -> int:
    plain = type(func) is types.FunctionType
    if plain and not hasattr(func, "__wrapped__") and not hasattr(func, "__signature__"):
        code = func.__code__  # what inspect.signature would read, without building it
        if code.co_flags & inspect.CO_VARARGS:
            return 2
        count = code.co_argcount
        if skip_self and count and code.co_varnames[0] == "self":
            count -= 1
        return min(count, 2)
    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):  # builtins without a signature: assume (ctx, config)
        return 2
    if skip_self and params and params[0].name == "self":
        params = params[1:]
    count = 0
    for param in params:
        if param.kind is inspect.Parameter.VAR_POSITIONAL:
            return 2
        if param.kind in (
            inspect.Parameter.POSITIONAL_ONLY,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
        ):
            count += 1
    return min(count, 2)


def _name_of(plugin: Any) -> str:
    name = getattr(plugin, "name", None)
    if isinstance(name, str) and name:
        return name
    return str(getattr(plugin, "__name__", type(plugin).__name__))
