"""The registry in the MCP format, built once per registry change, and its revision.

The revision is a digest of what ``tools/list`` shows (every tool's name, description,
schemas and annotations, in order), so replicas serving the same config and plugins report
the same revision and any drift between them shows. It is in every ``tools/list`` result as
``_meta["harness/revision"]``. Serving with ``--mcp-tools search`` (``search.mcp: true``) it
lists ``call_tool``, ``search_tools`` and the kept tools instead of every tool.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

import mcp_types as types

from ..tools.finding import CALL_TOOL, CALL_TOOL_DESCRIPTION, CALL_TOOL_SCHEMA, SEARCH_TOOL, kept
from ..tools.formats import mcp as mcp_schema
from ..tools.service import ToolsService

REVISION_KEY = "harness/revision"
HEADER_MARK = "x-mcp-header"
"""The schema keyword that asks for ``Mcp-Param-*`` headers. The SDK checks a call's headers
against the schema's properties marked with it, walking the schema twice per call; a schema
without the mark has nothing to check, so ``inputs`` leaves it out (the SDK then skips it)."""


@dataclass(frozen=True)
class Catalog:
    """One registry state in the MCP format: the tools/list answer, the input schemas that
    declare ``Mcp-Param`` headers, and the revision."""

    service: ToolsService
    listing: types.ListToolsResult
    inputs: dict[str, dict[str, Any]]
    revision: str
    searching: bool = False
    """Listed for search (``--mcp-tools search``): ``call_tool`` is served."""
    tasks: frozenset[str] = frozenset()
    """The tools that may run as MCP tasks (``task=``)."""

    @classmethod
    def of(cls, service: ToolsService, search: bool = False) -> Catalog:
        """The catalog of every tool, or with ``search`` (``--mcp-tools search``) of
        ``search_tools``, ``call_tool`` and the tools ``search.keep`` keeps."""
        tools = []
        inputs: dict[str, dict[str, Any]] = {}
        tasks: set[str] = set()
        names = service.list()
        if search:
            keep = kept(names, service.config.search)
            names = [SEARCH_TOOL, *(name for name in keep if name != SEARCH_TOOL)]
            tools.append(
                types.Tool(
                    name=CALL_TOOL, description=CALL_TOOL_DESCRIPTION, input_schema=CALL_TOOL_SCHEMA
                )
            )
        for name in names:
            definition = service.get(name)
            if definition is None:
                continue
            schema = mcp_schema(definition)
            hints = schema.get("annotations") or {}
            if HEADER_MARK in json.dumps(schema["inputSchema"]):
                inputs[name] = schema["inputSchema"]
            if definition.task is not None:
                tasks.add(name)
            tools.append(
                types.Tool(
                    name=schema["name"],
                    title=schema.get("title"),
                    description=schema["description"],
                    input_schema=schema["inputSchema"],
                    output_schema=schema.get("outputSchema"),
                    annotations=types.ToolAnnotations.model_validate(hints) if hints else None,
                    icons=[types.Icon.model_validate(icon) for icon in schema.get("icons", ())]
                    or None,
                    _meta=schema.get("_meta"),
                )
            )
        revision = digest(
            [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools]
        )
        listing = types.ListToolsResult(tools=tools, _meta={REVISION_KEY: revision})
        return cls(service, listing, inputs, revision, search, frozenset(tasks))


def digest(tools: list[dict[str, Any]]) -> str:
    """The revision of a tool listing: 16 hex digits of the SHA-256 of its canonical JSON."""
    text = json.dumps(tools, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
