"""The fast path of streamable HTTP: plain 2026-07-28 ``tools/call`` POSTs, answered here.

A 2026-07-28 request is one self-contained POST, and most are a plain ``tools/call``: the
SDK serves each through Starlette's middleware and router, its body-limit layer, a task
group with a disconnect watcher, a per-request connection, session and runner, and a
serialisation pass, most of a request's server time. :class:`FastCalls` answers those
requests itself, running the same checks in the same order and
:meth:`~harness.mcp.surface.McpSurface.call` (what the SDK's handler runs), and answers
with the bytes the SDK would send. Everything that is not plainly such a request — another
method or protocol era, a header or body the SDK would refuse (its answer is the refusal),
an ``Mcp-Param`` header check, a progress token, a log-level opt-in, a tracer installed,
another event loop than asyncio — goes to the SDK's app untouched, body included, so this
layer only ever changes how fast an answer comes.

The answer (:mod:`.fast_answer`) is the SDK's too: JSON, or an SSE stream with keep-alive pings
for a call still running after 15 s, and a client that disconnects cancels its call.
"""

from __future__ import annotations

import importlib.metadata
import json
import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.server.runner import modern_error_data
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import ERROR_CODE_HTTP_STATUS, InboundModernRoute, classify_inbound_request
from mcp_types import INTERNAL_ERROR, SERVER_INFO_META_KEY
from mcp_types import methods as _methods
from pydantic import ValidationError

from ...tools.deadline import running_loop
from ..client import CallParams
from ..tools_list import Catalog
from .fast_answer import answer
from .fast_headers import HeaderChecks

_log = logging.getLogger("harness.mcp")
MIRRORED_MCP = ">=2.3,<2.4"
"""The MCP SDK releases this fast path mirrors: those its byte-compare tests
(``tests/mcp/http/fast_path``) ran on. The header rules, body limit, envelope checks and
bytes below are those releases' own, read from their source, so the next release may change
any of them. pyproject's ``mcp`` range says the same and
``tests/mcp/http/fast_path/test_mirrored.py`` fails by name on any other installed SDK;
outside the range (an install that ignored the pin) the fast path stays off and the SDK
answers everything. Widen it only once the byte-compare
tests pass on the new release."""
_runner_log = logging.getLogger("mcp.server.runner")  # where the SDK logs a bad result
MAX_BODY = 4 * 1024 * 1024
"""The SDK's request body limit; a larger body goes to the SDK, which answers 413."""
ENVELOPE_KEYS = frozenset(
    {
        "io.modelcontextprotocol/protocolVersion",
        "io.modelcontextprotocol/clientInfo",
        "io.modelcontextprotocol/clientCapabilities",
    }
)
"""The ``_meta`` keys of a plain call: any other (a progress token, a log level) is the SDK's."""
PLAIN_PARAMS = frozenset({"name", "arguments", "_meta"})
"""Params with only these keys (no ``requestState``, ``inputResponses``, ``task``) are
checked once per distinct envelope."""
ENVELOPES = 256
"""Distinct ``_meta`` envelopes whose verdict is remembered (bounded against floods)."""
_MISSING = object()
_REFUSED = object()


def mirrors(version: str) -> bool:
    """Whether MCP SDK ``version`` is one :data:`MIRRORED_MCP` names, by release numbers (a
    pre-release of the upper bound is outside)."""
    low, high = (_release(bound.lstrip("<>=")) for bound in MIRRORED_MCP.split(","))
    return low <= _release(version) < high


def _release(version: str) -> tuple[int, ...]:
    found = re.match(r"\d+(?:\.\d+)*", version)
    return tuple(int(part) for part in found.group().split(".")) if found else ()


def installed_sdk() -> str:
    """The version of the MCP SDK this process runs."""
    return importlib.metadata.version("mcp")


def sdk_mirrored() -> bool:
    """Whether the installed SDK is one the fast path mirrors; says why not in the log."""
    version = installed_sdk()
    if mirrors(version):
        return True
    _log.warning(
        "the MCP fast path is off: it mirrors mcp%s and this is mcp %s; every request goes "
        "to the SDK (install mcp%s to have it back)",
        MIRRORED_MCP,
        version,
        MIRRORED_MCP,
    )
    return False


SurfaceCall = Callable[
    [str, CallParams, types.ClientCapabilities | None],
    Awaitable[types.CallToolResult | types.InputRequiredResult | dict[str, Any]],
]
"""A plain 2026-07-28 call: request id, params and the client's capabilities to its result."""


