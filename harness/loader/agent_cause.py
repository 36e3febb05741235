"""Why no agent runs: the entry at fault, found once for every surface that needs to say it.

The agent entry waits for an ``llm`` service, so when the model entry fails or is switched
off the agent is only ``pending``, and "add an agent" would send the user to the wrong entry.
:func:`agent_cause` names the cause, first match wins: no agent entry; the agent switched
off (by itself or by a group); a model entry that failed; the agent's own failure; a model
entry switched off; no model entry at all. ``harness chat`` and the web console each say it
in their own words (a command to run, a switch to click).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal, Protocol

from ..errors import HarnessError
from ..plugin import spec_of, validate_config
from .builtin import BUILTINS
from .config import LoadedConfig, Plan
from .config_problems import Problem

PROVIDERS = ("harness:openai", "harness:anthropic")
"""Entry names known to provide the ``llm`` service."""
AGENT = "harness:agent"
KEY = "api_key"
"""Both providers name the field in the problem of a missing key."""

Kind = Literal["no_agent", "switched_off", "model_failed", "agent_failed", "model_off", "no_model"]


class Status(Protocol):
    """One entry as :meth:`harness.Host.status` lists it."""

    @property
    def id(self) -> str: ...
    @property
    def name(self) -> str | None: ...
    @property
    def state(self) -> str: ...
    @property
    def group(self) -> str | None: ...


@dataclass(frozen=True)
class AgentCause:
    """Why no agent runs."""

    kind: Kind
    agent: str | None = None
    """The agent entry's id (None: there is none)."""
    entry: str | None = None
    """The entry at fault: the agent's, or a model entry's."""
    switch: str | None = None
    """For a switched-off entry: the outermost entry to switch on (the entry or its group)."""
    problem: Problem | None = None
    """The problem at fault; for ``no_model``, the agent entry's own (where it is)."""
    others: list[Problem] = field(default_factory=list)
    """Every other problem of the config."""
    blocked: list[Problem] = field(default_factory=list)
    """What would stop the model entries a switch turns on (an empty API key, say)."""
    unset: list[str] = field(default_factory=list)
    """Environment variables the model entries concerned read their ``api_key`` from, and
    which are unset or empty (``OPENAI_API_KEY`` for the starter config's model entry)."""


def agent_cause(
    status: Sequence[Status], problems: Sequence[Problem], loaded: LoadedConfig | None = None
) -> AgentCause:
    """The cause, from a host's ``status()``, ``problems()`` and the config it loaded."""
    cause = _find(status, problems, loaded.plans if loaded is not None else ())
    if loaded is None:
        return cause
    # the key problems among them: the entries whose api_key is what is missing
    found = [*cause.blocked, *([cause.problem] if cause.kind == "model_failed" else [])]
    ids = {problem.entry for problem in found if problem is not None and KEY in problem.message}
    unset = [name for plan in loaded.plans if plan.id in ids for name in _key_names(plan)]
    missing = [name for name in dict.fromkeys(unset) if not loaded.env.get(name)]
    return replace(cause, unset=missing)


def _find(
    status: Sequence[Status], problems: Sequence[Problem], plans: Sequence[Plan]
) -> AgentCause:
    entries = {entry.id: entry for entry in status}
    agent = next((e for e in entries.values() if e.name == AGENT), None)
    models = [e for e in entries.values() if e.name in PROVIDERS]
    problems = list(problems)
    if agent is None:
        return AgentCause("no_agent", others=problems)
    if agent.state == "disabled":
        switch = outermost_switch(agent.id, entries)
        inside = [m.id for m in models if _under(m.id, switch, entries) and m.state == "disabled"]
        return AgentCause(
            "switched_off",
            agent.id,
            agent.id,
            switch,
            others=problems,
            blocked=_blocked(inside, plans),
        )
    for model in models:
        failed = next((p for p in problems if p.entry == model.id), None)
        if failed is not None:
            rest = [p for p in problems if p is not failed]
            return AgentCause("model_failed", agent.id, model.id, problem=failed, others=rest)
    own = next((p for p in problems if p.entry == agent.id), None)
    rest = [p for p in problems if p is not own]
    if own is not None and agent.state == "failed":
        return AgentCause("agent_failed", agent.id, agent.id, problem=own, others=rest)
    off = next((m for m in models if m.state == "disabled"), None)
    if off is not None:
        switch = outermost_switch(off.id, entries)
        return AgentCause(
            "model_off",
            agent.id,
            off.id,
            switch,
            others=problems,
            blocked=_blocked([off.id], plans),
        )
    return AgentCause("no_model", agent.id, agent.id, problem=own, others=rest)


def outermost_switch(entry_id: str, entries: dict[str, Status]) -> str:
    """The outermost switched-off entry among ``entry_id`` and its groups."""
    found = entry_id
    current = entries.get(entry_id)
    while current is not None and current.group is not None:
        current = entries.get(current.group)
        if current is not None and current.state == "disabled":
            found = current.id
    return found


def _under(entry_id: str, ancestor: str, entries: dict[str, Status]) -> bool:
    current = entries.get(entry_id)
    while current is not None:
        if current.id == ancestor:
            return True
        current = entries.get(current.group) if current.group is not None else None
    return False


def _blocked(ids: Sequence[str], plans: Sequence[Plan]) -> list[Problem]:
    """What would stop these switched-off model entries once switched on: their own
    problems, else their config as the provider would check it (an empty key, say)."""
    found = []
    for plan in plans:
        if plan.id not in ids or plan.name not in PROVIDERS:
            continue
        if plan.errors:
            found.append(plan.errors[0])
            continue
        plugin = BUILTINS.get(str(plan.name).removeprefix("harness:"))
        try:
            validate_config(spec_of(plugin, name=plan.id), plan.config)
        except HarnessError as exc:
            where = plan.entry.where_of("config")
            found.append(Problem.at(where.file, where.line, plan.id, str(exc)))
    return found


_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)")


def _key_names(plan: Plan) -> list[str]:
    """The variables a model entry's ``api_key`` is written with (``${OPENAI_API_KEY:-}``)."""
    raw = plan.entry.config.get("api_key") if isinstance(plan.entry.config, dict) else None
    return _VARIABLE.findall(raw) if isinstance(raw, str) else []
