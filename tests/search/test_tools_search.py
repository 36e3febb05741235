"""``ctx.tools.search`` and ``search_tools`` through a Host: ranking, policy, the agent's globs,
and the index following hot reload."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness import Host

from ..helpers import ROOT, write

pytestmark = pytest.mark.anyio

CATALOGUE_PLUGIN = """
from harness import define_tool

inject = ["tools"]


def apply(ctx, config):
    for name, description, params in config["tools"]:
        ctx.tools.register(
            define_tool(
                name=name,
                description=description,
                parameters={p: {"type": "string", "description": d} for p, d in params},
                execute=lambda args, name=name: name,
            )
        )
"""

CATALOGUE = [
    ("read_text_file", "Read a UTF-8 text file and return its lines.", [("path", "File path")]),
    ("listDirectory", "Show the entries of a folder.", [("path", "Folder path")]),
    ("send_email", "Send a message to a mailbox.", [("recipient", "Email address")]),
    ("delete_everything", "Remove all files on the disk for good.", []),
    ("get_weather", "Current conditions for a city.", [("city", "City name, e.g. Paris")]),
    ("book_flight", "Reserve a seat on a plane.", [("destination", "Airport code")]),
]


def project(
    tmp_path: Path, tools: list[tuple[str, str, list[tuple[str, str]]]], extra: str = ""
) -> Path:
    write(tmp_path / "plugins" / "catalogue.py", CATALOGUE_PLUGIN)
    shutil.copy(ROOT / "plugins" / "policy.py", tmp_path / "plugins" / "policy.py")
    return write(
        tmp_path / "cordis.yml",
        f"- {{ id: catalogue, name: ./plugins/catalogue.py, "
        f"config: {{ tools: {json.dumps(tools)} }} }}\n"
        "- id: policy\n  name: ./plugins/policy.py\n"
        "  config: { rules: { delete_everything: deny, send_email: ask } }\n" + extra,
    )


async def test_search_finds_by_name_parts_description_and_parameters(tmp_path: Path) -> None:
    async with Host(project(tmp_path, CATALOGUE)) as host:
        by_name = await host.tools.search("list directory")
        assert by_name[0].name == "listDirectory"
        by_description = await host.tools.search("what is the weather like in the city")
        assert by_description[0].name == "get_weather"
        by_parameter = await host.tools.search("airport code", limit=1)
        assert [hit.name for hit in by_parameter] == ["book_flight"]
        assert by_parameter[0].description == "Reserve a seat on a plane."
        assert by_parameter[0].score > 0
        assert await host.tools.search("zebra quantum") == []


async def test_a_denied_tool_is_never_found_and_an_asked_one_is(tmp_path: Path) -> None:
    async with Host(project(tmp_path, CATALOGUE)) as host:
        names = [hit.name for hit in await host.tools.search("remove all files disk", limit=50)]
        assert "delete_everything" not in names
        assert [hit.name for hit in await host.tools.search("send email")][:1] == ["send_email"]
        assert "delete_everything" in host.tools.list()  # still registered, only not found


async def test_a_caller_s_globs_limit_what_it_finds(tmp_path: Path) -> None:
    async with Host(project(tmp_path, CATALOGUE)) as host:
        hits = await host.tools.search("file folder path", tools=["list*"])
        assert [hit.name for hit in hits] == ["listDirectory"]


async def test_search_tools_is_offered_over_the_threshold_and_obeys_the_policy(
    tmp_path: Path,
) -> None:
    many = [*CATALOGUE, *((f"filler_{i}", f"Filler number {i}.", []) for i in range(3))]
    tools_entry = "- { id: tools, name: 'harness:tools', config: { search: { threshold: 8 } } }\n"
    async with Host(project(tmp_path, many[:8], tools_entry)) as host:
        assert "search_tools" not in host.tools.list()  # 8 tools: not over the threshold
    async with Host(project(tmp_path, many, tools_entry)) as host:
        assert "search_tools" in host.tools.list()
        result = await host.tools.execute(
            {"name": "search_tools", "args": {"query": "remove all files on the disk"}}
        )
        assert result.ok, result.error
        assert "delete_everything" not in [tool["name"] for tool in result.result["tools"]]
        result = await host.tools.execute(
            {"name": "search_tools", "args": {"query": "weather", "limit": 1}}
        )
        assert result.result["tools"] == [
            {
                "name": "get_weather",
                "description": "Current conditions for a city.",
                "score": result.result["tools"][0]["score"],
            }
        ]
        bad = await host.tools.execute(
            {"name": "search_tools", "args": {"query": "weather", "limit": 0}}
        )
        assert (bad.code, bad.error) == (
            "invalid_args",
            "Invalid arguments for tool search_tools: limit must be a whole number from 1 "
            "to 50, got 0",
        )


async def test_the_index_follows_hot_reload(tmp_path: Path) -> None:
    path = project(tmp_path, CATALOGUE)
    async with Host(path) as host:
        assert (await host.tools.search("weather"))[0].name == "get_weather"
        edited = [
            (name, "Forecast rain and sunshine." if name == "get_weather" else about, params)
            for name, about, params in CATALOGUE
            if name != "book_flight"
        ]
        edited.append(("order_pizza", "Order a pizza to your door.", []))
        project(tmp_path, edited)
        await host.reload()
        assert await host.tools.search("current conditions") == []  # the old text is gone
        assert (await host.tools.search("rain forecast"))[0].name == "get_weather"
        assert (await host.tools.search("pizza"))[0].name == "order_pizza"
        assert await host.tools.search("plane seat") == []


async def test_while_the_policy_is_not_loaded_what_it_gated_is_not_found(tmp_path: Path) -> None:
    path = project(tmp_path, CATALOGUE)
    async with Host(path) as host:
        assert (await host.tools.search("send email"))[0].name == "send_email"  # asked: found
        path.write_text(
            path.read_text().replace("- id: policy\n", "- id: policy\n  enabled: false\n")
        )
        await host.reload()  # the policy unloads: its gate stays behind, closed
        assert [s.state for s in host.status()] == ["active", "disabled"]
        assert await host.tools.search("send email") == []
        assert "delete_everything" not in [h.name for h in await host.tools.search("remove all")]
        assert (await host.tools.search("weather"))[0].name == "get_weather"  # not gated