class Surface(Protocol):
    """What the fast path needs of :class:`~harness.mcp.surface.McpSurface`."""

    @property
    def server(self) -> Server[Any]: ...

    def catalog(self) -> Catalog: ...

    @property
    def call(self) -> SurfaceCall:
        """``McpSurface.call``: what the SDK's handler runs, asked without ``elicit``."""
        ...


class FastCalls:
    """ASGI layer: answers plain 2026-07-28 ``tools/call`` POSTs to ``/mcp``; the rest goes
    to ``app`` (the SDK's streamable HTTP app). ``served`` counts the requests answered here.
    """

    def __init__(self, app: Any, surface: Surface, hosts: Sequence[str]) -> None:
        self.app = app
        self.surface = surface
        self.server = surface.server
        self.checks = HeaderChecks(hosts)
        self.served = 0
        self._envelopes: dict[str, Any] = {}
        self._stamp: dict[str, Any] = self.server.server_info.model_dump(
            by_alias=True, mode="json", exclude_none=True
        )

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if (
            scope["type"] != "http"
            or scope["method"] != "POST"
            or scope["path"] != "/mcp"
            or scope.get("root_path")
            or self.server.middleware  # a tracer is installed: the SDK's spans
            or "tools/call" in self.server.cache_hints
        ):
            await self.app(scope, receive, send)
            return
        headers = self.checks.plain(scope["headers"])
        if headers is None or running_loop() is None:  # trio: the SDK serves it all
            await self.app(scope, receive, send)
            return
        buffered: list[Any] = []
        size = 0
        while True:
            message = await receive()
            buffered.append(message)
            if message["type"] != "http.request":
                break
            size += len(message.get("body", b""))
            if not message.get("more_body") or size > MAX_BODY:
                break
        call = None
        last = buffered[-1]
        if size <= MAX_BODY and last["type"] == "http.request" and not last.get("more_body"):
            parts = [message.get("body", b"") for message in buffered]
            call = self._plain_call(parts[0] if len(parts) == 1 else b"".join(parts), headers)
        if call is None:

            async def replay() -> Any:
                return buffered.pop(0) if buffered else await receive()

            await self.app(scope, replay, send)
            return
        self.served += 1
        await self._answer(call, receive, send)

    def _plain_call(self, body: bytes, headers: dict[str, str]) -> _Call | None:
        """The call in ``body`` if the SDK would dispatch it as is, else None."""
        try:
            decoded = json.loads(body)
        except (ValueError, RecursionError):
            return None
        if type(decoded) is not dict or decoded.get("method") != "tools/call":
            return None
        request_id: Any = decoded.get("id")
        params = decoded.get("params")
        if (
            decoded.get("jsonrpc") != "2.0"
            or type(request_id) not in (int, str)
            or type(params) is not dict
        ):
            return None
        meta = params.get("_meta")
        if type(meta) is not dict or not ENVELOPE_KEYS.issuperset(meta):
            return None
        route = classify_inbound_request(decoded, headers=headers)
        if not isinstance(route, InboundModernRoute):
            return None  # the SDK answers the header mismatch or the envelope's defect
        name = params.get("name")
        if not isinstance(name, str) or self._checks_headers(name):
            return None  # the SDK checks the Mcp-Param headers of tools that declare them
        arguments = params.get("arguments")
        if PLAIN_PARAMS.issuperset(params) and (arguments is None or type(arguments) is dict):
            # The SDK's two validations of such params can only fail on the envelope.
            capabilities = self._envelope(meta, route)
            if capabilities is _REFUSED:
                return None
            typed: CallParams = _PlainParams(name, arguments)
            return _Call(request_id, route.protocol_version, typed, capabilities)
        try:
            _methods.validate_client_request("tools/call", route.protocol_version, params)
            typed = types.CallToolRequestParams.model_validate(params, by_name=False)
        except (ValidationError, KeyError, ValueError):
            return None  # the SDK answers with its INVALID_PARAMS
        return _Call(request_id, route.protocol_version, typed, _capabilities(route))

    def _checks_headers(self, name: str) -> bool:
        """Whether the SDK checks the call's ``Mcp-Param`` headers (or would log why not), or
        the tool may run as a task (the SDK's handler answers those: :mod:`..tasks`)."""
        try:
            catalog = self.surface.catalog()
            return name in catalog.inputs or name in catalog.tasks
        except Exception:  # the SDK's look-up logs it and goes on: let it
            return True

    def _envelope(self, meta: dict[str, Any], route: InboundModernRoute) -> Any:
        """The client's capabilities if the SDK accepts this ``_meta``, else ``_REFUSED``;
        remembered per distinct envelope (a client sends the same one every time)."""
        key = repr(meta)  # of JSON values: equal only for equal values of equal types
        found = self._envelopes.get(key, _MISSING)
        if found is _MISSING:
            probe = {"name": "", "_meta": meta}
            try:
                _methods.validate_client_request("tools/call", route.protocol_version, probe)
                types.CallToolRequestParams.model_validate(probe, by_name=False)
            except (ValidationError, KeyError, ValueError):
                found = _REFUSED
            else:
                found = _capabilities(route)
            if len(self._envelopes) >= ENVELOPES:
                self._envelopes.clear()
            self._envelopes[key] = found
        return found

    async def _answer(self, call: _Call, receive: Any, send: Any) -> None:
        await answer(self._reply(call), receive, send)

    async def _reply(self, call: _Call) -> tuple[int, dict[str, Any]]:
        """The HTTP status and JSON-RPC reply of a call, as the SDK's kernel shapes them."""
        try:
            result = await self.surface.call(str(call.id), call.params, call.capabilities)
            return 200, {"jsonrpc": "2.0", "id": call.id, "result": self._wire(call, result)}
        except Exception as exc:
            error = modern_error_data(exc)
            reply = types.JSONRPCError(jsonrpc="2.0", id=call.id, error=error)
            status = ERROR_CODE_HTTP_STATUS.get(error.code, 200)
            return status, reply.model_dump(mode="json", by_alias=True, exclude_none=True)

    def _wire(self, call: _Call, result: Any) -> dict[str, Any]:
        """The result's wire form: the version's shape, ``resultType`` and the server stamp."""
        wire = _text_result(result)
        if wire is not None:
            wire["_meta"] = {SERVER_INFO_META_KEY: self._stamp}
            return wire
        dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        try:
            wire = _methods.serialize_server_result("tools/call", call.version, dumped)
        except ValidationError:
            _runner_log.exception("handler for %r returned an invalid result", "tools/call")
            raise MCPError(
                code=INTERNAL_ERROR, message="Handler returned an invalid result"
            ) from None
        if wire.get("resultType") is None:
            wire["resultType"] = "complete"
        meta = wire.get("_meta")
        if meta is None:
            wire["_meta"] = {SERVER_INFO_META_KEY: self._stamp}
        elif isinstance(meta, dict) and meta.get(SERVER_INFO_META_KEY) is None:
            wire["_meta"] = {**meta, SERVER_INFO_META_KEY: self._stamp}
        return wire


