"""An upstream's resources, resource templates and prompts, mounted like its tools (DESIGN §12).

After the tools, :func:`list_primitives` lists what the server offers (by its declared
capabilities); :class:`Primitives` registers each as a resource or prompt of the entry:

- a resource or template keeps its URI; reading it reads the upstream's (``resources/read``),
  text as text and a blob as bytes. A URI or template another entry holds already is this
  entry's problem (listed by ``harness check``), not a crash;
- a prompt takes the entry's prefix, and ``include``/``exclude`` apply to it; getting it gets
  the upstream's (``prompts/get``), its messages' blocks as harness's render blocks, and its
  input rounds go to the caller as a tool's do (:mod:`.rounds`);
- a template's variables and a prompt's arguments complete as the upstream completes them
  (``completion/complete``), when it declares ``completions``.

An upstream ``resources/list_changed`` or ``prompts/list_changed`` re-lists (coalesced with
the tools' re-list), and ``resources/updated`` is passed on to harness's subscribers.
``resources: false`` on the entry leaves them all out.

Subscriptions pass through: when the server declares ``resources.subscribe``, a mounted
resource's ``watch`` subscribes at the server when harness's first subscriber of a URI
arrives and unsubscribes when the last leaves (``resources/subscribe`` at 2025-11-25, a
``subscriptions/listen`` stream per URI at 2026-07-28), so the server's updates of that URI
reach harness's subscribers, and only them.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types
from mcp.client import Client
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ResourceUpdated
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ..errors import ContentError, DefinitionError, NameConflict, NotFound
from ..prompts.define import define_prompt
from ..resources.define import define_resource
from ..resources.subscriptions import UriLocks
from ..resources.template import UriTemplate
from ..tools.call_context import CallContext
from .names import selected
from .results import UpstreamToolError, block_of
from .rounds import through
from .schema import upstream_icons

if TYPE_CHECKING:
    from ..context import Context
    from .config import GatewayConfig
    from .upstream import Connection

_log = logging.getLogger("harness.gateway")
PAGES = 100
"""List pages read at most of each kind."""
_MIME = re.compile(r"^[\w.+-]+/[\w.+-]+$")
RESOURCE_NOT_FOUND = -32002


@dataclass
class Listed:
    """What an upstream offers besides tools."""

    resources: list[types.Resource] = field(default_factory=list)
    templates: list[types.ResourceTemplate] = field(default_factory=list)
    prompts: list[types.Prompt] = field(default_factory=list)


async def list_primitives(client: Client, config: GatewayConfig, label: str) -> Listed:
    """The server's resources, templates and prompts (none it has not declared, or when
    listing them fails: its tools are mounted all the same)."""
    listed = Listed()
    if not config.resources:
        return listed
    capabilities = client.server_capabilities
    try:
        if capabilities.resources is not None:
            listed.resources = await _pages(client.list_resources, "resources")
            listed.templates = await _pages(client.list_resource_templates, "resource_templates")
        if capabilities.prompts is not None:
            listed.prompts = await _pages(client.list_prompts, "prompts")
    except Exception as exc:
        _log.warning("%s: listing resources and prompts failed: %s", label, exc)
    return listed


async def _pages(list_page: Callable[..., Any], key: str) -> list[Any]:
    items: list[Any] = []
    cursor: str | None = None
    for _ in range(PAGES):
        page = await list_page(cursor=cursor)
        items.extend(getattr(page, key))
        cursor = page.next_cursor
        if not cursor:
            break
    return items


class Primitives:
    """The resources and prompts of one entry, kept in step with the server's lists."""

    def __init__(
        self, ctx: Context, connection: Connection, config: GatewayConfig, prefix: str
    ) -> None:
        self.ctx = ctx
        self.connection = connection
        self.config = config
        self.prefix = prefix
        self.mounted: dict[str, tuple[str, Callable[[], None]]] = {}
        """``resource URI`` or ``prompt NAME`` → (fingerprint, dispose)."""
        self.problems: list[str] = []
        self.subscribed: set[str] = set()
        """URIs subscribed at the server (for harness's subscribers)."""
        self._listens: dict[str, anyio.CancelScope] = {}
        """URI → its 2026-07-28 listen stream."""
        self._watching = UriLocks()

    def sync(self, listed: Listed) -> None:
        """Make the registries hold exactly what the server lists now."""
        resources, prompts = self.ctx.get("resources"), self.ctx.get("prompts")
        wanted: dict[str, tuple[str, Callable[[], Any]]] = {}
        for resource in listed.resources:
            wanted[f"resource {resource.uri}"] = (
                _print(resource),
                partial(self._resource, resource),
            )
        for template in listed.templates:
            key = f"resource {template.uri_template}"
            wanted[key] = (_print(template), partial(self._resource, template))
        for prompt in listed.prompts:
            if selected(prompt.name, self.config.include, self.config.exclude):
                wanted[f"prompt {self.prefix}{prompt.name}"] = (
                    _print(prompt),
                    partial(self._prompt, prompt),
                )
        for key, (fingerprint, dispose) in list(self.mounted.items()):
            if key not in wanted or wanted[key][0] != fingerprint:
                del self.mounted[key]
                dispose()
        self.problems = []
        for key, (fingerprint, define) in wanted.items():
            if key in self.mounted:
                continue
            registry = resources if key.startswith("resource ") else prompts
            if registry is None:
                continue
            try:
                dispose = registry.register(define())
            except NameConflict as exc:
                self.problems.append(f"{key} is not mounted: {exc}; it is another entry's")
                continue
            except DefinitionError as exc:
                self.problems.append(f"{key} is not mounted: {exc}")
                continue
            self.mounted[key] = (fingerprint, dispose)
        for problem in self.problems:
            _log.warning("%s: %s", self.connection.label, problem)
        if resources is not None and self._subscribes():
            self._resubscribe(resources)

    def _resubscribe(self, resources: Any) -> None:
        """Subscribe at the server to the URIs of ours that harness's clients are subscribed
        to already (a reconnected server, a resource listed anew)."""
        for uri in list(resources.subscriptions.counts):
            found = contextlib.suppress(Exception)
            with found:
                served = resources.find(uri)
                if served is not None and served[0].watch == self.watch:
                    self.ctx.start_soon(self._rewatch, uri)

    async def _rewatch(self, uri: str) -> None:
        try:
            await self.watch(uri, True)
        except ContentError as exc:
            _log.warning("%s: %s", self.connection.label, exc)

    def updated(self, uri: str) -> None:
        """The server's ``resources/updated``: harness's subscribers hear of it."""
        resources = self.ctx.get("resources")
        if resources is not None and (uri in self.subscribed or f"resource {uri}" in self.mounted):
            with contextlib.suppress(NotFound):
                resources.notify_updated(uri)

    # -- subscriptions -----------------------------------------------------------------------

    def _subscribes(self) -> bool:
        client = self.connection.client
        capability = client.server_capabilities.resources if client is not None else None
        return capability is not None and bool(capability.subscribe)

    async def watch(self, uri: str, on: bool) -> None:
        """Subscribe at the server to ``uri`` (``on``) or unsubscribe; raise ContentError
        when the server refuses, fails or does not answer within the entry's timeout."""
        async with self._watching.hold(uri):  # one at a time per URI: subscribed once
            await self._watch(uri, on)

    async def _watch(self, uri: str, on: bool) -> None:
        label = self.connection.label
        client = self.connection.client
        if on == (uri in self.subscribed):
            return
        modern = client is not None and client.protocol_version in MODERN_PROTOCOL_VERSIONS
        if not on:
            self.subscribed.discard(uri)
            listen = self._listens.pop(uri, None)
            if listen is not None:
                listen.cancel()
            if modern or listen is not None:
                return
        if client is None:
            if on:
                raise ContentError(f"{label} is not connected; subscribe to {uri!r} later")
            return
        what = "subscribing to" if on else "unsubscribing from"
        try:
            with anyio.fail_after(self.config.timeout or self.config.connect_timeout):
                if modern:
                    await self._listen(client, uri)
                elif on:
                    request = types.SubscribeRequest(params=types.SubscribeRequestParams(uri=uri))
                    await client.session.send_request(request, types.EmptyResult)
                else:
                    undo = types.UnsubscribeRequest(params=types.UnsubscribeRequestParams(uri=uri))
                    await client.session.send_request(undo, types.EmptyResult)
        except TimeoutError:
            raise ContentError(f"{label} did not answer {what} {uri!r} in time") from None
        except MCPError as exc:
            raise ContentError(f"{label} answered {what} {uri!r} with an error: {exc}") from None
        if on:
            self.subscribed.add(uri)

    async def _listen(self, client: Client, uri: str) -> None:
        """Open a listen stream for ``uri`` in the entry's context; return once the server
        acknowledged it (raise what it answered instead)."""
        acknowledged = anyio.Event()
        failed: list[Exception] = []
        scope = anyio.CancelScope()

        async def follow() -> None:
            with scope:
                try:
                    async with client.listen(resource_subscriptions=[uri]) as events:
                        acknowledged.set()
                        async for event in events:
                            if isinstance(event, ResourceUpdated):
                                self.updated(event.uri)
                except Exception as exc:
                    if not acknowledged.is_set():
                        failed.append(exc)
                    else:
                        _log.warning(
                            "%s: the listen stream for %r ended: %s",
                            self.connection.label,
                            uri,
                            exc,
                        )
                finally:
                    acknowledged.set()
                    if self._listens.get(uri) is scope:
                        del self._listens[uri]
                        self.subscribed.discard(uri)

        self._listens[uri] = scope
        self.ctx.start_soon(follow)
        try:
            await acknowledged.wait()
        except BaseException:
            # given up waiting (the entry's timeout, a cancelled subscribe): the stream ends
            # too, or it stays open upstream and the next subscribe opens another
            scope.cancel()
            if self._listens.get(uri) is scope:
                del self._listens[uri]
            raise
        if failed:
            error = failed[0]
            if isinstance(error, MCPError):
                raise error
            raise ContentError(f"{self.connection.label}: listening to {uri!r} failed: {error}")

    # -- definitions -------------------------------------------------------------------------

    def _resource(self, item: types.Resource | types.ResourceTemplate) -> Any:
        uri = item.uri if isinstance(item, types.Resource) else item.uri_template
        mime = item.mime_type if item.mime_type and _MIME.match(item.mime_type) else None
        holder: list[Any] = []

        async def read(params: dict[str, str]) -> list[str | bytes]:
            target = holder[0].template.expand(params) if params else str(uri)
            return await self._read(target)

        complete = None
        if isinstance(item, types.ResourceTemplate) and self._completes():
            ref = types.ResourceTemplateReference(type="ref/resource", uri=str(uri))
            variables = UriTemplate.parse(str(uri)).variables
            complete = {name: partial(self._complete, ref, name) for name in variables}
        definition = define_resource(
            complete=complete,
            uri=str(uri),
            name=item.name,
            description=(item.description or item.title or item.name).strip()
            or f"{uri} on {self.connection.label}",
            read=read,
            mime_type=mime,
            title=item.title,
            icons=upstream_icons(item, self.config.max_schema_bytes),
        )
        if self._subscribes():
            definition = dataclasses.replace(definition, watch=self.watch)
        holder.append(definition)
        return definition

    async def _read(self, uri: str) -> list[str | bytes]:
        client = self.connection.client
        if client is None:
            raise ContentError(f"{self.connection.label} is not connected; read {uri!r} later")
        try:
            result = await client.read_resource(uri)
        except MCPError as exc:
            if exc.code == RESOURCE_NOT_FOUND:
                raise NotFound(f"{self.connection.label}: {exc.error.message}") from None
            raise ContentError(
                f"{self.connection.label} answered reading {uri!r} with an error: {exc}"
            ) from None
        out: list[str | bytes] = []
        for contents in result.contents:
            if isinstance(contents, types.TextResourceContents):
                out.append(contents.text)
            else:
                out.append(base64.b64decode(contents.blob))
        return out

    def _prompt(self, prompt: types.Prompt) -> Any:
        arguments = {
            argument.name: {
                "type": "string",
                "required": bool(argument.required),
                **({"description": argument.description} if argument.description else {}),
            }
            for argument in prompt.arguments or []
        }

        async def render(args: dict[str, str], ctx: CallContext) -> list[dict[str, Any]]:
            client = self.connection.client
            if client is None:
                raise ContentError(f"{self.connection.label} is not connected; try later")

            async def send(
                responses: dict[str, Any] | None, state: str | None
            ) -> types.GetPromptResult | types.InputRequiredResult:
                return await client.session.get_prompt(
                    prompt.name,
                    dict(args),
                    input_responses=responses,  # the wire's JSON, validated by the SDK
                    request_state=state,
                    allow_input_required=True,
                )

            try:
                result = await through(ctx, f"prompt {prompt.name}", send)
            except UpstreamToolError as exc:
                raise ContentError(f"{self.connection.label}: {exc}") from None
            except MCPError as exc:
                raise ContentError(
                    f"{self.connection.label} answered prompts/get with an error: {exc}"
                ) from None
            return [
                {"role": message.role, "content": block_of(message.content)}
                for message in result.messages
            ]

        complete = None
        if self._completes():
            ref = types.PromptReference(type="ref/prompt", name=prompt.name)
            complete = {name: partial(self._complete, ref, name) for name in arguments}
        renders: Callable[..., Any] = render  # (args, ctx): it takes the request's context
        return define_prompt(
            complete=complete,
            name=f"{self.prefix}{prompt.name}",
            description=(prompt.description or prompt.title or prompt.name).strip(),
            render=renders,
            arguments=arguments,
            title=prompt.title,
            icons=upstream_icons(prompt, self.config.max_schema_bytes),
        )

    def _completes(self) -> bool:
        client = self.connection.client
        return client is not None and client.server_capabilities.completions is not None

    async def _complete(
        self,
        ref: types.ResourceTemplateReference | types.PromptReference,
        name: str,
        prefix: str,
        args: dict[str, str],
    ) -> list[str]:
        """The upstream's completions of argument ``name`` from ``prefix``."""
        client = self.connection.client
        if client is None:
            return []
        try:
            result = await client.complete(ref, {"name": name, "value": prefix}, dict(args))
        except MCPError as exc:
            raise ContentError(
                f"{self.connection.label} answered completion/complete with an error: {exc}"
            ) from None
        return list(result.completion.values)


def _print(item: Any) -> str:
    dumped: str = item.model_dump_json(by_alias=True, exclude_none=True)
    return dumped
