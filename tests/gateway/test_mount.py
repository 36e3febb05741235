"""Mounting an official-SDK server over stdio: names, schemas, calls, results, live lists."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from harness import Host

from .conftest import Watch, stdio_entry, text_of, write_config

pytestmark = pytest.mark.anyio
REPAIRED = "dotted_name_" + hashlib.sha256(b"dotted.name").hexdigest()[:8]


async def test_tools_are_mounted_with_prefixes_filters_and_valid_schemas(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        [
            stdio_entry("up"),
            stdio_entry("bare", prefix="", include=["echo", "dotted.*", "w*"], exclude=["weather"]),
        ],
    )
    async with Host(config) as host:
        names = host.tools.list()
        assert "up_echo" in names
        assert "up_weather" in names
        assert f"up_{REPAIRED}" in names
        assert [name for name in names if host.tools.owner(name) == "plugin 'bare'"] == [
            "echo",
            REPAIRED,
        ]
        for schema in host.tools.schemas("openai"):
            parameters = schema["function"]["parameters"]
            assert parameters["type"] == "object"
            assert "properties" in parameters
            Draft202012Validator.check_schema(parameters)
        mcp = {tool["name"]: tool for tool in host.tools.schemas("mcp")}
        assert mcp["up_echo"]["annotations"] == {"readOnlyHint": True}
        assert mcp["up_echo"]["description"] == "Echo the text back."
        assert mcp["up_echo"]["icons"] == [
            {
                "src": "data:image/png;base64,iVBORw0KGgo=",
                "mimeType": "image/png",
                "sizes": ["48x48"],
            }
        ]
        assert "icons" not in mcp["up_weather"]
        assert mcp["up_weather"]["outputSchema"]["properties"]["celsius"]["type"] == "number"
        anthropic = {tool["name"]: tool for tool in host.tools.schemas("anthropic")}
        assert anthropic["up_echo"]["input_schema"]["required"] == ["text"]


async def test_calls_results_and_errors(tmp_path: Path) -> None:
    config = write_config(tmp_path, [stdio_entry("up", max_result_bytes=100_000)])
    async with Host(config) as host:
        tools = host.tools
        echoed = await tools.execute({"id": "1", "name": "up_echo", "args": {"text": "hi"}})
        assert echoed.ok
        assert echoed.result == {"result": "upstream says hi"}
        assert echoed.content == [{"type": "text", "text": "upstream says hi"}]

        weather = await tools.execute({"id": "2", "name": "up_weather", "args": {"city": "Oslo"}})
        assert weather.result == {"city": "Oslo", "celsius": 21.5}

        failed = await tools.execute({"id": "3", "name": "up_fail", "args": {}})
        assert failed.code == "tool_error"
        assert failed.error is not None
        assert "fail" in failed.error

        # an optional argument given as null, which its schema refuses: taken as not given,
        # so the call reaches the server as the one without it did (before: invalid_args);
        # a required one is still refused
        defaulted = await tools.execute({"id": "3n", "name": "up_fail", "args": {"reason": None}})
        assert (defaulted.code, defaulted.error) == ("tool_error", failed.error)
        required = await tools.execute({"id": "4n", "name": "up_echo", "args": {"text": None}})
        assert required.code == "invalid_args"

        wrong = await tools.execute({"id": "4", "name": "up_echo", "args": {"text": 3}})
        assert wrong.code == "invalid_args"
        assert (
            wrong.error == "Invalid arguments for tool up_echo: text: expected string, got integer"
        )
        missing = await tools.execute({"id": "5", "name": "up_echo", "args": {}})
        assert missing.error == (
            "Invalid arguments for tool up_echo: text: required property is missing"
        )
        empty = await tools.execute({"id": "6", "name": "up_echo", "args": {"text": ""}})
        assert empty.code == "invalid_args"

        picture = await tools.execute({"id": "7", "name": "up_picture", "args": {}})
        kinds = [block["type"] for block in picture.content]
        assert kinds == ["text", "image", "resource_link"]
        assert picture.content[1]["mime_type"] == "image/png"
        assert picture.content[2] == {
            "type": "resource_link",
            "uri": "file:///tmp/x.txt",
            "name": "x.txt",
        }

        huge = await tools.execute({"id": "8", "name": "up_huge", "args": {"size": 200_000}})
        assert huge.code == "tool_error"
        assert huge.error is not None
        assert "max_result_bytes (100000)" in huge.error

        repaired = await tools.execute({"id": "9", "name": f"up_{REPAIRED}", "args": {}})
        assert repaired.result == {"result": "dotted"}


async def test_policy_approval_and_audit_run_before_the_upstream(tmp_path: Path) -> None:
    gate = tmp_path / "gate.py"
    gate.write_text(
        "asked = []\n"
        "audit = []\n"
        "class Approval:\n"
        "    async def request(self, call, reason):\n"
        "        asked.append((call.name, call.args, reason))\n"
        "        if call.name == 'up_confirm':\n"
        "            return True\n"
        "        return call.args.get('text') == 'yes'\n"
        "def apply(ctx):\n"
        "    ctx.provide('approval', Approval())\n"
        "    async def policy(call, next):\n"
        "        if call.name == 'up_echo':\n"
        "            return 'ask'\n"
        "        if call.name == 'up_fail':\n"
        "            return 'deny'\n"
        "        return await next()\n"
        "    ctx.on('tools/pre-execute', policy)\n"
        "    ctx.on('tools/result', lambda call, result: audit.append((call.name, result.code)))\n"
    )
    config = write_config(tmp_path, [{"id": "gate", "name": str(gate)}, stdio_entry("up")])
    async with Host(config) as host:
        import sys

        module = next(m for m in sys.modules.values() if getattr(m, "__file__", None) == str(gate))
        tools = host.tools
        approved = await tools.execute({"id": "a", "name": "up_echo", "args": {"text": "yes"}})
        assert approved.result == {"result": "upstream says yes"}
        refused = await tools.execute({"id": "b", "name": "up_echo", "args": {"text": "no"}})
        assert refused.code == "denied"
        denied = await tools.execute({"id": "c", "name": "up_fail", "args": {}})
        assert denied.code == "denied"
        # the server's own question is not the policy's: the approval service, which would
        # say yes, is never asked, and with nobody behind the call it is declined
        confirmed = await tools.execute({"id": "d", "name": "up_confirm", "args": {}})
        assert confirmed.result == {"result": "decline:None"}
        assert [name for name, args, reason in module.asked] == ["up_echo", "up_echo"]
        assert module.audit == [
            ("up_echo", None),
            ("up_echo", "denied"),
            ("up_fail", "denied"),
            ("up_confirm", None),
        ]


async def test_elicitation_is_declined_without_an_approval_service(tmp_path: Path) -> None:
    config = write_config(tmp_path, [stdio_entry("up")])
    async with Host(config) as host:
        result = await host.tools.execute({"id": "1", "name": "up_confirm", "args": {}})
        assert result.result == {"result": "decline:None"}


async def test_elicitation_decline_declines_even_with_an_approval_service(tmp_path: Path) -> None:
    """`elicitation: decline` is the entry's word: an approval service that would say yes is
    never asked, and the server's question is declined."""
    gate = tmp_path / "gate.py"
    gate.write_text(
        "asked = []\n"
        "class Approval:\n"
        "    async def request(self, call, reason):\n"
        "        asked.append(call.id)\n"
        "        return True\n"
        "def apply(ctx):\n"
        "    ctx.provide('approval', Approval())\n"
    )
    config = write_config(
        tmp_path, [{"id": "gate", "name": str(gate)}, stdio_entry("up", elicitation="decline")]
    )
    async with Host(config) as host:
        import sys

        module = next(m for m in sys.modules.values() if getattr(m, "__file__", None) == str(gate))
        result = await host.tools.execute({"id": "1", "name": "up_confirm", "args": {}})
        assert result.result == {"result": "decline:None"}
        assert module.asked == []


async def test_upstream_list_changed_updates_the_registry(tmp_path: Path) -> None:
    config = write_config(tmp_path, [stdio_entry("up")])
    async with Host(config) as host:
        watch = Watch(host)
        grown = await host.tools.execute({"id": "1", "name": "up_grow", "args": {}})
        assert grown.ok
        await watch.until(lambda: "up_added" in host.tools.list())
        added = await host.tools.execute({"id": "2", "name": "up_added", "args": {}})
        assert text_of(added) == "I was added"
        await host.tools.execute({"id": "3", "name": "up_shrink", "args": {}})
        await watch.until(lambda: "up_echo" not in host.tools.list())
        assert ("tools", "removed", "up_echo") in watch.events


async def test_timeouts_are_forwarded_as_cancellation(tmp_path: Path) -> None:
    config = write_config(tmp_path, [stdio_entry("up", timeout=0.5)])
    async with Host(config) as host:
        slow = await host.tools.execute({"id": "1", "name": "up_sleep", "args": {"seconds": 60}})
        assert slow.code == "timeout"
        assert slow.error == "Tool up_sleep timed out after 0.5 seconds"
        seen = await host.tools.execute({"id": "2", "name": "up_cancellations", "args": {}})
        assert seen.result == {"result": 1}
