"""The registry in the MCP format, built once per registry change."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import mcp_types as types

from ..tools.formats import mcp as mcp_schema
from ..tools.service import ToolsService


@dataclass(frozen=True)
class Catalog:
    """One registry state in the MCP format: the tools/list answer and the input schemas."""

    service: ToolsService
    listing: types.ListToolsResult
    inputs: dict[str, dict[str, Any]]

    @classmethod
    def of(cls, service: ToolsService) -> Catalog:
        tools = []
        inputs: dict[str, dict[str, Any]] = {}
        for name in service.list():
            definition = service.get(name)
            if definition is None:
                continue
            schema = mcp_schema(definition)
            hints = schema.get("annotations") or {}
            inputs[name] = schema["inputSchema"]
            tools.append(
                types.Tool(
                    name=schema["name"],
                    description=schema["description"],
                    input_schema=schema["inputSchema"],
                    output_schema=schema.get("outputSchema"),
                    annotations=types.ToolAnnotations.model_validate(hints) if hints else None,
                )
            )
        return cls(service, types.ListToolsResult(tools=tools), inputs)
