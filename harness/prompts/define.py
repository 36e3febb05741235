"""``define_prompt`` and ``@prompt``: a named message template with string arguments.

```python
review = define_prompt(
    name="review", description="Review a piece of code.",
    arguments={"code": {"type": "string", "required": True, "description": "The code"},
               "focus": {"type": "string"}},
    render=lambda args: f"Review this code for {args.get('focus', 'correctness')}:\\n\\n"
                        f"{args['code']}",
)

@prompt
def review(code: str, focus: str = "correctness") -> str:
    \"\"\"Review a piece of code.\"\"\"
    return f"Review this code for {focus}:\\n\\n{code}"
```

``arguments`` is a parameter spec of string nodes (MCP's prompt arguments are strings):
each node may say ``type: string``, ``description`` and ``required``. ``@prompt`` reads
them from the signature (parameters annotated ``str``, required unless they have a
default) and the docstring. ``render(args)`` gets the arguments given (a dict of strings)
and returns what :mod:`.messages` accepts; ``render(args, ctx)`` (two positional parameters
without defaults), or an ``@prompt`` parameter annotated ``CallContext``, also gets the
request's context, and may ask through it (over MCP 2026-07-28, ``prompts/get`` then ends
with an ``InputRequiredResult`` and renders again with the answers).
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, overload

from ..errors import DefinitionError
from ..resources.completions import Completer, check_completers
from ..resources.invoke import by_keywords, context_parameter
from ..tools.definition import wants_context
from ..tools.from_function import parse_docstring
from ..tools.icons import check_icons

NAME_PATTERN = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
NODE_KEYS = frozenset({"type", "description", "required"})
_NO_COMPLETIONS: Mapping[str, Completer] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class PromptArgument:
    """One argument of a prompt: a string, described, perhaps required."""

    name: str
    description: str | None = None
    required: bool = False


@dataclass(frozen=True, slots=True, eq=False)
class PromptDefinition:
    """A prompt: its name, what it is for, its arguments, and how to render it."""

    name: str
    description: str
    arguments: tuple[PromptArgument, ...]
    render: Callable[[dict[str, str]], Any]
    """``render(args)`` → a string or a list of messages; sync (in a thread) or async."""
    title: str | None = None
    icons: tuple[dict[str, Any], ...] = ()
    complete: Mapping[str, Completer] = field(default_factory=lambda: _NO_COMPLETIONS)
    """Argument name → ``fn(prefix, args)`` suggesting values."""
    takes_context: bool = False
    """``render(args, ctx)``: it gets the request's
    :class:`~harness.tools.call_context.CallContext` (and may ask through it)."""

    def to_dict(self) -> dict[str, Any]:
        """As MCP lists it: ``name``, ``description``, ``arguments`` (``name``,
        ``description``, ``required``), and ``title`` and ``icons`` when set."""
        out: dict[str, Any] = {"name": self.name}
        if self.title:
            out["title"] = self.title
        out["description"] = self.description
        out["arguments"] = [
            {"name": a.name, "description": a.description, "required": a.required}
            if a.description
            else {"name": a.name, "required": a.required}
            for a in self.arguments
        ]
        if self.icons:
            out["icons"] = [dict(icon) for icon in self.icons]
        return out


def define_prompt(
    *,
    name: str,
    description: str,
    render: Callable[[dict[str, str]], Any],
    arguments: Mapping[str, Any] | None = None,
    complete: Mapping[str, Completer] | None = None,
    icons: Any = None,
    title: str | None = None,
) -> PromptDefinition:
    """Define a prompt; raise DefinitionError when any part is malformed."""
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        raise DefinitionError(
            f"prompt name {name!r} is invalid: use 1 to 128 letters, digits, '_', '-' or '.'"
        )
    where = f"prompt {name!r}"
    if not isinstance(description, str) or not description.strip():
        raise DefinitionError(f"{where}: description must be a non-empty string")
    if not callable(render):
        raise DefinitionError(f"{where}: render must be a function of the arguments")
    if title is not None and not isinstance(title, str):
        raise DefinitionError(f"{where}: title must be a string")
    checked = check_arguments(arguments, where)
    return PromptDefinition(
        name=name,
        description=description.strip(),
        arguments=checked,
        render=render,
        title=title,
        icons=check_icons(icons, where),
        complete=check_completers(complete, [a.name for a in checked], where),
        takes_context=wants_context(render),
    )


def check_arguments(arguments: Any, where: str) -> tuple[PromptArgument, ...]:
    """A parameter spec of string nodes as :class:`PromptArgument`s, in order."""
    if arguments is None:
        return ()
    if not isinstance(arguments, Mapping):
        raise DefinitionError(f"{where}: arguments must be a mapping of name to spec node")
    out = []
    for key, node in arguments.items():
        at = f"{where}: arguments.{key}"
        if not isinstance(key, str) or not key:
            raise DefinitionError(f"{where}: argument names must be non-empty strings")
        if not isinstance(node, Mapping):
            raise DefinitionError(f"{at} must be a spec node such as {{'type': 'string'}}")
        unknown = sorted(set(node) - NODE_KEYS)
        if unknown:
            raise DefinitionError(
                f"{at} has unknown keys {unknown}; a prompt argument is a string node with "
                "type, description and required"
            )
        if node.get("type", "string") != "string":
            raise DefinitionError(f"{at}: prompt arguments are strings (type: string)")
        description = node.get("description")
        if description is not None and not isinstance(description, str):
            raise DefinitionError(f"{at}: description must be a string")
        required = node.get("required", False)
        if not isinstance(required, bool):
            raise DefinitionError(f"{at}: required must be true or false")
        out.append(PromptArgument(key, description, required))
    return tuple(out)


Func = Callable[..., Any]


@overload
def prompt(function: Func, /) -> PromptDefinition: ...
@overload
def prompt(
    *,
    name: str | None = None,
    description: str | None = None,
    complete: Mapping[str, Completer] | None = None,
    icons: Any = None,
    title: str | None = None,
) -> Callable[[Func], PromptDefinition]: ...
def prompt(
    function: Func | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    complete: Mapping[str, Completer] | None = None,
    icons: Any = None,
    title: str | None = None,
) -> PromptDefinition | Callable[[Func], PromptDefinition]:
    """A prompt from a function: ``@prompt`` or ``@prompt(complete={...})``. Its parameters
    are the arguments (strings); its docstring the description and each one's."""

    def build(target: Func) -> PromptDefinition:
        if not callable(target):
            raise DefinitionError(f"@prompt needs a function, got {type(target).__name__}")
        prompt_name = name or str(getattr(target, "__name__", ""))
        summary, docs = parse_docstring(inspect.getdoc(target) or "")
        context = context_parameter(target)
        spec = _spec_of(target, docs, f"prompt {prompt_name!r}", context)
        if not (description or summary).strip():
            raise DefinitionError(
                f"prompt {prompt_name!r}: give the function a docstring or pass description="
            )
        return define_prompt(
            name=prompt_name,
            description=description or summary,
            arguments=spec,
            render=by_keywords(target, context),
            complete=complete,
            icons=icons,
            title=title,
        )

    return build if function is None else build(function)


