"""read_config: entries, groups, switches, env, patches and --set, each problem located."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import ConfigError
from harness.loader.config import Plan, read_config

from ..helpers import write


def plans(path: Path, **kwargs: object) -> dict[str, Plan]:
    return {plan.id: plan for plan in read_config(path, **kwargs).plans}  # type: ignore[arg-type]


def test_insert_mapping_and_plain_list_shapes(tmp_path: Path) -> None:
    a = write(tmp_path / "a.yml", "insert:\n  - { id: x, name: ./x.py }\n")
    b = write(tmp_path / "b.yml", "- { id: x, name: ./x.py }\n")
    assert list(plans(a)) == list(plans(b)) == ["x"]
    assert plans(write(tmp_path / "empty.yml", "")) == {}


def test_groups_cascade_their_switch(tmp_path: Path) -> None:
    path = write(
        tmp_path / "cordis.yml",
        """
        insert:
          - id: outer
            enabled: false
            insert:
              - { id: child, name: ./c.py }
              - id: inner
                insert:
                  - { id: deep, name: ./d.py, enabled: true }
          - id: live
            insert:
              - { id: kept, name: ./k.py }
              - { id: off_child, name: ./o.py, disabled: true }
        """,
    )
    found = plans(path)
    assert [(i, p.enabled, p.group) for i, p in found.items()] == [
        ("outer", False, None),
        ("child", False, "outer"),
        ("inner", False, "outer"),
        ("deep", False, "inner"),
        ("live", True, None),
        ("kept", True, "live"),
        ("off_child", False, "live"),
    ]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("yes", True), ("OFF", False), ("1", True), ("False", False), ("${FLAG:-on}", True)],
)
def test_enabled_strings(tmp_path: Path, raw: str, expected: bool) -> None:
    path = write(tmp_path / "c.yml", f"- {{ id: x, name: ./x.py, enabled: '{raw}' }}\n")
    plan = plans(path)["x"]
    assert plan.errors == []
    assert plan.enabled is expected


def test_bad_enabled_string_is_an_entry_error(tmp_path: Path) -> None:
    path = write(tmp_path / "c.yml", "- id: x\n  name: ./x.py\n  enabled: maybe\n")
    plan = plans(path)["x"]
    assert [str(e) for e in plan.errors] == [
        f"{path}:3: entry 'x': 'enabled' must be true or false (or yes/no/on/off/1/0), got 'maybe'"
    ]


@pytest.mark.parametrize(
    ("line", "overrides", "expected"),
    [
        ("disabled: 'yes'", [], False),
        ("disabled: '${FLAG:-off}'", [], True),
        ("disabled: true", ["x.enabled=true"], True),
        ("enabled: true", ["x.disabled=on"], False),
    ],
)
def test_disabled_is_the_negated_switch(
    tmp_path: Path, line: str, overrides: list[str], expected: bool
) -> None:
    path = write(tmp_path / "c.yml", f"- id: x\n  name: ./x.py\n  {line}\n")
    plan = plans(path, overrides=overrides)["x"]
    assert plan.errors == []
    assert plan.enabled is expected


def test_bad_disabled_string_names_the_disabled_key(tmp_path: Path) -> None:
    path = write(tmp_path / "c.yml", "- id: x\n  name: ./x.py\n  disabled: perhaps\n")
    assert [str(e) for e in plans(path)["x"].errors] == [
        f"{path}:3: entry 'x': 'disabled' must be true or false (or yes/no/on/off/1/0), "
        "got 'perhaps'"
    ]


def test_an_invalid_name_is_reported_once(tmp_path: Path) -> None:
    path = write(tmp_path / "c.yml", "- { id: x, name: 5 }\n")
    assert [e.message for e in plans(path)["x"].errors] == ["'name' must be a non-empty string"]


def test_unknown_keys_duplicate_ids_and_missing_names(tmp_path: Path) -> None:
    path = write(
        tmp_path / "c.yml",
        """
        insert:
          - id: a
            name: ./a.py
            confg: {}
          - id: a
            name: ./other.py
          - id: nameless
          - name: ./no-id.py
        """,
    )
    loaded = read_config(path)
    by_id = {plan.id: plan for plan in loaded.plans}
    assert [str(p) for p in by_id["a"].errors] == [
        f"{path}:4: entry 'a': unknown key 'confg' (did you mean 'config'?); an entry takes "
        "id, name, enabled, disabled, config, inject, insert"
    ]
    assert [str(p) for p in by_id["nameless"].errors] == [
        f"{path}:7: entry 'nameless': an entry needs a 'name' (a path, harness:<builtin>, "
        "or a module)"
    ]
    assert [str(p) for p in loaded.problems] == [
        f"{path}:5: entry 'a': duplicate id 'a' (first declared at {path}:2); ids must be unique",
        f"{path}:8: an entry needs an 'id' (a non-empty string)",
    ]


def test_env_interpolation_escape_and_dotenv(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REAL", "from-env")
    monkeypatch.setenv("BOTH", "env-wins")
    monkeypatch.delenv("ONLY_DOTENV", raising=False)
    write(tmp_path / ".env", "ONLY_DOTENV=from-dotenv\nBOTH=dotenv-loses\n")
    path = write(
        tmp_path / "cordis.yml",
        """
        - id: x
          name: ./x.py
          config:
            a: ${REAL}
            b: ${ONLY_DOTENV}
            c: ${BOTH}
            d: ${UNSET_HERE:-fallback}
            e: literal $${NOT_A_VAR}
            f: [ "${REAL}-1", 2 ]
        """,
    )
    loaded = read_config(path)
    assert loaded.plans[0].config == {
        "a": "from-env",
        "b": "from-dotenv",
        "c": "env-wins",
        "d": "fallback",
        "e": "literal ${NOT_A_VAR}",
        "f": ["from-env-1", 2],
    }
    assert tmp_path / ".env" in loaded.files


def test_unset_variable_names_it_entry_and_line(tmp_path: Path) -> None:
    path = write(
        tmp_path / "cordis.yml",
        "- id: x\n  name: ./x.py\n  config:\n    root: ./w\n    key: ${MISSING_KEY_VAR}\n",
    )
    plan = plans(path)["x"]
    assert [str(p) for p in plan.errors] == [
        f"{path}:5: entry 'x': environment variable 'MISSING_KEY_VAR' is not set; set it, add "
        "it to .env, or give a default with ${MISSING_KEY_VAR:-value}"
    ]


def test_patches_override_append_and_resolve_names_in_their_folder(tmp_path: Path) -> None:
    base = write(
        tmp_path / "cordis.yml",
        """
        insert:
          - id: a
            name: ./a.py
            config: { x: 1, y: 2 }
          - id: b
            name: ./b.py
        """,
    )
    first = write(
        tmp_path / "patches" / "one.yml",
        """
        - id: a
          config: { x: 10 }
        - id: c
          name: ./c.py
        """,
    )
    second = write(tmp_path / "two.yml", "- { id: b, enabled: false }\n- { id: a, name: ./z.py }\n")
    found = plans(base, patches=[first, second])
    assert list(found) == ["a", "b", "c"]
    assert found["a"].config == {"x": 10}  # config is replaced whole
    assert found["a"].name == "./z.py"
    assert found["a"].base == tmp_path  # declared by two.yml
    assert found["b"].enabled is False
    assert found["c"].base == tmp_path / "patches"


def test_patch_for_unknown_id_without_name_is_fatal_unless_lenient(tmp_path: Path) -> None:
    base = write(tmp_path / "cordis.yml", "- { id: a, name: ./a.py }\n")
    patch = write(tmp_path / "p.yml", "- id: ghost\n  enabled: false\n")
    with pytest.raises(ConfigError) as caught:
        read_config(base, patches=[patch])
    assert str(caught.value) == (
        f"{patch}:1: entry 'ghost': patch overrides unknown id 'ghost' and gives no 'name' "
        "to add it; check the id, or add a name"
    )
    lenient = read_config(base, patches=[patch], lenient=True)
    assert [p.entry for p in lenient.problems] == ["ghost"]
    assert [plan.id for plan in lenient.plans] == ["a"]


def test_set_overrides(tmp_path: Path) -> None:
    base = write(
        tmp_path / "cordis.yml",
        "- { id: a, name: ./a.py, config: { keep: 1, deep: { x: 1 } } }\n"
        "- { id: b, name: ./b.py }\n",
    )
    found = plans(
        base,
        overrides=[
            "a.root=/tmp/w",
            "a.config.deep.y=2",
            "a.count=3",
            "b.enabled=false",
        ],
    )
    assert found["a"].config == {"keep": 1, "deep": {"x": 1, "y": 2}, "root": "/tmp/w", "count": 3}
    assert found["b"].enabled is False
    with pytest.raises(ConfigError, match=r"--set 'nope.enabled=false': no entry has id 'nope'"):
        read_config(base, overrides=["nope.enabled=false"])
    with pytest.raises(ConfigError, match=r"expected ID\.KEY=VALUE"):
        read_config(base, overrides=["a.enabled"])
