"""``define_tool``: a tool from a declarative spec, checked when it is defined.

The definition carries what the model sees (name, description, parameters), what programs
consume (the output schema), what people see (render), and host-only fields (timeout,
concurrency, the compiled checks) that never leak into the emitted schemas.
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from types import MethodType
from typing import Any

from ..errors import DefinitionError, ToolArgsError, ToolDefinitionError
from .checks import Acceptor, Check, finish_paths, format_issues
from .fullschema import compile_full, is_full_schema
from .icons import check_icons
from .schema import compile_output, compile_parameters

NAME_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
ANNOTATION_KEYS = {
    "read_only": "readOnlyHint",
    "destructive": "destructiveHint",
    "idempotent": "idempotentHint",
    "open_world": "openWorldHint",
}
_MCP_TO_KEY = {value: key for key, value in ANNOTATION_KEYS.items()}


@dataclass(frozen=True, slots=True)
class ToolAnnotations:
    """Hints about a tool's behaviour, for clients and policies (None: not stated)."""

    read_only: bool | None = None
    """It does not change its environment."""
    destructive: bool | None = None
    """It may destroy or overwrite data."""
    idempotent: bool | None = None
    """Calling it twice with the same arguments has no further effect."""
    open_world: bool | None = None
    """It reaches outside the host (the network, say)."""
    title: str | None = None
    """A display name (MCP's ``annotations.title``; a mounted upstream tool keeps its own)."""

    @classmethod
    def of(cls, value: ToolAnnotations | Mapping[str, Any] | None, tool: str) -> ToolAnnotations:
        """Accept our keys (``read_only``) or MCP's (``readOnlyHint``)."""
        if value is None or isinstance(value, ToolAnnotations):
            return value or cls()
        if not isinstance(value, Mapping):
            raise ToolDefinitionError(f"tool {tool!r}: annotations must be a mapping")
        fields: dict[str, Any] = {}
        for key, flag in value.items():
            name = _MCP_TO_KEY.get(key, key)
            if name == "title":
                if not isinstance(flag, str):
                    raise ToolDefinitionError(f"tool {tool!r}: annotation 'title' must be a string")
                fields[name] = flag
                continue
            if name not in ANNOTATION_KEYS:
                raise ToolDefinitionError(
                    f"tool {tool!r}: unknown annotation {key!r}; use "
                    + ", ".join([*ANNOTATION_KEYS, "title"])
                )
            if not isinstance(flag, bool):
                raise ToolDefinitionError(f"tool {tool!r}: annotation {key!r} must be a bool")
            fields[name] = flag
        return cls(**fields)

    def to_mcp(self) -> dict[str, Any]:
        """The stated hints (and title) under MCP's names."""
        out: dict[str, Any] = {} if self.title is None else {"title": self.title}
        out.update(
            (ANNOTATION_KEYS[name], getattr(self, name))
            for name in ANNOTATION_KEYS
            if getattr(self, name) is not None
        )
        return out


def unchecked(value: Any) -> Any:
    """The ``check_output`` of a tool without an output schema: the value as it is."""
    return value


ArgsBinder = Callable[..., Callable[[], Any]]
"""``bind(args)``, or ``bind(args, ctx)`` for a tool that ``takes_context``."""
OutputChecker = Callable[[Any], Any]


@dataclass(frozen=True, slots=True, eq=False)
class ToolDefinition:
    """A tool: what the model sees, what programs get back, and how to run it."""

    name: str
    """Unique in a registry; what the model calls."""
    description: str
    """For the model: what it does (verb first), its limits, which tool to use instead."""
    parameters: dict[str, Any]
    """The JSON Schema of the arguments (an object)."""
    execute: Callable[..., Any]
    """The body, sync (run in a worker thread) or async."""
    output_schema: dict[str, Any] | None = None
    """The JSON Schema of the canonical value, when declared."""
    render: Callable[[Any], Any] | None = None
    """Canonical value → content blocks; None renders the value as text."""
    timeout: float | None = None
    """Seconds in all (``total``); None uses the tools service default."""
    idle: float | None = None
    """Seconds without progress (``ctx.progress``) after which the call times out; None: no
    such limit. Only a tool that takes a context can report progress."""
    concurrency_safe: bool | Callable[[Any], bool] = False
    """Whether calls may run alongside others in ``execute_many`` (or a predicate on args)."""
    annotations: ToolAnnotations = field(default_factory=ToolAnnotations)
    icons: tuple[dict[str, Any], ...] = ()
    """Icons for clients to show, as MCP spells them (``{"src", "mimeType", "sizes"}``)."""
    bind: ArgsBinder = field(default=lambda args: lambda: None, repr=False)
    """Host-only: validate parsed args and return the body's call, or raise ToolArgsError."""
    accepts: Acceptor | None = field(default=None, repr=False)
    """Host-only: a quick yes for a dict of plain scalar arguments that is valid JSON and
    that ``bind`` would accept; a call it accepts runs ``execute(args)`` without ``bind``."""
    check_output: OutputChecker = field(default=unchecked, repr=False)
    """Host-only: validate the body's value and return the canonical value, or raise."""
    is_async: bool = False
    """Host-only: the body is a coroutine function."""
    task: str | None = None
    """``"optional"`` or ``"required"``: over MCP, a client that declared the tasks extension
    gets a task for a call and polls it (docs/store.md#tasks); ``"required"`` refuses a client
    that did not (-32021). None: calls are answered when they finish."""
    ask_first: bool = False
    """With ``task``: the call's first inputs are asked in the request (an MCP 2026-07-28
    ``InputRequiredResult``), and the round that answers them becomes the task
    (docs/store.md#ask-first-then-a-task). False: the task starts at once."""
    takes_context: bool = False
    """Host-only: the body receives the call's :class:`~harness.tools.call_context.CallContext`
    (``bind(args, ctx)``; ``execute(args, ctx)`` after the acceptor's yes)."""
    title: str | None = None
    """A display name for people, when ``name`` is an identifier (MCP's ``title``)."""
    meta: Mapping[str, Any] | None = None
    """MCP's ``_meta`` of the tool, listed as it is (a mounted upstream tool's own)."""


