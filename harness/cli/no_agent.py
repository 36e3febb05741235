"""Why ``harness chat`` has no agent to talk to: the cause, named first.

The agent entry waits for an ``llm`` service, so when the model entry fails the agent is only
``pending``; saying "add an agent" then sends the user to the wrong entry. The headline names
the entry at fault (:func:`~harness.loader.agent_cause.agent_cause`) — the model entry that
failed (file, line, entry, its problem), an entry switched off (and the id to enable), the
agent's own failure, or the missing entry — and the other problems follow, one per line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..loader.agent_cause import PROVIDERS, agent_cause

__all__ = ["PROVIDERS", "why_no_agent"]

DEMO = "or try `harness chat --demo` (a scripted demo model, no key needed)"


def why_no_agent(host: Any, config: Path) -> str:
    """The message of a ``harness chat`` that found no ``agent`` service in ``host``."""
    cause = agent_cause(host.status(), host.problems())
    agent, problem = cause.agent, cause.problem
    if cause.kind == "no_agent":
        headline = (
            f"no agent in {config}: add an entry `name: harness:agent` and a model entry "
            f"(`name: harness:openai`, see docs/agent.md), {DEMO}"
        )
    elif cause.kind == "switched_off":
        headline = (
            f"the agent entry {agent!r} is switched off in {config}: run "
            f"`harness enable {cause.switch}`, {DEMO}"
        )
    elif cause.kind == "model_failed":
        headline = (
            f"the model entry {cause.entry!r} failed, so the agent {agent!r} waits for it: "
            f"{problem}"
        )
    elif cause.kind == "agent_failed":
        headline = f"the agent entry {agent!r} failed: {problem}"
    elif cause.kind == "model_off":
        headline = (
            f"the model entry {cause.entry!r} is switched off in {config}, so the agent "
            f"{agent!r} waits for an `llm` service: run "
            f"`harness enable {cause.switch}`, {DEMO}"
        )
    else:
        where = f" ({problem.file}:{problem.line})" if problem is not None else ""
        headline = (
            f"the agent entry {agent!r}{where} waits for an `llm` service and no entry "
            f"provides one: add a model entry (`name: harness:openai`, see docs/agent.md), "
            f"{DEMO}"
        )
    return headline + "".join(f"\n  problem: {p}" for p in cause.others)
