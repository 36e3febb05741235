"""The conformance suite's client command, with harness's gateway as the MCP client.

The suite runs ``python client_driver.py URL`` once per client scenario, with the scenario
in ``MCP_CONFORMANCE_SCENARIO`` (and a JSON ``MCP_CONFORMANCE_CONTEXT`` for some). The
driver writes a project whose one entry mounts ``URL`` (``harness:mcp-client``, no prefix,
the protocol era found by the handshake), starts a harness on it (``Host``), and does what
the scenario expects through harness's tools service: list the mounted tools, call them. A
call's caller answers an upstream's questions as the scenario wants (the form's defaults,
or ``confirmed``). For ``auth/*`` scenarios the entry has ``oauth:`` and the driver first
runs ``harness auth up`` with a ``$BROWSER`` that follows the authorisation redirects (the
suite's authorisation server approves at once). It exits 0 when every step worked.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import anyio
import yaml

from harness import Answer, CallContext, Client, Host
from harness.tools.calls import ToolCall, ToolResult

HERE = Path(__file__).parent
HARNESS = str(Path(sys.executable).with_name("harness"))
BROWSER = f"{sys.executable} {HERE.parent / 'gateway' / 'fake_browser.py'} %s"
METADATA_URL = "https://conformance-test.local/client-metadata.json"


class Caller(Client):
    """The person behind the driver's calls: accepts every form, with its defaults (or
    ``confirmed``, for the request-state scenario)."""

    asks = True

    def __init__(self, confirm: bool) -> None:
        super().__init__("conformance")
        self.confirm = confirm

    async def answer(self, ctx: CallContext, requests: Mapping[str, Any]) -> dict[str, Any]:
        answers: dict[str, Any] = {}
        for key, request in requests.items():
            if request.kind != "ask":
                return await super().answer(ctx, requests)
            if self.confirm:
                answers[key] = Answer("accept", {"confirmed": True})
                continue
            fields = request.schema.get("properties", {})
            defaults = {name: spec["default"] for name, spec in fields.items() if "default" in spec}
            answers[key] = Answer("accept", defaults)
        return answers


class Driver:
    """One scenario's harness and its calls."""

    def __init__(self, host: Host, config: Path, confirm: bool = False) -> None:
        self.host = host
        self.config = config
        self.caller = Caller(confirm)
        self.count = 0

    def tools(self) -> dict[str, dict[str, Any]]:
        return {schema["name"]: schema for schema in self.host.tools.schemas("mcp")}

    async def call(self, name: str, args: dict[str, Any], must: bool = True) -> ToolResult:
        self.count += 1
        call = ToolCall.of({"id": f"c{self.count}", "name": name, "args": args})
        CallContext(call, "python", self.caller)
        result = await self.host.tools.execute(call)
        log(f"{name}({json.dumps(args)[:200]}) -> {result.to_dict()}")
        if must and not result.ok:
            raise SystemExit(f"{name} failed: {result.error}")
        return result


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def stub(schema: dict[str, Any]) -> dict[str, Any]:
    """Arguments filling a schema's required properties with plain values."""
    plain = {"string": "x", "integer": 0, "number": 0, "boolean": False, "object": {}}
    plain |= {"array": [], "null": None}
    fields = schema.get("properties", {})
    return {
        name: plain.get(fields.get(name, {}).get("type"), "x")
        for name in schema.get("required", [])
    }


async def listed(driver: Driver) -> None:
    log(f"tools: {sorted(driver.tools())}")


async def add_numbers(driver: Driver) -> None:
    await driver.call("add_numbers", {"a": 5, "b": 3})


async def reconnection(driver: Driver) -> None:
    await driver.call("test_reconnection", {})


async def elicitation_defaults(driver: Driver) -> None:
    await driver.call("test_client_elicitation_defaults", {})


async def schema_echo(driver: Driver) -> None:
    focal = driver.tools()["json_schema_2020_12_tool"]
    await driver.call("json_schema_echo", {"schema": focal["inputSchema"]})


