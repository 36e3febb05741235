"""Models behind the ``llm`` service: the interface, and the OpenAI-compatible provider."""

from .base import LLM, ChatRequest, Completion, LLMError, RequestedCall

__all__ = ["LLM", "ChatRequest", "Completion", "LLMError", "RequestedCall"]
