"""Resources, prompts and completions over MCP: one typed handler per method.

``resources/list`` and ``resources/templates/list`` list the ``resources`` service,
``resources/read`` reads through it (policy included), ``prompts/list`` and ``prompts/get``
do the same for ``prompts``, and ``completion/complete`` asks either for candidates. The
listings are built once per registry change and served a page at a time (:mod:`.paging`).
Expected failures are the protocol's errors:
an unknown URI is -32602 with ``data.uri`` (as SEP-2164 says), an unknown prompt, bad
arguments or a refused template value -32602, a refusal by the policy :data:`DENIED` with a
message that begins ``denied:``, and a read or render that failed -32603 with its message.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS

from ..errors import AccessDenied, ArgumentsError, ContentError, NotFound
from ..service import unwrap
from ..tools.call_context import CallContext
from ..tools.calls import ToolCall
from ..tools.inputs import InputRequired, InputUnavailable
from .client import McpClient
from .paging import page
from .results import content_block
from .rounds import Rounds, missing_capability

if TYPE_CHECKING:
    from ..context import Context
    from ..prompts.service import PromptsService
    from ..resources.define import ResourceDefinition
    from ..resources.service import ResourcesService

DENIED = -32003
"""The JSON-RPC code of a read or get the policy refused (a server-defined code)."""


class Primitives:
    """The resources, prompts and completions of one root context, as MCP handlers.

    ``client_of(request, capabilities)`` makes a request's client and ``rounds`` seals and
    opens 2026-07-28 input rounds (the surface's): a read or render that takes a context
    asks the client as a tool does (DESIGN §16)."""

    def __init__(
        self, root: Context, client_of: ClientOf | None = None, rounds: Rounds | None = None
    ) -> None:
        self.root = root
        self.client_of = client_of
        self.rounds = rounds
        self._listings: dict[str, Any] = {}
        """Method → its answer, until the registry it lists changes."""

    def changed(self, kind: str) -> None:
        """Forget the listings of ``kind`` (``resources`` or ``prompts``)."""
        for method in [m for m in self._listings if m.startswith(kind)]:
            del self._listings[method]

    def handlers(self) -> dict[str, Any]:
        """The ``on_*`` keywords of the SDK's ``Server`` this serves."""
        return {
            "on_list_resources": self.list_resources,
            "on_list_resource_templates": self.list_templates,
            "on_read_resource": self.read_resource,
            "on_list_prompts": self.list_prompts,
            "on_get_prompt": self.get_prompt,
            "on_completion": self.complete,
        }

    @property
    def page_size(self) -> int:
        """The tools service's ``page_size``: items per page of a list."""
        size: int = unwrap(self.root.tools).config.page_size
        return size

    @property
    def resources(self) -> ResourcesService:
        service: ResourcesService = unwrap(self.root.resources)
        return service

    @property
    def prompts(self) -> PromptsService:
        service: PromptsService = unwrap(self.root.prompts)
        return service

    # -- resources -----------------------------------------------------------------------

    async def list_resources(self, ctx: Any, params: Any) -> types.ListResourcesResult:
        listing = self._listings.get("resources/list")
        if listing is None:
            service = self.resources
            listing = types.ListResourcesResult(
                resources=[types.Resource.model_validate(d.to_dict()) for d in _each(service)]
            )
            self._listings["resources/list"] = listing
        return page(listing, "resources", params, self.page_size)

    async def list_templates(self, ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
        listing = self._listings.get("resources/templates/list")
        if listing is None:
            service = self.resources
            listing = types.ListResourceTemplatesResult(
                resource_templates=[
                    types.ResourceTemplate.model_validate(d.to_dict())
                    for d in _each(service, templates=True)
                ]
            )
            self._listings["resources/templates/list"] = listing
        return page(listing, "resource_templates", params, self.page_size)

    async def read_resource(
        self, ctx: Any, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult | types.InputRequiredResult:
        uri = str(params.uri)
        with _errors():
            found = self.resources.find(uri)
        if found is not None and found[0].takes_context:
            context = self._context(ctx, params, uri, found[1], "resource")
            with _errors(), self._rounds(context, "resource") as ended:
                contents = await self.resources.read(uri, context)
            if ended.result is not None:
                return ended.result
        else:
            with _errors():
                contents = await self.resources.read(uri)
        return types.ReadResourceResult(
            contents=[
                types.BlobResourceContents.model_validate(item.to_dict())
                if item.blob is not None
                else types.TextResourceContents.model_validate(item.to_dict())
                for item in contents
            ]
        )

    # -- prompts -------------------------------------------------------------------------

    async def list_prompts(self, ctx: Any, params: Any) -> types.ListPromptsResult:
        listing = self._listings.get("prompts/list")
        if listing is None:
            service = self.prompts
            prompts = [
                types.Prompt.model_validate(definition.to_dict())
                for definition in map(service.get, service.list())
                if definition is not None
            ]
            listing = self._listings["prompts/list"] = types.ListPromptsResult(prompts=prompts)
        return page(listing, "prompts", params, self.page_size)

    async def get_prompt(
        self, ctx: Any, params: types.GetPromptRequestParams
    ) -> types.GetPromptResult | types.InputRequiredResult:
        definition = self.prompts.get(params.name)
        context = None
        if definition is not None and definition.takes_context:
            args = dict(params.arguments or {})
            context = self._context(ctx, params, params.name, args, "prompt")
        with _errors(), self._rounds(context, "prompt") as ended:
            messages = await self.prompts.render(params.name, params.arguments, context)
            definition = self.prompts.get(params.name)
        if ended.result is not None:
            return ended.result
        return types.GetPromptResult(
            description=definition.description if definition is not None else None,
            messages=[
                types.PromptMessage(role=message["role"], content=content_block(message["content"]))
                for message in messages
            ],
        )

    # -- requests that ask ----------------------------------------------------------------

    def _context(
        self, request: Any, params: Any, name: str, args: dict[str, str], kind: str
    ) -> CallContext:
        """The context of a read or render that takes one: the request's client, and over
        2026-07-28 the answers of its earlier rounds (a bad ``requestState`` is -32602)."""
        capabilities = request.session.client_capabilities
        client = (
            self.client_of(request, capabilities)
            if self.client_of is not None
            else McpClient(capabilities)
        )
        call = ToolCall(str(request.request_id), name, args, client=client.id)
        recorded: list[Any] = []
        carried = None
        if client.modern and self.rounds is not None:
            recorded, carried = self.rounds.opened(call, params, kind)
        tools = self.root.get("tools")
        context = CallContext(
            call, "mcp", client, recorded=recorded, tools=unwrap(tools) if tools else None
        )
        context.carried = carried
        return context

    @contextlib.contextmanager
    def _rounds(self, context: CallContext | None, kind: str) -> Iterator[_Ended]:
        """Ends a 2026-07-28 round (an input the client answers next), and answers -32021
        for what needed a capability the client did not declare."""
        ended = _Ended()
        try:
            yield ended
        except InputRequired as later:
            client = context.client if context is not None else None
            if context is None or not isinstance(client, McpClient) or self.rounds is None:
                raise MCPError(INTERNAL_ERROR, "an input was deferred with nobody to ask") from None
            ended.result = self.rounds.required(context.call, context, client, later.requests, kind)
        except InputUnavailable as exc:
            if context is not None:
                client = context.client
                if isinstance(client, McpClient) and client.modern and client.missing:
                    raise missing_capability(f"{kind} {context.call.name}", client) from None
            raise MCPError(INTERNAL_ERROR, str(exc)) from None

    # -- completions ---------------------------------------------------------------------

    async def complete(self, ctx: Any, params: types.CompleteRequestParams) -> types.CompleteResult:
        ref = params.ref
        context = params.context.arguments if params.context is not None else None
        filled = dict(context or {})
        argument = params.argument
        filled.pop(argument.name, None)
        with _errors():
            if isinstance(ref, types.PromptReference):
                found = await self.prompts.complete(ref.name, argument.name, argument.value, filled)
            else:
                found = await self.resources.complete(
                    str(ref.uri), argument.name, argument.value, filled
                )
        return types.CompleteResult(
            completion=types.Completion(
                values=list(found.values), total=found.total, has_more=found.has_more
            )
        )


ClientOf = Callable[[Any, "types.ClientCapabilities | None"], McpClient]


class _Ended:
    """What a read or render that ended its round answers (an ``InputRequiredResult``)."""

    result: types.InputRequiredResult | None = None


def _each(service: ResourcesService, templates: bool = False) -> list[ResourceDefinition]:
    """The resources (or the templates) of ``service``, in order."""
    keys = service.templates() if templates else service.list()
    return [definition for definition in map(service.get, keys) if definition is not None]


@contextlib.contextmanager
def _errors() -> Iterator[None]:
    """harness's errors as the protocol's."""
    try:
        yield
    except NotFound as exc:
        data = {"uri": exc.key} if exc.kind == "resource" else {"name": exc.key}
        raise MCPError(INVALID_PARAMS, str(exc), data) from None
    except ArgumentsError as exc:
        raise MCPError(INVALID_PARAMS, str(exc)) from None
    except AccessDenied as exc:
        raise MCPError(DENIED, str(exc)) from None
    except ContentError as exc:
        raise MCPError(INTERNAL_ERROR, str(exc)) from None
