"""allow_always's edit of cordis.yml: every shape of policy entry, comments kept."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from harness.agent.always import allow_tool
from harness.errors import ConfigError

CASES = {
    "block rules": (
        "insert:\n  - id: policy   # the policy\n    name: ./policy.py\n    config:\n"
        '      rules:\n        "write_*": ask   # writes ask\n        dangerous: deny\n'
        "  - id: echo\n    name: ./echo.py\n",
        "        dangerous: deny\n        write_text_file: allow\n  - id: echo\n",
    ),
    "flow rules": (
        "- id: policy\n  name: ./policy.py\n  config:\n"
        '    rules: { "write_*": ask, dangerous: deny }  # keep me\n',
        'rules: { "write_*": ask, dangerous: deny, write_text_file: allow }  # keep me\n',
    ),
    "no config": (
        "insert:\n  - id: policy\n    name: ./policy.py\n  # trailing comment\n"
        "  - id: echo\n    name: ./echo.py\n",
        "    name: ./policy.py\n    config: {rules: {write_text_file: allow}}\n"
        "  # trailing comment\n",
    ),
    "flow entry": (
        "insert:\n  - { id: policy, name: ./policy.py }\n",
        "{ id: policy, name: ./policy.py, config: {rules: {write_text_file: allow}} }",
    ),
    "no rules": (
        "- id: policy\n  name: ./policy.py\n  config:\n    default: ask\n",
        "    default: ask\n    rules: {write_text_file: allow}\n",
    ),
    "existing rule": (
        "- id: policy\n  name: ./policy.py\n  config: {rules: {write_text_file: ask}}\n",
        "config: {rules: {write_text_file: allow}}\n",
    ),
    "empty rules": (
        "- id: policy\n  name: ./policy.py\n  config:\n    rules: {}\n",
        "    rules: {write_text_file: allow}\n",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_rule_is_added_in_the_file_s_own_style(tmp_path: Path, case: str) -> None:
    before, expected = CASES[case]
    path = tmp_path / "cordis.yml"
    path.write_text(before)
    allow_tool(path, "policy", "write_text_file")
    after = path.read_text()
    assert expected in after
    for line in before.splitlines():
        if "#" in line:
            assert line.split("#", 1)[1] in after  # comments kept
    data = yaml.safe_load(after)
    entries = data["insert"] if isinstance(data, dict) else data
    policy = next(item for item in entries if item["id"] == "policy")
    assert policy["config"]["rules"]["write_text_file"] == "allow"


def test_odd_tool_names_are_quoted(tmp_path: Path) -> None:
    path = tmp_path / "cordis.yml"
    path.write_text("- id: policy\n  name: ./policy.py\n  config:\n    rules: {}\n")
    allow_tool(path, "policy", "yes")
    allow_tool(path, "policy", "a: b")
    rules = yaml.safe_load(path.read_text())[0]["config"]["rules"]
    assert rules == {"yes": "allow", "a: b": "allow"}


def test_no_policy_entry_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "cordis.yml"
    path.write_text("- id: echo\n  name: ./echo.py\n")
    with pytest.raises(ConfigError, match="no entry has id 'policy'"):
        allow_tool(path, "policy", "echo")
    assert path.read_text() == "- id: echo\n  name: ./echo.py\n"
