"""Test doubles for model providers, served over real HTTP on 127.0.0.1.

One module per provider's wire format; this package re-exports the public names so
``from harness.testing import ScriptedServer`` keeps working. See
:mod:`harness.testing.openai_server` for the OpenAI-compatible scripted server.
"""

from __future__ import annotations

from harness.testing.openai_server import Fault, Reply, Rule, ScriptedCall, ScriptedServer, call

__all__ = ["Fault", "Reply", "Rule", "ScriptedCall", "ScriptedServer", "call"]
