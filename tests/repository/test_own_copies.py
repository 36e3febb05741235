"""Nothing a user does to the clone's ``cordis.yml`` breaks the suite: every test runs on a
copy of its own (the pristine template, ``tests/helpers.py``'s ``project_copy``).

The proof runs the tests that used to read the working tree's file in a copy of this
checkout whose ``cordis.yml`` was changed the way the README and docs/agent.md suggest:
``harness enable git``, then the model and agent entries of the agent guide (with no key in
the environment, so the model entry fails and the agent stays pending).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from ..helpers import ROOT, TEMPLATE, copy_of_checkout

PROVIDER_KEYS = ("OPENAI_API_KEY", "DEEPSEEK_API_KEY", "ANTHROPIC_API_KEY")
NODES = [
    "tests/repository/test_docs.py::test_seed_patch_walkthrough",
    "tests/mcp/test_surface.py::test_list_tools_in_the_mcp_format",
    "tests/mcp/test_approval.py::test_a_round_trip_approves_the_call_it_was_asked_for",
    "tests/mcp/http/fast_path/test_streams.py::test_the_official_client_gets_the_same_results",
    "tests/web/test_http.py::test_plugins_problems_and_tools",
    "tests/plugins/test_simple_tools.py::test_file_and_git_tools_through_harness_call",
    "tests/security/test_json_values.py::test_mcp_client_gets_an_error_not_a_broken_result",
]
"""Tests that failed in such a clone while the suite read its ``cordis.yml``."""


def environment(clone: Path) -> dict[str, str]:
    skip = ("HARNESS_", "PYTEST_", *PROVIDER_KEYS)
    env = {k: v for k, v in os.environ.items() if not k.startswith(skip)}
    env["PYTHONPATH"] = str(clone)
    env["OLLAMA_HOST"] = "127.0.0.1:9"  # no Ollama answers there
    return env


def agent_guide_entries() -> str:
    """The model and agent entries of docs/agent.md's first config, as written there."""
    text = (ROOT / "docs" / "agent.md").read_text()
    block = text[text.index("```yaml\n") + len("```yaml\n") :]
    block = block[: block.index("```")]
    return block[block.index("  - id: model") :]


def test_a_clone_with_the_readme_and_agent_guide_edits_still_passes(tmp_path: Path) -> None:
    clone = copy_of_checkout(tmp_path / "clone")
    shutil.copyfile(TEMPLATE, clone / "cordis.yml")  # what `make run` writes on first use
    env = environment(clone)
    harness = [sys.executable, "-m", "harness"]
    for entry in ("git", "assistant"):  # the README's step, and docs/agent.md's
        enabled = subprocess.run(
            [*harness, "enable", entry], cwd=clone, env=env, capture_output=True, text=True
        )
        assert enabled.returncode == 0, enabled.stderr
    with (clone / "cordis.yml").open("a") as config:  # and the agent guide's entries, copied
        config.write(
            agent_guide_entries()
            .replace("id: model", "id: my-model")
            .replace("id: agent", "id: my-agent")
        )
    check = subprocess.run(
        [*harness, "check"], cwd=clone, env=env, capture_output=True, text=True, timeout=120
    )
    assert check.returncode == 1  # the user's project now has problems: the suite must not care
    assert "entry 'model'" in check.stdout + check.stderr

    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", *NODES],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    assert " passed" in run.stdout.splitlines()[-1]
