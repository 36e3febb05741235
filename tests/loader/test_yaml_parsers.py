"""libyaml's loader and the pure-Python one read cordis.yml the same: values, lines, errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from harness import ConfigError
from harness.loader.source import load_yaml_text

SAMPLE = """\
# a comment
base: &base
  timeout: 5
insert:
  - id: one
    name: ./one.py
    config:
      <<: *base
      items: [1, 2, 3]
  - id: two
    name: ./two.py
    config: {flag: true, text: "é"}
"""


def lines(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            "line": value.line,  # type: ignore[attr-defined]
            "keys": dict(value.lines),  # type: ignore[attr-defined]
            "items": {key: lines(item) for key, item in value.items()},
        }
    if isinstance(value, list):
        return {
            "line": value.line,  # type: ignore[attr-defined]
            "lines": list(value.lines),  # type: ignore[attr-defined]
            "items": [lines(item) for item in value],
        }
    return value


def test_libyaml_is_used_here() -> None:
    assert yaml.__with_libyaml__, "PyYAML without libyaml: install python3-yaml's libyaml build"


def test_both_parsers_give_the_same_values_and_lines() -> None:
    fast = load_yaml_text(SAMPLE, Path("cordis.yml"))
    pure = load_yaml_text(SAMPLE, Path("cordis.yml"), pure=True)
    assert fast == pure
    assert lines(fast) == lines(pure)
    assert fast["insert"][1].line_of("config") == 12
    assert fast["insert"][0]["config"]["timeout"] == 5


@pytest.mark.parametrize(
    "text",
    [
        "insert:\n  - id: one\n    id: two\n",  # a duplicate key
        "insert:\n  - id: [unclosed\n",  # a syntax error
        "a: 1\n b: 2\n",  # bad indentation
    ],
)
def test_both_parsers_report_the_error_at_the_same_place(text: str) -> None:
    # libyaml words some syntax errors differently; the place and the kind are the same.
    places = []
    for pure in (False, True):
        with pytest.raises(ConfigError) as caught:
            load_yaml_text(text, Path("cordis.yml"), pure=pure)
        where, _, message = str(caught.value).partition(": ")
        places.append((where, message.split(":")[0]))
    assert places[0] == places[1]
    assert places[0][0].startswith("cordis.yml:")
