"""Test doubles for model providers, served over real HTTP on 127.0.0.1.

One module per provider's wire format; this package re-exports the public names so
``from harness.testing import ScriptedServer`` keeps working. See
:mod:`harness.testing.openai_server` for the OpenAI-compatible scripted server and
:mod:`harness.testing.anthropic_server` for the Anthropic Messages-API one; both answer by
the same rules and faults.
"""

from __future__ import annotations

from harness.testing.anthropic_server import AnthropicServer
from harness.testing.openai_server import Fault, Reply, Rule, ScriptedCall, ScriptedServer, call

__all__ = ["AnthropicServer", "Fault", "Reply", "Rule", "ScriptedCall", "ScriptedServer", "call"]
