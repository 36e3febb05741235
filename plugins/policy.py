"""policy: allow, deny or ask for approval before tools run, by rules in cordis.yml.

    - id: policy
      name: ./plugins/policy.py
      config:
        default: allow
        rules: { "write_*": ask, dangerous: deny }

The most specific matching rule wins: an exact name over a glob, then the glob with the
most literal characters; among equals, the one written last.

Rules match resource reads as ``resource:<uri>`` and prompt gets as ``prompt:<name>``
(``"resource:file://*": deny``, ``"prompt:internal_*": deny``); ``default`` covers them too,
and so does a glob such as ``*``. A refused read or get is an error whose message begins
``denied:``; nobody is asked about one, so ``ask`` refuses it as ``deny`` does.

A tool the policy denies is never found by tool search (``ctx.tools.search``,
``search_tools``); one it asks about is found, and asks when called.

The policy fails closed: while it is not loaded (during its own hot reload, a config edit,
or after a failed apply) the tools it denied or asked about are refused, never run, until a
policy entry of the same id is back (see ``ToolsService.gate``).
"""

from __future__ import annotations

import fnmatch
from typing import Any, Literal

import pydantic

from harness import Ask, Context, Deny

name = "policy"
inject = ["tools"]
Decision = Literal["allow", "deny", "ask"]


class Config(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")

    default: Decision = "allow"
    rules: dict[str, Decision] = {}
    """Tool name or glob (``*``, ``?``, ``[...]``), ``resource:<uri glob>`` or
    ``prompt:<name glob>`` → decision."""


def decide(config: Config, tool: str) -> tuple[Decision, str | None]:
    """The decision for ``tool`` and the rule that made it (None: the default)."""
    best: tuple[tuple[int, int, int], str] | None = None
    for order, pattern in enumerate(config.rules):
        if fnmatch.fnmatchcase(tool, pattern):
            exact = pattern == tool
            literal = sum(1 for char in pattern if char not in "*?[]")
            key = (int(exact), literal, order)
            if best is None or key > best[0]:
                best = (key, pattern)
    if best is None:
        return config.default, None
    return config.rules[best[1]], best[1]


def reason(config: Config, tool: str) -> str | None:
    """Why the policy stops ``tool`` (denies it or asks first), or None when it allows it."""
    decision, rule = decide(config, tool)
    why = f"rule {rule!r}" if rule else "the default rule"
    if decision == "deny":
        return f"the policy forbids {tool} ({why})"
    if decision == "ask":
        return f"the policy asks before {tool} runs ({why})"
    return None


def apply(ctx: Context, config: Config) -> None:
    async def check(call: Any, next: Any) -> Any:
        decision, _ = decide(config, call.name)
        if decision == "deny":
            return Deny(reason(config, call.name) or "")
        if decision == "ask":
            return Ask(reason(config, call.name) or "")
        return await next()

    async def check_access(access: Any, next: Any) -> Any:
        decision, rule = decide(config, access.subject)
        if decision == "allow":
            return await next()
        why = f"rule {rule!r}" if rule else "the default rule"
        if decision == "deny":
            return Deny(f"the policy forbids {access.subject} ({why})")
        return Deny(f"the policy asks before {access.subject} ({why}), and nobody is asked here")

    ctx.on("tools/pre-execute", check, prepend=True)
    ctx.on("resources/pre-read", check_access, prepend=True)
    ctx.on("prompts/pre-get", check_access, prepend=True)
    # Registered after the listener: from here on, unloading leaves the gated tools refused.
    key = f"policy:{ctx.fiber.name if ctx.fiber else name}"
    ctx.tools.gate(key, lambda tool: reason(config, tool))
    # Search never shows a denied tool; one it asks about is found (it runs once approved).
    ctx.tools.hide(lambda tool: decide(config, tool)[0] == "deny")
