"""The seed tutorial's scenarios (dsh Tools module and the defineTool guide), from the API."""

from __future__ import annotations

from typing import Any

import pytest

from harness import Context, ToolsService, define_tool

from .conftest import tool_plugin

pytestmark = pytest.mark.anyio


def number_tool(name: str, verb: str, op: Any) -> Any:
    return define_tool(
        name=name,
        description=f"{verb} two numbers",
        parameters={
            "a": {"type": "number", "description": "First number", "required": True},
            "b": {"type": "number", "description": "Second number", "required": True},
        },
        execute=lambda args: op(args["a"], args["b"]),
    )


async def _echo(args: dict[str, Any]) -> str:
    return f"Echo: {args['text']}"


ECHO = define_tool(
    name="echo",
    description="Echo back the input text",
    parameters={"text": {"type": "string", "description": "Text to echo", "required": True}},
    execute=_echo,
)
ADD = number_tool("add", "Add", lambda a, b: a + b)
MULTIPLY = number_tool("multiply", "Multiply", lambda a, b: a * b)


def numbers_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "a": {"type": "number", "description": "First number"},
            "b": {"type": "number", "description": "Second number"},
        },
        "required": ["a", "b"],
    }


async def test_plugins_register_tools_and_unloading_removes_them(root: Context) -> None:
    fibers = [
        await root.plugin(tool_plugin(ECHO, name="echo_tool")),
        await root.plugin(tool_plugin(ADD, name="add_tool")),
        await root.plugin(tool_plugin(MULTIPLY, name="multiply_tool")),
    ]
    assert root.tools.list() == ["echo", "add", "multiply"]
    await fibers[1].dispose()
    assert root.tools.list() == ["echo", "multiply"]
    assert root.tools.get("add") is None


async def test_tool_plugins_wait_for_the_tools_service() -> None:
    async with Context() as root:
        fiber = await root.plugin(tool_plugin(ECHO))
        assert fiber.state == "pending"
        await root.plugin(ToolsService)
        assert fiber.state == "active"
        assert root.tools.list() == ["echo"]


async def test_openai_schemas_exactly_as_in_the_tutorial(root: Context) -> None:
    await root.plugin(tool_plugin(ECHO, ADD, MULTIPLY))
    assert root.tools.schemas() == [
        {
            "type": "function",
            "function": {
                "name": "echo",
                "description": "Echo back the input text",
                "parameters": {
                    "type": "object",
                    "properties": {"text": {"type": "string", "description": "Text to echo"}},
                    "required": ["text"],
                },
            },
        },
        {
            "type": "function",
            "function": {
                "name": "add",
                "description": "Add two numbers",
                "parameters": numbers_schema(),
            },
        },
        {
            "type": "function",
            "function": {
                "name": "multiply",
                "description": "Multiply two numbers",
                "parameters": numbers_schema(),
            },
        },
    ]


async def test_executing_tools_and_an_unknown_one(root: Context) -> None:
    await root.plugin(tool_plugin(ECHO, ADD, MULTIPLY))
    r1 = await root.tools.execute({"id": "1", "name": "echo", "args": {"text": "Hello, World!"}})
    r2 = await root.tools.execute({"id": "2", "name": "add", "args": {"a": 10, "b": 20}})
    r3 = await root.tools.execute({"id": "3", "name": "multiply", "args": {"a": 5, "b": 6}})
    r4 = await root.tools.execute({"id": "4", "name": "unknown", "args": {}})
    assert (r1.result, r2.result, r3.result) == ("Echo: Hello, World!", 30, 30)
    assert r1.content == [{"type": "text", "text": "Echo: Hello, World!"}]
    assert r4.error == "Tool unknown not found"
    assert r4.code == "unknown_tool"
    assert r4.id == "4"
    assert r4.result is None


async def test_permission_pipeline_onion_denial_and_validation(root: Context) -> None:
    trace: list[str] = []
    body_runs: list[str] = []

    async def permission(call: Any, next: Any) -> Any:
        trace.append("pre: permission")
        if call.name == "dangerous":
            trace.append("pre: denied")
            return "deny"
        return await next()

    async def non_empty(call: Any, next: Any) -> Any:
        trace.append("pre: args")
        if not call.args:
            return "deny"
        return await next()

    async def log_result(call: Any, result: Any, next: Any) -> Any:
        trace.append(f"post: log {result.result}")
        final = await next()
        trace.append("post: log done")
        return final

    async def save_session(call: Any, result: Any, next: Any) -> Any:
        trace.append("post: session")
        final = await next()
        trace.append("post: session saved")
        return final

    async def safe(args: dict[str, Any]) -> str:
        body_runs.append("safe")
        return f"Executed with args: {args['input']}"

    async def dangerous(args: dict[str, Any]) -> str:
        body_runs.append("dangerous")
        return "SHOULD NOT RUN"

    root.on("tools/pre-execute", permission)
    root.on("tools/pre-execute", non_empty)
    root.on("tools/post-execute", log_result)
    root.on("tools/post-execute", save_session)
    safe_tool = define_tool(
        name="safe-tool",
        description="A safe tool",
        parameters={"input": {"type": "string", "description": "Input text", "required": True}},
        execute=safe,
    )
    dangerous_tool = define_tool(
        name="dangerous", description="A dangerous tool", parameters={}, execute=dangerous
    )
    await root.plugin(tool_plugin(safe_tool, dangerous_tool))

    ok = await root.tools.execute({"id": "1", "name": "safe-tool", "args": {"input": "test"}})
    assert ok.result == "Executed with args: test"
    assert trace == [
        "pre: permission",
        "pre: args",
        "post: log Executed with args: test",
        "post: session",
        "post: session saved",
        "post: log done",
    ]

    trace.clear()
    bad = await root.tools.execute({"id": "1b", "name": "safe-tool", "args": {"input": 123}})
    assert bad.code == "invalid_args"
    assert bad.error == "Invalid arguments for tool safe-tool: input: expected string, got integer"
    assert body_runs == ["safe"]

    trace.clear()
    denied = await root.tools.execute({"id": "2", "name": "dangerous", "args": {"foo": "bar"}})
    assert denied.code == "denied"
    assert denied.error == "Tool denied: denied by a pre-execute listener"
    assert trace == ["pre: permission", "pre: denied"]  # post-execute never saw it
    assert body_runs == ["safe"]


async def test_greet_and_canonical_render_layers(root: Context) -> None:
    greet = define_tool(
        name="greet",
        description="Greet a person by name. Use when the user asks to greet someone.",
        parameters={"name": {"type": "string", "required": True, "description": 'e.g. "Alice"'}},
        output={
            "schema": {"greeting": {"type": "string"}},
            "render": lambda result: {"type": "text", "text": result["greeting"]},
        },
        execute=lambda args: {"greeting": f"Hello, {args['name']}!"},
    )
    await root.plugin(tool_plugin(greet))
    result = await root.tools.execute({"id": "g", "name": "greet", "args": {"name": "Alice"}})
    assert result.result == {"greeting": "Hello, Alice!"}
    assert result.content == [{"type": "text", "text": "Hello, Alice!"}]
    assert result.to_dict() == {
        "id": "g",
        "name": "greet",
        "ok": True,
        "result": {"greeting": "Hello, Alice!"},
        "content": [{"type": "text", "text": "Hello, Alice!"}],
        "error": None,
        "code": None,
    }