def _spec_of(
    function: Func, docs: dict[str, str], where: str, context: str | None = None
) -> dict[str, Any]:
    try:
        hints = typing.get_type_hints(function)
    except Exception as exc:
        raise DefinitionError(f"{where}: cannot read its type hints: {exc}") from exc
    spec: dict[str, Any] = {}
    for parameter in inspect.signature(function).parameters.values():
        if parameter.name == context:  # given the request's context; not an argument
            continue
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise DefinitionError(f"{where}: declare each argument; *{parameter.name} cannot be")
        if parameter.kind is parameter.POSITIONAL_ONLY:
            raise DefinitionError(f"{where}: argument {parameter.name!r} cannot be positional-only")
        if not _is_text(hints.get(parameter.name, str)):
            raise DefinitionError(
                f"{where}: argument {parameter.name!r} must be annotated str (prompt arguments "
                "are strings)"
            )
        node: dict[str, Any] = {"type": "string"}
        if parameter.default is parameter.empty:
            node["required"] = True
        if docs.get(parameter.name):
            node["description"] = docs[parameter.name]
        spec[parameter.name] = node
    return spec


def _is_text(annotation: Any) -> bool:
    """``str``, or ``str | None``."""
    if annotation is str:
        return True
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return set(typing.get_args(annotation)) == {str, type(None)}
    return False
