"""libyaml's loader and the pure-Python one read cordis.yml the same: values, lines, errors,
and every bound on hostile input (alias bombs, deep nesting, bad characters)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from harness import ConfigError
from harness.loader import source
from harness.loader.bounds import MAX_NODES, clean
from harness.loader.source import Refused, load_yaml, load_yaml_text

from ..security.test_config_input import BOMB, CASES

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
    if isinstance(value, Refused):
        return ("refused", value.line, value.message)
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
    fast = load_yaml_text(SAMPLE, Path("cordis.yml"), pure=False)
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


def refusals(value: Any) -> list[tuple[int, str]]:
    """Every Refused inside ``value``, as (line, message)."""
    if isinstance(value, Refused):
        return [(value.line, value.message)]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return [found for item in items for found in refusals(item)]


YAML_CASES = {
    name: content
    for name, (content, _, _) in CASES.items()
    if name.startswith(("alias", "contr", "inv", "deep"))
}
YAML_CASES["deep block nesting"] = b"- id: bad\n  config:\n    " + b"- " * 50_000 + b"x\n"
YAML_CASES["a bomb over the budget at the top"] = ("top:\n" + BOMB).encode()


@pytest.mark.parametrize("case", sorted(YAML_CASES))
def test_hostile_yaml_is_refused_the_same_by_both_parsers(tmp_path: Path, case: str) -> None:
    path = tmp_path / "cordis.yml"
    path.write_bytes(YAML_CASES[case])
    results: list[tuple[Any, ...]] = []
    for pure in (False, True):
        notes: list[Any] = []
        try:
            data = load_yaml(path, notes, pure=pure)
        except ConfigError as exc:
            results.append(("error", [str(problem) for problem in exc.problems]))
            continue
        results.append(("loaded", lines(data), [str(note) for note in notes]))
    assert results[0] == results[1]
    assert results[0][0] == "loaded"


def test_every_hostile_case_is_refused_at_its_line_by_libyaml(tmp_path: Path) -> None:
    for name, (content, line, shown) in CASES.items():
        if name not in YAML_CASES:
            continue
        path = tmp_path / "cordis.yml"
        path.write_bytes(content)
        notes: list[Any] = []
        found = refusals(load_yaml(path, notes, pure=False)) + [
            (note.line, note.message) for note in notes
        ]
        assert found, name
        assert found[0][0] == line, name
        assert shown in found[0][1], name


def test_deep_block_nesting_is_refused_without_recursing_in_c() -> None:
    # libyaml's composer recurses in C once per level; 50 000 levels would overflow the C
    # stack, so text past a bound never reaches it
    text = "a:\n  " + "- " * 50_000 + "x\n"
    data = load_yaml_text(text, Path("cordis.yml"), pure=False)
    assert refusals(data) == [(2, "nested deeper than 64 levels; flatten this value")]


def test_libyaml_composes_only_text_within_every_bound() -> None:
    within = "insert:\n" + "".join(f"  - {{ id: p{i}, name: ./p{i}.py }}\n" for i in range(50))
    assert isinstance(source._loader_for(within, pure=False), source._FastLoader)
    too_deep = "a: " + "[" * 70 + "]" * 70 + "\n"
    bomb = "top:\n" + BOMB
    assert MAX_NODES < 10**9  # the bomb expands to 10**9 values
    for text in (too_deep, bomb):
        loader = source._loader_for(clean(text, {}), pure=False)
        assert not isinstance(loader, source._FastLoader)
    assert not isinstance(source._loader_for(within, pure=True), source._FastLoader)
