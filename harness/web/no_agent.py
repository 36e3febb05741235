"""The Chat's notice when no agent runs: what is missing, what to set, and the demo.

The cause is :func:`~harness.loader.agent_cause.agent_cause`'s, the one ``harness chat``
names too; here it is said for a person at the console: one line for what is wrong, one for
what to set or switch (the Plugins page can switch an entry), and one for the chat that needs
no key (``harness run --demo``). Lines are separated by newlines; the page shows each as a
paragraph.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..loader.agent_cause import AgentCause, agent_cause
from ..loader.config_problems import Problem

if TYPE_CHECKING:
    from ..host import Host

DEMO = (
    "For a chat with no key at all, start `harness run --demo`: a scripted demo model "
    "(not a language model) answers and calls the tools."
)
WITHOUT = "Plugins and Tools work without a model."
ADD_MODEL = (
    "a model entry, `name: harness:openai` with `model`, `base_url` and "
    "`api_key: ${OPENAI_API_KEY}` (or `name: harness:anthropic`, which reads "
    "ANTHROPIC_API_KEY), with that variable exported"
)


def no_agent_message(host: Host) -> str:
    """Why ``host`` has no agent, what to do about it, and the demo, one line each."""
    cause = agent_cause(host.status(), host.problems(), host.loaded)
    config = host.config_path
    return "\n".join([*_what_and_fix(cause, str(config)), DEMO, WITHOUT])


def _what_and_fix(cause: AgentCause, config: str) -> list[str]:
    agent, problem, switch = cause.agent, cause.problem, cause.switch
    if cause.kind == "no_agent":
        return [
            f"Chat needs an agent, and {config} has no agent entry.",
            f"Add two entries there (docs/agent.md): {ADD_MODEL}; and the agent, "
            "`name: harness:agent`.",
        ]
    if cause.kind == "switched_off":
        what = (
            f"The agent entry {agent!r} is switched off in {config}."
            if switch == agent
            else f"The agent entry {agent!r} is in the group {switch!r}, which is switched "
            f"off in {config}."
        )
        return [what, _switch_on(switch, cause)]
    if cause.kind == "model_failed":
        return [
            f"The model entry {cause.entry!r} failed to start, so the agent {agent!r} waits "
            f"for an `llm` service: {_located(problem)}",
            _set_key(cause) or "Fix the entry there and save: the console reloads it.",
        ]
    if cause.kind == "agent_failed":
        return [
            f"The agent entry {agent!r} failed to start: {_located(problem)}",
            "Fix the entry there and save: the console reloads it.",
        ]
    if cause.kind == "model_off":
        return [
            f"The model entry {cause.entry!r} is switched off in {config}, so the agent "
            f"{agent!r} waits for an `llm` service.",
            _switch_on(switch, cause),
        ]
    where = f" ({problem.file}:{problem.line})" if problem is not None else ""
    return [
        f"The agent entry {agent!r}{where} waits for an `llm` service, and no entry in "
        f"{config} provides one.",
        f"Add {ADD_MODEL} (docs/agent.md).",
    ]


def _switch_on(switch: str | None, cause: AgentCause) -> str:
    text = f"Switch {switch!r} on in Plugins (or run `harness enable {switch}`)"
    key = _set_key(cause)
    if key:
        return f"{key[:-1]}, then {text[0].lower()}{text[1:]}."
    if cause.blocked:
        first = cause.blocked[0]
        return f"{text}, once its model entry {first.entry!r} is fixed: {_located(first)}"
    return f"{text}."


def _set_key(cause: AgentCause) -> str:
    """What to set when the model's key is what is missing; "" when it is not."""
    if not cause.unset:
        return ""
    name = cause.unset[0]
    return (
        f"Set the API key {name}: write `{name}=...` into .env beside the config (hot "
        f"reload reads it), or export {name} and restart `harness run`."
    )


def _located(problem: Problem | None) -> str:
    if problem is None:
        return "see Plugins."
    text = str(problem)
    return text if text.endswith(".") else f"{text}."