class OutputMismatch(ValueError):
    """Raised by ``check_output`` when a value does not match the output schema."""


def define_tool(
    *,
    name: str,
    description: str,
    execute: Callable[..., Any],
    parameters: Mapping[str, Any] | None = None,
    output: Mapping[str, Any] | None = None,
    timeout: float | Mapping[str, float] | None = None,
    concurrency_safe: bool | Callable[[Any], bool] | None = None,
    annotations: ToolAnnotations | Mapping[str, Any] | None = None,
    icons: Any = None,
    task: str | None = None,
    ask_first: bool = False,
) -> ToolDefinition:
    """Define a tool from a parameter spec; raise ToolDefinitionError when it is malformed.

    ``parameters`` is harness's spec (a property map), or, when it has a ``"$schema"`` key,
    a JSON Schema 2020-12 document used and validated as written
    (:mod:`harness.tools.fullschema`).

    ``execute(args)`` receives the validated argument dict; an ``execute`` with two
    positional parameters that have no default is called ``execute(args, ctx)`` with the
    call's :class:`~harness.tools.call_context.CallContext`. ``timeout`` is seconds or
    ``{"total": s, "idle": s}``. ``concurrency_safe`` defaults to the ``read_only`` annotation.
    ``task`` and ``ask_first``: how it runs as an MCP task (docs/store.md#mcp-tasks).
    """
    check_name(name)
    where = f"tool {name!r}"
    if not isinstance(description, str) or not description.strip():
        raise ToolDefinitionError(f"{where}: description must be a non-empty string")
    if not callable(execute):
        raise ToolDefinitionError(f"{where}: execute must be a function")
    accepts: Acceptor | None = None
    takes_context = wants_context(execute)
    try:
        if parameters is not None and is_full_schema(parameters):
            schema, full = compile_full(parameters, "parameters")
            bind = _full_binder(full, execute, takes_context)
        else:
            schema, check, accepts = compile_parameters(parameters or {}, "parameters")
            bind = _binder(check, execute, takes_context)
    except ToolDefinitionError as exc:
        raise ToolDefinitionError(f"{where}: {exc}") from None
    output_schema: dict[str, Any] | None = None
    output_check: Check | None = None
    renderer = None
    if output is not None:
        if not isinstance(output, Mapping):
            raise ToolDefinitionError(f"{where}: output must be a mapping with schema and render")
        unknown = set(output) - {"schema", "render"}
        if unknown:
            raise ToolDefinitionError(
                f"{where}: output has unknown keys {sorted(unknown)}; allowed are schema, render"
            )
        if output.get("schema") is not None:
            try:
                output_schema, output_check = compile_output(output["schema"], "output.schema")
            except ToolDefinitionError as exc:
                raise ToolDefinitionError(f"{where}: {exc}") from None
        renderer = output.get("render")
        if renderer is not None and not callable(renderer):
            raise ToolDefinitionError(f"{where}: output.render must be a function")
    marks = ToolAnnotations.of(annotations, name)
    total, idle = check_timeouts(timeout, where)
    return ToolDefinition(
        name=name,
        description=description.strip(),
        parameters=schema,
        execute=execute,
        output_schema=output_schema,
        render=renderer,
        timeout=total,
        idle=idle,
        takes_context=takes_context,
        concurrency_safe=check_concurrency(concurrency_safe, marks, where),
        annotations=marks,
        icons=tool_icons(icons, where),
        task=check_task(task, where),
        ask_first=check_ask_first(ask_first, task, where),
        bind=bind,
        accepts=accepts,
        check_output=_output_checker(output_check),
        is_async=inspect.iscoroutinefunction(execute),
    )


