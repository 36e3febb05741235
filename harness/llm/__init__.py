"""Models behind the ``llm`` service: the neutral interface, and the providers."""

from .base import (
    LLM,
    AssistantMessage,
    ChatRequest,
    Completion,
    LLMError,
    Message,
    RequestedCall,
    ToolMessage,
    UserMessage,
)

__all__ = [
    "LLM",
    "AssistantMessage",
    "ChatRequest",
    "Completion",
    "LLMError",
    "Message",
    "RequestedCall",
    "ToolMessage",
    "UserMessage",
]
