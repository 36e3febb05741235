"""Listeners are checked when they register, as pluggy checks hook implementations."""

from __future__ import annotations

from typing import Any

import pytest

from harness import Context, PluginError, ToolsService
from harness.events import declare_event

pytestmark = pytest.mark.anyio


async def _load(root: Context, apply: Any, name: str = "audit") -> Any:
    apply.__name__ = name
    return root.plugin(apply)


async def test_a_pipeline_listener_without_next_fails_at_registration() -> None:
    async def check(call: Any) -> Any:
        return "allow"

    def apply(ctx: Context) -> None:
        ctx.on("tools/pre-execute", check)

    async with Context() as root:
        await root.plugin(ToolsService)
        fiber = root.plugin(apply, name="audit")
        with pytest.raises(PluginError) as caught:
            await fiber
    assert str(caught.value) == (
        "plugin 'audit' listens to 'tools/pre-execute' with "
        "test_a_pipeline_listener_without_next_fails_at_registration.<locals>.check(call), "
        "but 'tools/pre-execute' listeners are called as (call, next); give it that "
        "signature (await next() to run the rest of the pipeline)"
    )


@pytest.mark.parametrize(
    ("event", "listener"),
    [
        ("tools/post-execute", lambda call, next: None),
        ("tools/result", lambda call: None),
        ("tools/change", lambda: None),
        ("fiber/status", lambda fiber, previous, extra: None),
        ("reload/done", lambda: None),
        ("agent/event", lambda event, more: None),
        ("ready", lambda now: None),
    ],
)
async def test_wrong_signatures_of_known_events_are_refused(event: str, listener: Any) -> None:
    async with Context() as root:
        with pytest.raises(PluginError, match=f"'{event}' listeners are called as"):
            root.on(event, listener)
        with pytest.raises(PluginError, match=f"'{event}' listeners are called as"):
            root.once(event, listener)


@pytest.mark.parametrize(
    ("event", "listener"),
    [
        ("tools/pre-execute", lambda call, next: next()),
        ("tools/post-execute", lambda call, result, next=None: None),
        ("tools/result", lambda *args: None),
        ("tools/change", lambda kind, name, extra=1: None),
        ("service/change", print),
        ("ready", lambda: None),
        ("agent/event", lambda event: None),
        ("my/own", lambda a, b, c: None),
    ],
)
async def test_fitting_listeners_register(event: str, listener: Any) -> None:
    async with Context() as root:
        root.on(event, listener)()


async def test_unknown_names_in_checked_namespaces_warn(caplog: pytest.LogCaptureFixture) -> None:
    def apply(ctx: Context) -> None:
        ctx.on("tools/preexecute", lambda call, next: next())
        ctx.on("reload/finished", lambda report: None)
        ctx.on("plugins/anything", lambda: None)  # outside the checked namespaces: silent

    async with Context() as root:
        await root.plugin(apply, name="typo")
    warnings = [record.getMessage() for record in caplog.records if record.levelname == "WARNING"]
    assert warnings[0] == (
        "plugin 'typo' listens to 'tools/preexecute', which harness never emits (did you mean "
        "'tools/pre-execute'?); known events there: tools/change, tools/execute, "
        "tools/post-execute, tools/pre-execute, tools/result"
    )
    assert warnings[1].startswith("plugin 'typo' listens to 'reload/finished', which harness")
    assert len(warnings) == 2


async def test_declared_events_are_checked_too() -> None:
    declare_event("agent/test-only", "session", "event")
    async with Context() as root:
        root.on("agent/test-only", lambda session, event: None)()
        with pytest.raises(PluginError, match=r"called as \(session, event\)"):
            root.on("agent/test-only", lambda session: None)