def check_name(name: Any) -> None:
    """Tool names are what OpenAI accepts: 1-64 of letters, digits, ``_`` and ``-``."""
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        raise ToolDefinitionError(
            f"tool name {name!r} is invalid: use 1 to 64 letters, digits, '_' or '-'"
        )


TASK_SUPPORT = ("optional", "required")
"""What ``task=`` accepts (None: the tool does not run as an MCP task)."""


def check_task(task: Any, where: str) -> str | None:
    """None, ``"optional"`` or ``"required"``."""
    if task is None or task in TASK_SUPPORT:
        return task  # type: ignore[no-any-return]
    raise ToolDefinitionError(
        f"{where}: task must be 'optional' or 'required' (None: no task support), got {task!r}"
    )


def check_ask_first(ask_first: Any, task: Any, where: str) -> bool:
    """``ask_first`` is a bool, and True only for a tool that runs as a task."""
    if not isinstance(ask_first, bool):
        raise ToolDefinitionError(f"{where}: ask_first must be True or False, got {ask_first!r}")
    if ask_first and task is None:
        raise ToolDefinitionError(
            f"{where}: ask_first=True says when its task starts, but the tool runs as no task; "
            "give task='optional' or 'required' as well"
        )
    return ask_first


def tool_icons(icons: Any, where: str) -> tuple[dict[str, Any], ...]:
    """Checked icons (:func:`~harness.tools.icons.check_icons`), refused as a tool's."""
    try:
        return check_icons(icons, where)
    except DefinitionError as exc:
        raise ToolDefinitionError(str(exc)) from None


def check_timeout(timeout: Any, where: str) -> float | None:
    """None, or a positive, finite number of seconds (NaN and infinity are refused)."""
    if timeout is None:
        return None
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not math.isfinite(timeout)
        or timeout <= 0
    ):
        raise ToolDefinitionError(
            f"{where}: timeout must be a positive number of seconds (None for no limit), "
            f"got {timeout!r}"
        )
    return float(timeout)


def check_timeouts(timeout: Any, where: str) -> tuple[float | None, float | None]:
    """``(total, idle)`` from seconds, None, or ``{"total": s, "idle": s}`` (either may be
    left out)."""
    if not isinstance(timeout, Mapping):
        return check_timeout(timeout, where), None
    unknown = set(timeout) - {"total", "idle"}
    if unknown:
        raise ToolDefinitionError(
            f"{where}: timeout has unknown keys {sorted(map(str, unknown))}; use total and idle"
        )
    return (
        check_timeout(timeout.get("total"), f"{where}: timeout.total"),
        check_timeout(timeout.get("idle"), f"{where}: timeout.idle"),
    )


def wants_context(execute: Callable[..., Any]) -> bool:
    """Whether ``execute`` takes ``(args, ctx)``: two positional parameters without defaults
    (so ``lambda args, i=i: ...`` still gets ``args`` alone)."""
    try:
        parameters = inspect.signature(execute).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [
        p
        for p in parameters
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    ]
    return len(positional) == 2


def check_concurrency(value: Any, marks: ToolAnnotations, where: str) -> bool | Callable[..., bool]:
    """A bool or a predicate; None defaults to the ``read_only`` annotation."""
    if value is None:
        return bool(marks.read_only)
    if isinstance(value, bool):
        return value
    if callable(value):
        predicate: Callable[..., bool] = value
        return predicate
    raise ToolDefinitionError(f"{where}: concurrency_safe must be a bool or a function of args")


def _binder(check: Check, execute: Callable[..., Any], takes_context: bool) -> ArgsBinder:
    def bind(args: Any, ctx: Any = None) -> Callable[[], Any]:
        issues = check(args)
        if issues:
            found = finish_paths(issues)
            raise ToolArgsError(format_issues(found), [format_issues([issue]) for issue in found])
        if takes_context:
            return partial(execute, args, ctx)
        # execute bound to args: calling it calls execute(args), a little faster than partial
        return MethodType(execute, args)

    return bind


def _full_binder(
    check: Callable[[Any], None], execute: Callable[..., Any], takes_context: bool
) -> ArgsBinder:
    def bind(args: Any, ctx: Any = None) -> Callable[[], Any]:
        check(args)  # raises ToolArgsError listing every violation
        return partial(execute, args, ctx) if takes_context else MethodType(execute, args)

    return bind


def _output_checker(check: Check | None) -> OutputChecker:
    if check is None:
        return unchecked

    def checker(value: Any) -> Any:
        issues = check(value)
        if issues:
            raise OutputMismatch(format_issues(finish_paths(issues)))
        return value

    return checker
