"""Stubs from hostile schemas: whatever a description, a parameter's description or a name
holds, the stubs stay valid Python that reads back as those texts, and programs still run
and are still type-checked.

The named cases go through the real surfaces (an MCP server's tool mounted by the gateway,
a tool registered in the registry, ``run_code``); the property test feeds arbitrary texts
and names to the generator and checks the result with Python's parser and Monty's checker.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pydantic_monty as monty
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness import Host, define_tool
from harness.code.names import RESERVED
from harness.code.stubs import stubs
from harness.tools.definition import ToolDefinition

from . import upstream_server
from .conftest import project, run

SERVER = Path(upstream_server.__file__)


def python_of(description: str) -> str:
    """The stubs as run_code's description shows them."""
    return description.split("```python\n", 1)[1].rsplit("```", 1)[0]


def docstrings(source: str) -> dict[str, str]:
    """Each function's docstring, as Python reads it."""
    return {
        node.name: ast.get_docstring(node, clean=False) or ""
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.AsyncFunctionDef)
    }


@pytest.mark.anyio
async def test_an_upstream_tool_with_quotes_and_backslashes_everywhere(tmp_path: Path) -> None:
    entry = {
        "id": "up",
        "name": "harness:mcp-client",
        "config": {"command": sys.executable, "args": [str(SERVER)], "include": ["quote"]},
    }
    config = tmp_path / "cordis.yml"
    config.write_text(yaml.safe_dump({"insert": [{"id": "code", "name": "harness:code"}, entry]}))
    async with Host(config) as host:
        definition = host.tools.get("run_code")
        assert definition is not None
        doc = docstrings(python_of(definition.description))["up_quote"]
        assert doc.splitlines() == [
            upstream_server.QUOTE_DESCRIPTION,
            "",
            "    Args:",
            f"        text: {upstream_server.TEXT_DESCRIPTION}",
            f"        mark: {upstream_server.MARK_DESCRIPTION}",
            "    ",
        ]
        result = await run(host, 'await up_quote(text="a", mark="*")')
        assert result.ok, result.error
        assert result.result["value"] == {"result": "*a*"}
        wrong = await run(host, "await up_quote(text=1)")  # still type-checked
        assert wrong.code == "invalid_args"
        assert "Expected `str`, found `Literal[1]`" in (wrong.error or "")


@pytest.mark.anyio
async def test_hostile_texts_and_names_of_a_registered_tool(tmp_path: Path) -> None:
    async with Host(project(tmp_path)) as host:
        host.ctx.tools.register(
            define_tool(
                name="odd",
                description='A lone surrogate \ud800, a NUL \x00 and a closing "',
                parameters={"text": {"type": "string", "description": 'ends in \\"'}},
                output={
                    "schema": {
                        "type": "object",
                        "properties": {"my-key": {"type": "string"}, "class": {"type": "integer"}},
                    }
                },
                execute=lambda args: {"my-key": "v", "class": 1},
            )
        )
        host.ctx.tools.register(
            define_tool(
                name="ligature",
                description="Its parameter is written with a ligature.",
                parameters={"\ufb01le": {"type": "string"}},
                execute=lambda args: sorted(args),
            )
        )
        definition = host.tools.get("run_code")
        assert definition is not None
        source = python_of(definition.description)
        assert docstrings(source)["odd"].splitlines()[0] == (
            'A lone surrogate \ud800, a NUL \x00 and a closing "'
        )
        assert "# reachable only through call_tool: 'ligature'" in source
        program = (
            "r = await odd()\n"
            'n: int = r["class"]\n'
            'key: str = r["my-key"]\n'
            'await call_tool("ligature", {"\ufb01le": "x"}), key, n'
        )
        result = await run(host, program)
        assert result.ok, result.error
        assert result.result["value"] == [["\ufb01le"], "v", 1]
        wrong = await run(host, 'r = await odd()\nn: str = r["class"]')
        assert wrong.code == "invalid_args"


# -- the property --------------------------------------------------------------------------

SPECIALS = ['"', '"""', "\\", "'", "\x00", "\ud800", "\n", "\r", "\x1b", "\u2028", "\ufeff"]
texts = st.lists(
    st.sampled_from(SPECIALS) | st.text(st.characters(exclude_categories=()), max_size=4),
    max_size=8,
).map("".join)
identifiers = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}", fullmatch=True)
names = identifiers | st.sampled_from([*RESERVED, "class", "\ufb01le", "my-key", "ok"]) | texts
tool_names = identifiers | st.sampled_from(["print", "Any", "call_tool", "asyncio", "AResult"])
NODES: list[dict[str, Any]] = [
    {"type": "string"},
    {"type": "integer"},
    {"type": ["number", "null"]},
    {"type": {}},
]
schema_nodes = st.sampled_from(NODES) | texts.map(lambda v: {"enum": [v, 1]})


@st.composite
def definitions(draw: st.DrawFn) -> ToolDefinition:
    properties = {
        key: {**node, "description": text}
        for key, node, text in draw(st.lists(st.tuples(names, schema_nodes, texts), max_size=3))
    }
    results = draw(st.dictionaries(names, schema_nodes, max_size=3))
    return ToolDefinition(
        name=draw(tool_names),
        description=draw(texts),
        parameters={"type": "object", "properties": properties},
        output_schema=draw(st.none() | st.just({"type": "object", "properties": results})),
        execute=lambda args: None,
    )


def shown(text: str, limit: int = 400) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@pytest.fixture(scope="module")
def checker() -> Iterator[monty.Monty]:
    with monty.Monty(min_processes=1, max_processes=1) as pool:
        yield pool


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(definitions(), max_size=4, unique_by=lambda d: d.name))
def test_any_texts_and_names_give_stubs_python_and_monty_read(
    checker: monty.Monty, tools: list[ToolDefinition]
) -> None:
    source = stubs(tools)
    found = docstrings(source)  # Python's own parser reads them...
    assert found.pop("call_tool").startswith("Call any allowed tool by name")
    for tool in tools:
        if tool.name not in found:
            continue
        doc = found[tool.name].splitlines() or [""]
        assert doc[0] == shown(tool.description)  # ... back as the texts
        for key, node in tool.parameters["properties"].items():
            if shown(node["description"]):
                assert f"        {key}: {shown(node['description'], 160)}" in doc
    functions = [t.name for t in tools if t.name in found]
    assert all(name not in RESERVED for name in functions)
    program = "\n".join(f"f{index} = {name}" for index, name in enumerate(functions))
    # ... and so does Monty's type checker, finding every function (a typing error fails
    # the test); then the program runs, without tools: NameError
    session = checker.checkout(type_check=True, type_check_stubs=source)
    with session, pytest.raises(monty.MontyRuntimeError, match="NameError"):
        session.feed_run(program + "\ncall_tool")
