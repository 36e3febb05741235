"""The policy plugin: allow, deny and ask rules, glob precedence, and the CLI's approvals."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from harness import Host

from .conftest import ALL_ON, ROOT, SET_ALL_ON, run

HARNESS = str(Path(sys.executable).parent / "harness")


def policy_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "policy_under_test", ROOT / "plugins" / "policy.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # pydantic resolves the annotations through it
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("rules", "tool", "expected"),
    [
        ({}, "anything", ("allow", None)),
        ({"write_*": "ask"}, "write_text_file", ("ask", "write_*")),
        (
            {"write_*": "ask", "write_text_file": "deny"},
            "write_text_file",
            ("deny", "write_text_file"),
        ),
        (
            {"write_text_file": "deny", "write_*": "ask"},
            "write_text_file",
            ("deny", "write_text_file"),
        ),
        ({"*": "deny", "git_*": "allow"}, "git_diff", ("allow", "git_*")),
        ({"git_*": "allow", "git_d*": "ask"}, "git_diff", ("ask", "git_d*")),
        ({"g?t_*": "deny", "git_*": "ask"}, "git_log_reader", ("ask", "git_*")),
        ({"git_*": "deny", "gi?_*": "ask"}, "git_diff", ("deny", "git_*")),
        ({"*_file": "ask", "read_*": "allow"}, "read_text_file", ("allow", "read_*")),
    ],
)
def test_most_specific_rule_wins(rules: dict[str, str], tool: str, expected: Any) -> None:
    module = policy_module()
    assert module.decide(module.Config(rules=rules), tool) == expected


def test_ties_go_to_the_rule_written_last() -> None:
    module = policy_module()
    config = module.Config(rules={"ab*": "deny", "a*c": "ask"})
    assert module.decide(config, "abc") == ("ask", "a*c")


def test_bad_decision_is_a_config_error() -> None:
    module = policy_module()
    with pytest.raises(ValueError, match="Input should be 'allow', 'deny' or 'ask'"):
        module.Config(rules={"x": "maybe"})


@pytest.mark.anyio
async def test_rules_through_the_pipeline(config: Path, workspace: Path) -> None:
    async with Host(
        config,
        overrides=[
            *ALL_ON,
            "policy.config.rules={write_text_file: ask, 'gre*': deny, echo: allow}",
            "policy.config.default=allow",
        ],
    ) as host:
        denied = await run(host, "greet", {"name": "x"})
        assert denied.code == "denied"
        assert denied.error == "Tool denied: the policy forbids greet (rule 'gre*')"
        asked = await run(host, "write_text_file", {"path": "a.txt", "content": "x"})
        assert asked.code == "denied"
        assert "nobody can answer its approval" in (asked.error or "")
        assert not (workspace / "a.txt").exists()
        assert (await run(host, "echo", {"text": "x"})).ok


def call_cli(config: Path, workspace: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            HARNESS,
            "-c",
            str(config),
            *SET_ALL_ON,
            "call",
            "write_text_file",
            '{"path": "w.txt", "content": "hello"}',
            "--json",
            *extra,
        ],
        cwd=config.parent,
        capture_output=True,
        text=True,
        check=False,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "HARNESS_WORKSPACE": str(workspace)},
    )


def test_harness_call_yes_approves_and_no_terminal_refuses(config: Path, workspace: Path) -> None:
    refused = call_cli(config, workspace)
    assert refused.returncode == 1
    assert json.loads(refused.stdout)["code"] == "denied"
    assert "pass --yes" in refused.stderr
    assert not (workspace / "w.txt").exists()
    approved = call_cli(config, workspace, "--yes")
    assert approved.returncode == 0, approved.stderr
    assert json.loads(approved.stdout)["result"]["ok"] is True
    assert (workspace / "w.txt").read_text() == "hello"
