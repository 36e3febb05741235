"""``@tool``: a tool from a function's signature, type hints and docstring (via pydantic).

The parameters' JSON Schema and validator come from a pydantic model of the signature;
per-parameter descriptions from ``Annotated[..., Field(description=...)]`` or the
docstring's ``Args:`` section (``:param x:`` works too); the description from the
docstring's text before its sections; the output schema from the return annotation.

Arguments are validated in pydantic's strict JSON mode, whatever form they arrive in:
``"1"`` is not a number and ``true`` is not an integer, while ISO dates, enums by value and
nested models parse as they would from JSON. Unlike ``define_tool`` specs, strict pydantic
rejects ``1.0`` for an ``int`` parameter (annotate ``float`` to accept both).
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, overload

import pydantic
from pydantic.fields import FieldInfo
from pydantic_core import to_json

from ..errors import ToolArgsError, ToolDefinitionError
from ..plugin import format_path
from .call_context import CallContext
from .definition import (
    OutputChecker,
    OutputMismatch,
    ToolAnnotations,
    ToolDefinition,
    check_ask_first,
    check_concurrency,
    check_name,
    check_task,
    check_timeouts,
    tool_icons,
)

_SECTION = re.compile(
    r"^\s*(Args|Arguments|Parameters|Returns|Raises|Yields|Examples?|Notes?):\s*$"
)
_SPHINX_PARAM = re.compile(r"^\s*:param\s+(?:\w+\s+)?(\w+):\s*(.*)$")

Func = Callable[..., Any]


@overload
def tool(func: Func, /) -> ToolDefinition: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    render: Callable[[Any], Any] | None = None,
    timeout: float | Mapping[str, float] | None = None,
    concurrency_safe: bool | Callable[[Any], bool] | None = None,
    annotations: ToolAnnotations | Mapping[str, Any] | None = None,
    icons: Any = None,
    task: str | None = None,
    ask_first: bool = False,
) -> Callable[[Func], ToolDefinition]: ...


def tool(
    func: Func | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    render: Callable[[Any], Any] | None = None,
    timeout: float | Mapping[str, float] | None = None,
    concurrency_safe: bool | Callable[[Any], bool] | None = None,
    annotations: ToolAnnotations | Mapping[str, Any] | None = None,
    icons: Any = None,
    task: str | None = None,
    ask_first: bool = False,
) -> ToolDefinition | Callable[[Func], ToolDefinition]:
    """Define a tool from a function: ``@tool`` or ``@tool(name=..., timeout=...)``."""

    def build(target: Func) -> ToolDefinition:
        return _from_function(
            target,
            name,
            description,
            render,
            timeout,
            concurrency_safe,
            annotations,
            icons,
            task,
            ask_first,
        )

    return build if func is None else build(func)


def _from_function(
    func: Func,
    name: str | None,
    description: str | None,
    render: Callable[[Any], Any] | None,
    timeout: float | Mapping[str, float] | None,
    concurrency_safe: bool | Callable[[Any], bool] | None,
    annotations: ToolAnnotations | Mapping[str, Any] | None,
    icons: Any = None,
    task: str | None = None,
    ask_first: bool = False,
) -> ToolDefinition:
    if not callable(func):
        raise ToolDefinitionError(f"@tool needs a function, got {type(func).__name__}")
    tool_name: str = name or str(getattr(func, "__name__", ""))
    check_name(tool_name)
    where = f"tool {tool_name!r}"
    summary, param_docs = parse_docstring(inspect.getdoc(func) or "")
    text = (description or summary).strip()
    if not text:
        raise ToolDefinitionError(
            f"{where}: give the function a docstring or pass description= (the model needs it)"
        )
    try:
        hints = typing.get_type_hints(func, include_extras=True)
    except Exception as exc:
        raise ToolDefinitionError(f"{where}: cannot read its type hints: {exc}") from exc
    fields: dict[str, Any] = {}
    positional: list[str] = []
    context_name: str | None = None
    for param in inspect.signature(func).parameters.values():
        if _is_context(hints.get(param.name)):
            if param.kind is param.POSITIONAL_ONLY:
                raise ToolDefinitionError(
                    f"{where}: the CallContext parameter cannot be positional-only"
                )
            context_name = param.name  # given the call's context; not in the schema
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ToolDefinitionError(
                f"{where}: *{param.name} parameters cannot be described to a model; "
                "declare each argument"
            )
        if param.kind is param.POSITIONAL_ONLY:
            positional.append(param.name)
        annotation = keep_ints(hints.get(param.name, Any))
        default = ... if param.default is inspect.Parameter.empty else param.default
        doc = param_docs.get(param.name)
        if doc and not _has_description(annotation):
            default = pydantic.Field(default, description=doc)
        fields[param.name] = (annotation, default)
    try:
        model = pydantic.create_model(
            f"{tool_name}_arguments",
            __config__=pydantic.ConfigDict(extra="ignore", arbitrary_types_allowed=False),
            **fields,
        )
        schema = clean_schema(model.model_json_schema())
    except (pydantic.PydanticUserError, pydantic.PydanticSchemaGenerationError, TypeError) as exc:
        raise ToolDefinitionError(f"{where}: cannot describe its parameters: {exc}") from exc
    schema.setdefault("properties", {})
    output_schema, check_output = _output_of(hints.get("return", inspect.Parameter.empty), where)
    marks = ToolAnnotations.of(annotations, tool_name)
    validator = model.__pydantic_validator__
    names = tuple(fields)
    total, idle = check_timeouts(timeout, where)
    return ToolDefinition(
        name=tool_name,
        description=text,
        parameters={"type": "object", **{k: v for k, v in schema.items() if k != "type"}},
        execute=func,
        output_schema=output_schema,
        render=render,
        timeout=total,
        idle=idle,
        takes_context=context_name is not None,
        concurrency_safe=check_concurrency(concurrency_safe, marks, where),
        annotations=marks,
        icons=tool_icons(icons, where),
        task=check_task(task, where),
        ask_first=check_ask_first(ask_first, task, where),
        bind=partial(_bind_model, validator, func, names, tuple(positional), context_name),
        check_output=check_output,
        is_async=inspect.iscoroutinefunction(func),
    )


def _bind_model(
    validator: Any,
    func: Func,
    names: tuple[str, ...],
    positional: tuple[str, ...],
    context_name: str | None,
    args: Any,
    ctx: Any = None,
) -> Callable[[], Any]:
    try:
        model = validator.validate_json(to_json(args), strict=True)
    except pydantic.ValidationError as exc:
        issues = pydantic_issues(exc)
        raise ToolArgsError("; ".join(issues), issues) from None
    values = {key: getattr(model, key) for key in names}
    if context_name is not None:
        values[context_name] = ctx
    if positional:
        return partial(func, *(values.pop(key) for key in positional), **values)
    return partial(func, **values)


def _is_context(annotation: Any) -> bool:
    """Whether a parameter's annotation is ``CallContext`` (or ``CallContext | None``)."""
    if annotation is CallContext:
        return True
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return CallContext in typing.get_args(annotation)
    return False


