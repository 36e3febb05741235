"""Why ``harness chat`` has no agent to talk to: the cause, named first.

The agent entry waits for an ``llm`` service, so when the model entry fails the agent is only
``pending``; saying "add an agent" then sends the user to the wrong entry. The headline names
the entry at fault — the model entry that failed (file, line, entry, its problem), an entry
switched off (and the id to enable), the agent's own failure, or the missing entry — and the
other problems follow, one per line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

PROVIDERS = ("harness:openai", "harness:anthropic")
"""Entry names known to provide the ``llm`` service."""
DEMO = "or try `harness chat --demo` (a scripted demo model, no key needed)"


def why_no_agent(host: Any, config: Path) -> str:
    """The message of a ``harness chat`` that found no ``agent`` service in ``host``."""
    status = {entry.id: entry for entry in host.status()}
    problems = list(host.problems())
    agent = next((e for e in status.values() if e.name == "harness:agent"), None)
    models = [e for e in status.values() if e.name in PROVIDERS]
    if agent is None:
        return _with(
            f"no agent in {config}: add an entry `name: harness:agent` and a model entry "
            f"(`name: harness:openai`, see docs/agent.md), {DEMO}",
            problems,
        )
    if agent.state == "disabled":
        return _with(
            f"the agent entry {agent.id!r} is switched off in {config}: run "
            f"`harness enable {_switch(agent.id, status)}`, {DEMO}",
            problems,
        )
    for model in models:
        failed = next((p for p in problems if p.entry == model.id), None)
        if failed is not None:
            return _with(
                f"the model entry {model.id!r} failed, so the agent {agent.id!r} waits for it: "
                f"{failed}",
                [p for p in problems if p is not failed],
            )
    own = next((p for p in problems if p.entry == agent.id), None)
    if own is not None and agent.state == "failed":
        return _with(
            f"the agent entry {agent.id!r} failed: {own}", [p for p in problems if p is not own]
        )
    off = next((m for m in models if m.state == "disabled"), None)
    if off is not None:
        return _with(
            f"the model entry {off.id!r} is switched off in {config}, so the agent "
            f"{agent.id!r} waits for an `llm` service: run "
            f"`harness enable {_switch(off.id, status)}`, {DEMO}",
            problems,
        )
    where = f" ({own.file}:{own.line})" if own is not None else ""
    return _with(
        f"the agent entry {agent.id!r}{where} waits for an `llm` service and no entry provides "
        f"one: add a model entry (`name: harness:openai`, see docs/agent.md), {DEMO}",
        [p for p in problems if p is not own],
    )


def _switch(entry_id: str, status: dict[str, Any]) -> str:
    """The outermost switched-off entry among ``entry_id`` and its groups."""
    found = entry_id
    current = status.get(entry_id)
    while current is not None and current.group is not None:
        current = status.get(current.group)
        if current is not None and current.state == "disabled":
            found = current.id
    return found


def _with(headline: str, problems: list[Any]) -> str:
    return headline + "".join(f"\n  problem: {p}" for p in problems)
