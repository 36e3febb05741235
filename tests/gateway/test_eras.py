"""Both protocol eras: an upstream's era is found by the handshake (DESIGN §12)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client

from harness import Host
from harness.gateway.plugin import supervision

from ..helpers import HARNESS
from .conftest import PYTHON, Watch, fiber_of, stdio_entry, write_config
from .test_transports import Process

pytestmark = pytest.mark.anyio
MODERN_SERVER = Path(__file__).with_name("modern_server.py")


@pytest.fixture
def modern_upstream(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A real SDK server over HTTP that speaks 2026-07-28 only; its URL and refusal log."""
    refused = tmp_path / "refused.log"
    served = Process(
        [PYTHON, str(MODERN_SERVER), "0"],
        r"Uvicorn running on (http://\S+)",
        cwd=tmp_path,
        env={"MODERN_MARK": str(refused)},
    )
    try:
        assert served.match is not None
        yield served.match.group(1) + "/mcp", refused
    finally:
        served.close()


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # the SDK's HTTP client (test_transports)
@pytest.mark.parametrize("downstream", ["legacy", "auto"])
async def test_a_2026_only_upstream_is_mounted_and_called_by_an_mcp_client_downstream(
    tmp_path: Path, modern_upstream: tuple[str, Path], downstream: str
) -> None:
    url, refused = modern_upstream
    entry = {"id": "new", "name": "harness:mcp-client", "config": {"url": url}}
    config = write_config(tmp_path, [entry])
    served = Process(
        [HARNESS, "run", "-c", str(config), "--port", "0", "--no-web"],
        r"serving MCP at (\S+)",
        cwd=tmp_path,
    )
    try:
        assert served.match is not None
        async with Client(served.match.group(1), mode=downstream) as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            assert {"new_echo", "new_weather"} <= set(names)
            echoed = await client.call_tool("new_echo", {"text": "both eras"})
            assert echoed.structured_content == {"result": "upstream says both eras"}
            weather = await client.call_tool("new_weather", {"city": "Oslo"})
            assert weather.structured_content == {"city": "Oslo", "celsius": 21.5}
    finally:
        served.close()
    # harness asked for 2025-11-25 first (the handshake), was refused once, then spoke 2026.
    assert refused.read_text().splitlines() == ["POST -"]


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_era_found_and_a_pinned_era(
    tmp_path: Path, modern_upstream: tuple[str, Path]
) -> None:
    url, _ = modern_upstream
    entries = [
        {"id": "new", "name": "harness:mcp-client", "config": {"url": url}},
        stdio_entry("both"),
        stdio_entry("pinned", protocol="2026-07-28"),
        {
            "id": "old",
            "name": "harness:mcp-client",
            "config": {"url": url, "protocol": "2025-11-25", "restart_delay": 30},
        },
    ]
    async with Host(write_config(tmp_path, entries)) as host:
        eras = {}
        for entry in ("new", "both", "pinned"):
            state = supervision(fiber_of(host, entry))
            assert state is not None
            assert state.connection is not None
            eras[entry] = state.connection.protocol
        assert eras == {"new": "2026-07-28", "both": "2025-11-25", "pinned": "2026-07-28"}
        called = await host.tools.execute({"id": "1", "name": "pinned_echo", "args": {"text": "x"}})
        assert called.result == {"result": "upstream says x"}
        old = fiber_of(host, "old")
        assert old.state.value == "failed"
        assert "this server speaks only 2026-07-28" in str(old.error)


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_2026_upstreams_tool_list_changes_are_heard(
    tmp_path: Path, modern_upstream: tuple[str, Path]
) -> None:
    """At 2026-07-28 there is no standing stream for list changes: harness listens for them
    (subscriptions/listen) and re-lists."""
    url, _ = modern_upstream
    entry = {"id": "new", "name": "harness:mcp-client", "config": {"url": url}}
    async with Host(write_config(tmp_path, [entry])) as host:
        watch = Watch(host)
        assert "new_added" not in host.tools.list()
        grown = await host.tools.execute({"id": "1", "name": "new_grow", "args": {}})
        assert grown.result == {"result": "grown"}
        await watch.until(lambda: "new_added" in host.tools.list())
        added = await host.tools.execute({"id": "2", "name": "new_added", "args": {}})
        assert added.ok


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_session_is_kept_where_the_upstream_has_one(
    tmp_path: Path, modern_upstream: tuple[str, Path]
) -> None:
    """At 2025-11-25 over HTTP every request carries the session the handshake opened; a
    2026-07-28 upstream has none."""
    served = Process(
        [PYTHON, str(Path(__file__).with_name("upstream_server.py")), "http", "0"],
        r"Uvicorn running on (http://\S+)",
        cwd=tmp_path,
    )
    try:
        assert served.match is not None
        entries = [
            {
                "id": "old",
                "name": "harness:mcp-client",
                "config": {"url": served.match[1] + "/mcp"},
            },
            {"id": "new", "name": "harness:mcp-client", "config": {"url": modern_upstream[0]}},
        ]
        async with Host(write_config(tmp_path, entries)) as host:
            seen = {}
            for entry in ("old", "new"):
                ids = []
                for index in range(2):
                    call = {"id": f"{entry}{index}", "name": f"{entry}_header"}
                    result = await host.tools.execute({**call, "args": {"name": "mcp-session-id"}})
                    ids.append(result.result)
                seen[entry] = ids
    finally:
        served.close()
    first = seen["old"][0]
    assert first is not None
    assert first != {"result": "None"}
    assert seen["old"] == [first, first]
    assert seen["new"] == [{"result": "None"}, {"result": "None"}]