def _output_of(annotation: Any, where: str) -> tuple[dict[str, Any] | None, OutputChecker]:
    if annotation is inspect.Parameter.empty or annotation is None or annotation is type(None):
        return None, _to_jsonable
    try:
        adapter: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(keep_ints(annotation))
        schema = clean_schema(adapter.json_schema())
    except (pydantic.PydanticUserError, pydantic.PydanticSchemaGenerationError) as exc:
        raise ToolDefinitionError(f"{where}: cannot describe its return type: {exc}") from exc

    def check(value: Any) -> Any:
        try:
            valid = adapter.validate_python(value, strict=True)
        except pydantic.ValidationError as exc:
            raise OutputMismatch("; ".join(pydantic_issues(exc))) from None
        return adapter.dump_python(valid, mode="json")

    return (schema or None), check


def _int_stays_int(value: Any, handler: pydantic.ValidatorFunctionWrapHandler) -> Any:
    return value if type(value) is int else handler(value)


def _int_dumped_as_int(value: Any, handler: pydantic.SerializerFunctionWrapHandler) -> Any:
    return value  # dumped as int | float: an int stays an int, NaN and inf reach the JSON check


_NUMBER_KEEPING_INTS = (
    pydantic.WrapValidator(_int_stays_int),
    pydantic.WrapSerializer(_int_dumped_as_int, return_type=int | float),
)


