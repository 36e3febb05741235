"""The fast path of streamable HTTP answers exactly as the SDK's transport would.

One surface is served twice on 127.0.0.1, with the fast path and without it; the same raw
requests go to both, the answers must be the same bytes, and the fast path's count says
which requests it answered.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS
from mcp_types import methods as _methods

from harness.mcp import Catalog

from .twin import ADD, META, VERSION, Twin, both, call, headers, with_meta

pytestmark = pytest.mark.anyio


PLAIN = {
    "a sum": (call("add", {"a": 1, "b": 2}), "add"),
    "a string id": (call("add", {"a": 0.5, "b": 2}, request_id="req-é"), "add"),
    "a large id": (call("echo", {"text": "hi"}, request_id=2**62), "echo"),
    "a huge id": (call("add", {"a": 1, "b": 1}, request_id=-(10**40)), "add"),
    "an empty id": (call("add", {"a": 1, "b": 1}, request_id=""), "add"),
    "unicode text": (call("echo", {"text": "héllo ✓ \u202e"}), "echo"),
    "a body in many parts": (call("echo", {"text": "long " * 100_000}), "echo"),
    "no arguments": (call("greet"), "greet"),
    "an unknown tool": (call("nope", {}), "nope"),
    "invalid arguments": (call("add", {"a": "one", "b": 2}), "add"),
    "a failing tool": (call("fails", {}), "fails"),
    "nulls and non-ASCII": (call("nothing", {}), "nothing"),
    "images and links": (call("picture", {}), "picture"),
    "a denied call": (
        call("write_text_file", {"path": "a.txt", "content": "A"}),
        "write_text_file",
    ),
    "unknown body fields": ({**call("add", {"a": 1, "b": 1}), "extra": True}, "add"),
}


@pytest.mark.parametrize("case", list(PLAIN))
async def test_plain_calls_are_answered_here_with_the_sdks_bytes(twin: Twin, case: str) -> None:
    body, name = PLAIN[case]
    fast, sdk, served = await both(twin, body, name=name)
    assert served == 1
    assert fast == sdk
    assert fast.status == 200
    assert fast.content_type == "application/json"
    assert json.loads(fast.body)["result"]["resultType"] == "complete"


REFUSED: dict[str, dict[str, Any]] = {
    "another method header": {"body": ADD, "headers": headers(**{"mcp-method": "tools/list"})},
    "another name header": {"body": ADD, "headers": headers(**{"mcp-name": "echo"})},
    "no name header": {"body": ADD, "headers": headers(**{"mcp-name": None})},
    "a version header unlike the body's": {
        "body": with_meta(ADD, VERSION, "2026-01-01"),
        "headers": headers(),
    },
    "an unsupported version": {
        "body": with_meta(ADD, VERSION, "2099-01-01"),
        "headers": headers(**{"mcp-protocol-version": "2099-01-01"}),
    },
    "no capabilities in the envelope": {
        "body": call("add", {"a": 1, "b": 2}) | {"params": {"name": "add", "_meta": {}}},
        "headers": headers(),
    },
    "another content type": {"body": ADD, "headers": headers(**{"content-type": "text/plain"})},
    "a foreign host": {"body": ADD, "headers": headers(host="evil.example:80")},
    "a foreign origin": {"body": ADD, "headers": headers(origin="http://evil.example")},
    "no event stream accepted": {"body": ADD, "headers": headers(accept="application/json")},
    "a repeated name header": {
        "body": ADD,
        "headers": [*headers().items(), ("mcp-name", "add")],
    },
    "malformed JSON": {"raw": b'{"jsonrpc": "2.0", "id": 1,', "headers": headers()},
    "a batch": {"body": [ADD, ADD], "headers": headers()},
    "a notification": {"body": {k: v for k, v in ADD.items() if k != "id"}, "headers": headers()},
    "jsonrpc 1.0": {"body": {**ADD, "jsonrpc": "1.0"}, "headers": headers()},
    "a boolean id": {"body": {**ADD, "id": True}, "headers": headers()},
    "a float id": {"body": {**ADD, "id": 1.0}, "headers": headers()},
    "no tool name": {
        "body": {**ADD, "params": {"arguments": {}, "_meta": META}},
        "headers": headers(**{"mcp-name": None}),
    },
    "a tool name that is a number": {
        "body": {**ADD, "params": {"name": 7, "_meta": META}},
        "headers": headers(**{"mcp-name": "7"}),
    },
    "arguments that are a list": {
        "body": {**ADD, "params": {"name": "add", "arguments": [1, 2], "_meta": META}},
        "headers": headers(),
    },
    "a malformed client info": {
        "body": with_meta(ADD, "io.modelcontextprotocol/clientInfo", "me"),
        "headers": headers(),
    },
    "malformed capabilities": {
        "body": with_meta(ADD, "io.modelcontextprotocol/clientCapabilities", []),
        "headers": headers(),
    },
    "a progress token": {"body": with_meta(ADD, "progressToken", 7), "headers": headers()},
    "a request state that is a number": {
        "body": {**ADD, "params": {**ADD["params"], "requestState": 7}},
        "headers": headers(),
    },
    "input responses that are not answers": {
        "body": {**ADD, "params": {**ADD["params"], "inputResponses": {"x": 1}}},
        "headers": headers(),
    },
    "a task": {"body": {**ADD, "params": {**ADD["params"], "task": 1}}, "headers": headers()},
    "a mismatched Mcp-Param header": {
        "body": call("routed", {"region": "us"}),
        "headers": headers(**{"mcp-name": "routed", "mcp-param-region": "eu"}),
    },
    "a matching Mcp-Param header": {
        "body": call("routed", {"region": "us"}),
        "headers": headers(**{"mcp-name": "routed", "mcp-param-region": "us"}),
    },
    "a session id": {"body": ADD, "headers": headers(**{"mcp-session-id": "abc"})},
    "tools/list": {
        "body": {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": META}},
        "headers": headers(**{"mcp-method": "tools/list", "mcp-name": None}),
    },
    "a body over the limit": {
        "raw": json.dumps(call("echo", {"text": "x" * (4 * 1024 * 1024)})).encode(),
        "headers": headers(**{"mcp-name": "echo"}),
    },
}


@pytest.mark.parametrize("case", list(REFUSED))
async def test_anything_else_goes_to_the_sdk_and_gets_its_answer(twin: Twin, case: str) -> None:
    request = REFUSED[case]
    fast, sdk, served = await both(
        twin, request.get("body"), request["headers"], raw=request.get("raw")
    )
    assert served == 0
    assert fast == sdk


async def test_a_call_with_a_cache_hint_or_a_middleware_goes_to_the_sdk(twin: Twin) -> None:
    seen: list[str] = []

    async def record(ctx: Any, call_next: Any) -> Any:
        seen.append(ctx.method)
        return await call_next(ctx)

    twin.surface.server.middleware.append(record)  # as the SDK's tracing middleware is
    try:
        fast, sdk, served = await both(twin, ADD, headers())
    finally:
        twin.surface.server.middleware.remove(record)
    assert served == 0
    assert fast == sdk
    assert seen == ["tools/call", "tools/call"]


@pytest.mark.parametrize(
    "failure",
    [RuntimeError("a bug"), MCPError(code=INVALID_PARAMS, message="no such thing", data={"x": 1})],
    ids=["a bug", "an MCP error"],
)
async def test_a_call_that_raises_is_answered_as_the_sdk_answers_it(
    twin: Twin, monkeypatch: pytest.MonkeyPatch, failure: Exception
) -> None:
    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise failure

    monkeypatch.setattr(twin.surface, "call", broken)
    fast, sdk, served = await both(twin, ADD, headers())
    assert served == 1
    assert fast == sdk
    assert json.loads(fast.body)["error"]["code"] == (
        INVALID_PARAMS if isinstance(failure, MCPError) else INTERNAL_ERROR
    )


async def test_a_result_the_protocol_refuses_is_answered_as_the_sdk_answers_it(
    twin: Twin, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(method: str, version: str, data: Any) -> Any:
        return types.CallToolResult.model_validate({"content": "not a list"})

    monkeypatch.setattr(_methods, "serialize_server_result", refuse)
    picture = call("picture", {})  # not text alone: the fast path asks the SDK's serialiser
    fast, sdk, served = await both(twin, picture, headers(**{"mcp-name": "picture"}))
    assert served == 1
    assert fast == sdk
    assert json.loads(fast.body)["error"] == {
        "code": INTERNAL_ERROR,
        "message": "Handler returned an invalid result",
    }


async def test_a_catalog_that_cannot_be_built_leaves_the_call_to_the_sdk(
    twin: Twin, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(service: Any) -> Any:
        raise RuntimeError("a schema the MCP format cannot show")

    monkeypatch.setattr(Catalog, "of", staticmethod(broken))
    twin.surface._catalog = None
    fast, sdk, served = await both(twin, ADD, headers())
    assert served == 0
    assert fast == sdk
    assert json.loads(fast.body)["result"]["structuredContent"] == {"result": 3}
