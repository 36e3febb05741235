"""Prompts: definitions (``define_prompt``, ``@prompt``) and the ``prompts`` service that
lists and renders them."""

from .define import PromptArgument, PromptDefinition, define_prompt, prompt
from .service import PromptsService

__all__ = ["PromptArgument", "PromptDefinition", "PromptsService", "define_prompt", "prompt"]