def _text_result(result: Any) -> dict[str, Any] | None:
    """The wire form of a result of text blocks alone, as the SDK's serialiser shapes it
    (its field order included), without it; None for any other result."""
    if type(result) is not types.CallToolResult or result.meta is not None:
        return None
    if result.result_type not in (None, "complete"):
        return None
    content = []
    for block in result.content:
        if type(block) is not types.TextContent or block.annotations or block.meta is not None:
            return None
        content.append({"text": block.text, "type": "text"})
    wire: dict[str, Any] = {"content": content, "isError": result.is_error}
    wire["resultType"] = "complete"
    if result.structured_content is not None:
        wire["structuredContent"] = result.structured_content
    return wire


class _PlainParams:
    """The params of a plain call: a name and arguments, nothing to resume."""

    __slots__ = ("arguments", "name")
    request_state = None
    input_responses = None

    def __init__(self, name: str, arguments: dict[str, Any] | None) -> None:
        self.name = name
        self.arguments = arguments


class _Call:
    __slots__ = ("capabilities", "id", "params", "version")

    def __init__(
        self,
        request_id: int | str,
        version: str,
        params: CallParams,
        capabilities: types.ClientCapabilities | None,
    ) -> None:
        self.id = request_id
        self.version = version
        self.params = params
        self.capabilities = capabilities


def _capabilities(route: InboundModernRoute) -> types.ClientCapabilities | None:
    """The envelope's capabilities, as the SDK's connection reads them (mis-shaped: None)."""
    try:
        return types.ClientCapabilities.model_validate(route.client_capabilities, by_name=False)
    except ValidationError:
        return None