def keep_ints(annotation: Any) -> Any:
    """``float`` (also inside ``Annotated``, unions, lists, tuples and dicts) that keeps a
    whole JSON integer an ``int``: ``add(1, 2)`` gives ``3``, not ``3.0``.

    Typing already treats ``int`` as a ``float``; the schema stays ``{"type": "number"}``.
    """
    if annotation is float:
        return typing.Annotated[float, *_NUMBER_KEEPING_INTS]
    origin = typing.get_origin(annotation)
    if origin is None:
        return annotation
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        inner = keep_ints(args[0])
        if inner is args[0]:
            return annotation
        return typing.Annotated[inner, *annotation.__metadata__]
    mapped = tuple(keep_ints(arg) for arg in args)
    if all(new is old for new, old in zip(mapped, args, strict=True)):
        return annotation
    if origin in (typing.Union, types.UnionType):
        return typing.Union[mapped]  # noqa: UP007 (rebuilt from parts)
    if origin in (list, tuple, dict, set, frozenset):
        return origin[mapped]
    return annotation


def _to_jsonable(value: Any) -> Any:
    return pydantic.TypeAdapter(Any).dump_python(value, mode="json")


def _has_description(annotation: Any) -> bool:
    if typing.get_origin(annotation) is typing.Annotated:
        return any(
            isinstance(meta, FieldInfo) and meta.description for meta in annotation.__metadata__
        )
    return False


_EXPECTED = {
    "string_type": "string",
    "int_type": "integer",
    "int_from_float": "integer",
    "float_type": "number",
    "bool_type": "boolean",
    "list_type": "array",
    "tuple_type": "array",
    "dict_type": "object",
    "model_type": "object",
    "model_attributes_type": "object",
    "none_required": "null",
}


def pydantic_issues(error: pydantic.ValidationError) -> list[str]:
    """Every issue as ``path: message`` in the same words as spec validation."""
    from .checks import json_type

    issues = []
    for item in error.errors(include_url=False, include_context=False):
        loc = item["loc"]
        if loc and loc[0] == "__root__":
            loc = loc[1:]
        kind = item["type"]
        if kind in _EXPECTED:
            message = f"expected {_EXPECTED[kind]}, got {json_type(item.get('input'))}"
        elif kind == "missing":
            message = "required property is missing"
        elif kind == "extra_forbidden":
            message = "unexpected property (not allowed here)"
        elif kind == "json_invalid":
            message = f"arguments are not valid JSON ({item['msg']})"
        else:
            message = item["msg"][:1].lower() + item["msg"][1:]
        path = format_path(tuple(loc))
        issues.append(f"{path}: {message}" if path else message)
    return issues


def clean_schema(schema: Any) -> Any:
    """Drop pydantic's generated ``title`` keys (noise for a model), keeping property names."""
    if isinstance(schema, dict):
        out: dict[str, Any] = {"type": schema["type"]} if "type" in schema else {}
        for key, value in schema.items():
            if key == "title" and isinstance(value, str):
                continue
            if key in ("properties", "$defs", "definitions") and isinstance(value, dict):
                out[key] = {name: clean_schema(node) for name, node in value.items()}
            else:
                out[key] = clean_schema(value)
        return out
    if isinstance(schema, list):
        return [clean_schema(item) for item in schema]
    return schema


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a docstring into its description and per-parameter descriptions.

    Understands Google style (``Args:`` with ``name (type): text`` entries, continuation
    lines indented further) and Sphinx style (``:param name: text``).
    """
    summary: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    entry_indent = 0
    for line in doc.splitlines():
        match = _SECTION.match(line)
        if match:
            section, current = match.group(1), None
            continue
        sphinx = _SPHINX_PARAM.match(line)
        if sphinx:
            section, current = "sphinx", sphinx.group(1)
            params[current] = sphinx.group(2).strip()
            continue
        if section is None:
            if line.lstrip().startswith(":"):
                section = "sphinx"
                continue
            summary.append(line)
        elif section in ("Args", "Arguments", "Parameters"):
            stripped = line.strip()
            indent = len(line) - len(line.lstrip())
            entry = re.match(r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$", stripped)
            if entry and (current is None or indent <= entry_indent):
                current, entry_indent = entry.group(1).lstrip("*"), indent
                params[current] = entry.group(2).strip()
            elif current and stripped:
                params[current] = f"{params[current]} {stripped}".strip()
        elif section == "sphinx" and current and line.strip():
            params[current] = f"{params[current]} {line.strip()}".strip()
    text = "\n".join(summary).strip()
    return re.sub(r"\s*\n\s*", " ", text) if "\n\n" not in text else text, params
