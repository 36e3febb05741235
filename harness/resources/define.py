"""``define_resource`` and ``@resource``: a resource at a fixed URI or a URI template.

```python
notes = define_resource(
    uri="notes://{name}", name="note", description="A note from the team's notes folder.",
    mime_type="text/markdown", read=lambda params: load(params["name"]),
)

@resource("notes://{name}", mime_type="text/markdown")
async def note(name: str) -> str:
    \"\"\"A note from the team's notes folder.\"\"\"
```

``read(params)`` gets the URI's variables as a dict (empty for a fixed URI); ``@resource``
passes them as keyword arguments. ``read(params, ctx)`` (two positional parameters without
defaults), or an ``@resource`` parameter annotated ``CallContext``, also gets the request's
context. Everything is checked here, when the resource is
defined, so a malformed one never reaches a registry.
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NoReturn, overload

from ..errors import DefinitionError
from ..tools.definition import wants_context
from ..tools.from_function import parse_docstring
from ..tools.icons import check_icons
from .completions import Completer, check_completers
from .invoke import by_keywords, context_parameter
from .template import UriTemplate

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_MIME = re.compile(r"^[\w.+-]+/[\w.+-]+(?:\s*;.*)?$")
_NO_COMPLETIONS: Mapping[str, Completer] = MappingProxyType({})
_NO_ANNOTATIONS: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True, slots=True, eq=False)
class ResourceDefinition:
    """A resource: where it is (a URI or a template), what it is, and how to read it."""

    uri: str
    """A fixed URI, or an RFC 6570 template of simple ``{var}`` expressions."""
    name: str
    """A short name for it (MCP's ``name``)."""
    description: str
    """What it holds, for the model and the person choosing it."""
    read: Callable[[dict[str, str]], Any]
    """``read(params)`` → text, bytes, or a list of them; sync (in a thread) or async."""
    template: UriTemplate
    """The parsed URI; no variables for a fixed URI."""
    mime_type: str | None = None
    title: str | None = None
    """A display name, when ``name`` is an identifier."""
    annotations: Mapping[str, Any] = field(default_factory=lambda: _NO_ANNOTATIONS)
    """MCP's annotations: ``audience``, ``priority``, ``lastModified``."""
    icons: tuple[dict[str, Any], ...] = ()
    complete: Mapping[str, Completer] = field(default_factory=lambda: _NO_COMPLETIONS)
    """Variable name → ``fn(prefix, args)`` suggesting values (templates only)."""
    takes_context: bool = False
    """``read(params, ctx)``: it gets the request's
    :class:`~harness.tools.call_context.CallContext` (and may ask through it)."""
    watch: Callable[[str, bool], Awaitable[None]] | None = None
    """``await watch(uri, True)`` when the first subscriber of a URI it serves arrives,
    ``watch(uri, False)`` when the last one leaves (the gateway subscribes upstream); None:
    subscribing needs nothing of it. Set with :func:`dataclasses.replace`."""

    @property
    def is_template(self) -> bool:
        """True for a URI template (it has variables)."""
        return not self.template.is_fixed

    def to_dict(self) -> dict[str, Any]:
        """As MCP lists it: ``uri`` (``uriTemplate`` for a template), ``name``,
        ``description``, and ``title``, ``mimeType``, ``icons``, ``annotations`` when set."""
        out: dict[str, Any] = {
            "uriTemplate" if self.is_template else "uri": self.uri,
            "name": self.name,
            "description": self.description,
        }
        optional = {
            "title": self.title,
            "mimeType": self.mime_type,
            "icons": [dict(icon) for icon in self.icons],
            "annotations": dict(self.annotations),
        }
        out.update((key, value) for key, value in optional.items() if value)
        return out


def define_resource(
    *,
    uri: str,
    name: str,
    description: str,
    read: Callable[[dict[str, str]], Any],
    mime_type: str | None = None,
    annotations: Mapping[str, Any] | None = None,
    icons: Any = None,
    complete: Mapping[str, Completer] | None = None,
    title: str | None = None,
) -> ResourceDefinition:
    """Define a resource; raise DefinitionError when any part is malformed."""
    if not isinstance(uri, str) or not _SCHEME.match(uri):
        raise DefinitionError(
            f"resource uri {uri!r} is invalid: it needs a scheme, such as 'notes://{{name}}' "
            "or 'file:///path'"
        )
    where = f"resource {uri!r}"
    template = UriTemplate.parse(uri)
    if not isinstance(name, str) or not name.strip():
        raise DefinitionError(f"{where}: name must be a non-empty string")
    if not isinstance(description, str) or not description.strip():
        raise DefinitionError(f"{where}: description must be a non-empty string")
    if not callable(read):
        raise DefinitionError(f"{where}: read must be a function of the URI's variables")
    if mime_type is not None and (not isinstance(mime_type, str) or not _MIME.match(mime_type)):
        raise DefinitionError(
            f"{where}: mime_type {mime_type!r} is not a MIME type like 'text/plain'"
        )
    if title is not None and not isinstance(title, str):
        raise DefinitionError(f"{where}: title must be a string")
    return ResourceDefinition(
        uri=uri,
        name=name.strip(),
        description=description.strip(),
        read=read,
        template=template,
        mime_type=mime_type,
        title=title,
        annotations=check_annotations(annotations, where),
        icons=check_icons(icons, where),
        complete=check_completers(complete, template.variables, where),
        takes_context=wants_context(read),
    )


@overload
def resource(
    uri: str,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    mime_type: str | None = None,
    annotations: Mapping[str, Any] | None = None,
    icons: Any = None,
    complete: Mapping[str, Completer] | None = None,
    title: str | None = None,
) -> Callable[[Callable[..., Any]], ResourceDefinition]: ...
@overload
def resource(uri: Callable[..., Any], /) -> NoReturn: ...
def resource(
    uri: Any,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    mime_type: str | None = None,
    annotations: Mapping[str, Any] | None = None,
    icons: Any = None,
    complete: Mapping[str, Completer] | None = None,
    title: str | None = None,
) -> Any:
    """``@resource("notes://{name}", mime_type=...)``: the function gets the URI's variables
    as keyword arguments; its docstring is the description, its name the resource's."""
    if not isinstance(uri, str):
        raise DefinitionError(
            "@resource needs the resource's URI first: @resource('notes://{name}') above the "
            "function"
        )

    def build(function: Callable[..., Any]) -> ResourceDefinition:
        if not callable(function):
            raise DefinitionError(f"@resource({uri!r}) needs a function")
        summary, _ = parse_docstring(inspect.getdoc(function) or "")
        context = context_parameter(function)
        if isinstance(uri, str) and _SCHEME.match(uri):
            variables = UriTemplate.parse(uri).variables
            _check_signature(function, variables, f"resource {uri!r}", context)
        if not (description or summary).strip():
            raise DefinitionError(
                f"resource {uri!r}: give the function a docstring or pass description="
            )
        return define_resource(
            uri=uri,
            name=name or str(getattr(function, "__name__", "")),
            description=description or summary,
            read=by_keywords(function, context),
            mime_type=mime_type,
            annotations=annotations,
            icons=icons,
            complete=complete,
            title=title,
        )

    return build


def _check_signature(
    function: Callable[..., Any],
    variables: tuple[str, ...],
    where: str,
    context: str | None = None,
) -> None:
    """Every variable is a parameter (or ``**kwargs`` takes it), and every parameter without
    a default is a variable."""
    parameters = inspect.signature(function).parameters.values()
    names = {p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    takes_any = any(p.kind is p.VAR_KEYWORD for p in parameters)
    for variable in variables:
        if variable not in names and not takes_any:
            raise DefinitionError(
                f"{where}: the function {function.__name__}() has no parameter {variable!r} "
                "for the URI's variable"
            )
    for parameter in parameters:
        if parameter.kind in (parameter.VAR_KEYWORD, parameter.VAR_POSITIONAL):
            continue
        if parameter.name == context:  # given the request's context
            continue
        if parameter.default is parameter.empty and parameter.name not in variables:
            raise DefinitionError(
                f"{where}: the function's parameter {parameter.name!r} is not a variable of "
                "the URI (give it a default, or add {" + parameter.name + "} to the URI)"
            )


AUDIENCES = ("user", "assistant")


def check_annotations(annotations: Any, where: str) -> Mapping[str, Any]:
    """MCP's annotations (``audience``, ``priority``, ``lastModified``; ``last_modified`` is
    accepted too), checked and spelled as MCP spells them."""
    if annotations is None:
        return _NO_ANNOTATIONS
    if not isinstance(annotations, Mapping):
        raise DefinitionError(f"{where}: annotations must be a mapping")
    out: dict[str, Any] = {}
    for key, value in annotations.items():
        if key == "audience":
            if not isinstance(value, list) or not all(item in AUDIENCES for item in value):
                raise DefinitionError(
                    f"{where}: annotations.audience must list 'user' and/or 'assistant'"
                )
            out["audience"] = list(value)
        elif key == "priority":
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
                or not 0 <= value <= 1
            ):
                raise DefinitionError(f"{where}: annotations.priority must be a number from 0 to 1")
            out["priority"] = value
        elif key in ("lastModified", "last_modified"):
            if not isinstance(value, str):
                raise DefinitionError(f"{where}: annotations.lastModified must be an ISO 8601 time")
            out["lastModified"] = value
        else:
            raise DefinitionError(
                f"{where}: unknown annotation {key!r}; use audience, priority or lastModified"
            )
    return MappingProxyType(out)
