"""``--demo`` of ``harness run`` and ``harness chat``: the scripted demo model as the model.

The demo server (:mod:`harness.demo.model`) starts in this process on 127.0.0.1, and the
host loads the project with one more patch file, written to a temporary folder and never to
the project: the model entry (the first ``harness:openai`` or ``harness:anthropic`` entry,
else a new ``demo-model``) points at the demo server, other provider entries are off, the
agent entry (or a new ``demo-agent``) and the groups holding them are on. When the bundled
git tools are off, the demo switches them on for this run only, confined to the project
folder (``allowed_roots``; both only read), so "recent commits" works straight after
``harness init``. ``cordis.yml`` is not changed: ``harness enable git`` keeps them on.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from ..loader.config import Plan, read_config
from .no_agent import PROVIDERS

GIT_TOOLS = ("git_log_reader", "git_diff")


@dataclass(frozen=True)
class Demo:
    """What the demo did, for the banner."""

    url: str
    git_on: bool
    """The demo switched the git tools on for this run."""
    project: Path


def demo_entries(plans: list[Plan], project: Path, url: str) -> tuple[list[dict[str, Any]], bool]:
    """The patch entries that make ``plans`` use the demo model; and whether git was off."""
    from ..demo.model import DEMO_MODEL

    by_id = {plan.id: plan for plan in plans}
    patch: dict[str, dict[str, Any]] = {}

    def switch_on(plan: Plan) -> None:
        patch.setdefault(plan.id, {"id": plan.id})["enabled"] = True
        group = by_id.get(plan.group) if plan.group else None
        while group is not None:  # a switched-on group is switched on again: no change
            patch.setdefault(group.id, {"id": group.id})["enabled"] = True
            group = by_id.get(group.group) if group.group else None

    model_config = {
        "model": "demo",
        "label": DEMO_MODEL,
        "base_url": url,
        "api_key": "",
        "max_retries": 0,
    }
    models = sorted((p for p in plans if p.name in PROVIDERS), key=lambda p: not p.enabled)
    if models:
        switch_on(models[0])
        patch[models[0].id].update(name="harness:openai", config=model_config)
        for other in models[1:]:
            patch[other.id] = {"id": other.id, "enabled": False}
    else:
        patch["demo-model"] = {"id": "demo-model", "name": "harness:openai", "config": model_config}
    agents = [p for p in plans if p.name == "harness:agent"]
    if agents:
        switch_on(agents[0])
    else:
        sessions = str(project / ".harness" / "sessions")
        patch["demo-agent"] = {
            "id": "demo-agent",
            "name": "harness:agent",
            "config": {"sessions": sessions},
        }
    git_off = False
    for name in GIT_TOOLS:
        plan = by_id.get(name)
        if plan is not None and not plan.enabled:
            git_off = True
            switch_on(plan)
            config = dict(plan.config) if isinstance(plan.config, dict) else {}
            patch[name]["config"] = {**config, "allowed_roots": [str(project)]}
    return list(patch.values()), git_off


@contextlib.contextmanager
def demo_options(options: Any) -> Iterator[tuple[Any, Demo]]:
    """``options`` with the demo patch added, while the demo server runs."""
    from ..demo.model import DemoServer

    config = options.config_path.absolute()
    loaded = read_config(
        config, [Path(p) for p in options.patches], options.overrides, lenient=True
    )
    project = config.parent
    with DemoServer(project) as server, tempfile.TemporaryDirectory(prefix="harness-demo-") as tmp:
        entries, git_off = demo_entries(loaded.plans, project, server.url)
        patch = Path(tmp) / "demo.yml"
        patch.write_text(
            "# written by --demo: the scripted demo model as this run's model\n"
            + yaml.safe_dump({"insert": entries}, sort_keys=False, allow_unicode=True),
            encoding="utf-8",
        )
        yield (
            replace(options, patches=[*options.patches, str(patch)]),
            Demo(server.url, git_off, project),
        )


def banner(demo: Demo, model: bool = True) -> list[str]:
    """The lines ``--demo`` prints on stderr before the host starts (``harness chat`` names
    the model itself, from the ``llm`` service)."""
    from ..demo.model import DEMO_MODEL

    lines = [f"model: {DEMO_MODEL} (--demo, at {demo.url})"] if model else []
    if demo.git_on:
        lines.append(
            f"demo: the git tools are on for this run, confined to {demo.project} "
            "(`harness enable git` keeps them on)"
        )
    lines.append("demo: ask for the recent commits, or for 2 + 3")
    return lines
