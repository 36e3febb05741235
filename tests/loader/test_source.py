"""YAML reading keeps lines, refuses duplicate keys, and locates syntax errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import ConfigError
from harness.loader.source import LocatedDict, load_yaml, load_yaml_text


def test_lines_of_mappings_keys_and_items() -> None:
    data = load_yaml_text(
        "insert:\n  - id: a\n    name: x\n\n  - { id: b, name: y }\n", Path("c.yml")
    )
    assert isinstance(data, LocatedDict)
    assert data.line_of("insert") == 1
    items = data["insert"]
    assert items.lines == [2, 5]
    assert items[0].line_of("name") == 3
    assert items[1].line_of("name") == 5


def test_duplicate_key_is_an_error_with_its_line() -> None:
    with pytest.raises(ConfigError) as caught:
        load_yaml_text("a: 1\nb: 2\na: 3\n", Path("c.yml"))
    assert str(caught.value) == "c.yml:3: duplicate key 'a'"
    assert caught.value.problems[0].line == 3


def test_syntax_error_reports_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "cordis.yml"
    path.write_text("insert:\n  - id: a\n    name: [unclosed\n  - id: b\n")
    with pytest.raises(ConfigError) as caught:
        load_yaml(path)
    problem = caught.value.problems[0]
    assert problem.file == str(path)
    assert problem.line == 4
    assert problem.message.startswith("YAML syntax error: ")
    assert problem.message.endswith("(line 4, column 7)")


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config file not found: "):
        load_yaml(tmp_path / "nope.yml")
