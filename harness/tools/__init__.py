"""Tools: definitions (``define_tool``, ``@tool``), the ``tools`` service and its pipeline."""

from .calls import ERROR_CODES, Ask, Deny, ErrorCode, ToolCall, ToolResult
from .definition import ToolAnnotations, ToolDefinition, define_tool
from .from_function import tool
from .service import ToolsConfig, ToolsService

__all__ = [
    "ERROR_CODES",
    "Ask",
    "Deny",
    "ErrorCode",
    "ToolAnnotations",
    "ToolCall",
    "ToolDefinition",
    "ToolResult",
    "ToolsConfig",
    "ToolsService",
    "define_tool",
    "tool",
]