async def every_tool(driver: Driver) -> None:
    for name, schema in driver.tools().items():
        await driver.call(name, stub(schema["inputSchema"]), must=False)


async def custom_headers(driver: Driver) -> None:
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    mounted = driver.tools()
    for call in context.get("toolCalls", []):
        if call["name"] in mounted:
            await driver.call(call["name"], call.get("arguments") or {}, must=False)


async def request_state(driver: Driver) -> None:
    for name in ("test_mrtr_echo_state", "test_mrtr_unrelated", "test_mrtr_no_state"):
        await driver.call(name, {})
    await driver.call("test_mrtr_no_result_type", {})


async def first_tool(driver: Driver) -> None:
    names = list(driver.tools())
    if names:
        result = await driver.call(names[0], {}, must=False)
        if not result.ok and "harness auth up" in str(result.error):
            # More scope was needed (a step-up): authorise again, as a person would.
            await authorise(driver.config)
            await driver.call(names[0], {}, must=False)


async def authorise(config: Path) -> None:
    """``harness auth up`` with a browser that follows the redirects."""
    done = await anyio.run_process(
        [HARNESS, "auth", "up", "-c", str(config), "--timeout", "20"],
        env={**os.environ, "BROWSER": BROWSER},
        check=False,
    )
    log((done.stdout + done.stderr).decode())
    if done.returncode != 0:
        raise SystemExit(f"harness auth failed ({done.returncode})")


Steps = Callable[[Driver], Awaitable[None]]
SCENARIOS: dict[str, Steps] = {
    "initialize": listed,
    "json-schema-ref-no-deref": listed,
    "tools_call": add_numbers,
    "request-metadata": add_numbers,
    "http-standard-headers": add_numbers,
    "sse-retry": reconnection,
    "elicitation-sep1034-client-defaults": elicitation_defaults,
    "json-schema-2020-12-preservation": schema_echo,
    "http-invalid-tool-headers": every_tool,
    "http-custom-headers": custom_headers,
    "sep-2322-client-request-state": request_state,
}


def project(folder: Path, url: str, scenario: str) -> Path:
    config: dict[str, Any] = {"url": url, "prefix": "", "connect_timeout": 20, "timeout": 20}
    era = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION")
    if era == "2026-07-28" and os.environ.get("DRIVER_PROTOCOL") != "auto":
        config["protocol"] = era  # the era of the leg, as the SDK's own client picks its mode
    if scenario.startswith("auth/"):
        context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
        oauth: dict[str, Any] = {"client_metadata_url": METADATA_URL}
        if context.get("client_id"):
            oauth |= {"client_id": context["client_id"]}
            if context.get("client_secret"):
                oauth["client_secret"] = context["client_secret"]
        config["oauth"] = oauth
    entry = {"id": "up", "name": "harness:mcp-client", "config": config}
    path = folder / "cordis.yml"
    path.write_text(yaml.safe_dump({"insert": [entry]}, sort_keys=False))
    return path


async def run(url: str, scenario: str, folder: Path) -> None:
    config = project(folder, url, scenario)
    if scenario.startswith("auth/"):
        await authorise(config)
    steps = first_tool if scenario.startswith("auth/") else SCENARIOS[scenario]
    async with Host(config) as host:
        slot = host._entries.by_id["up"]
        fiber = slot.fiber
        if fiber is None or fiber.state.value != "active":
            raise SystemExit(f"the entry did not mount: {fiber.error if fiber else 'no fiber'}")
        await steps(Driver(host, config, confirm=scenario == "sep-2322-client-request-state"))


def main() -> None:
    url = sys.argv[1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    if not scenario.startswith("auth/") and scenario not in SCENARIOS:
        raise SystemExit(f"unknown scenario {scenario!r}")
    with tempfile.TemporaryDirectory(prefix="conformance-client-") as folder:
        anyio.run(run, url, scenario, Path(folder))


if __name__ == "__main__":
    main()
