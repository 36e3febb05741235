"""Every third-party module harness imports comes from a distribution pyproject.toml declares
(a dependency, or an extra for what is imported only when that extra's feature is used),
never one that happens to be installed because something else needs it."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib

from ..helpers import ROOT


def declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        requirements.extend(extra)
    return {
        normal(re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0])
        for requirement in requirements
    }


def normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def imported() -> dict[str, str]:
    """Top-level third-party module → a file of harness that imports it."""
    found: dict[str, str] = {}
    for path in sorted((ROOT / "harness").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top != "harness" and top not in sys.stdlib_module_names:
                    found.setdefault(top, str(path.relative_to(ROOT)))
    return found


CARRIED = {
    "mcp-types": "mcp",
    "pydantic-core": "pydantic",
    "referencing": "jsonschema",
    "pydantic-monty-client": "pydantic-monty",
}
"""Distributions a declared one pins as its own part (the SDK's types, pydantic's core): what
the carrier requires is what harness gets, so declaring them again could only conflict."""


def test_carried_distributions_are_required_by_their_carrier() -> None:
    for carried, carrier in CARRIED.items():
        required = {
            normal(re.split(r"[\s<>=!~;\[]", r, maxsplit=1)[0])
            for r in importlib.metadata.requires(carrier) or []
        }
        assert carried in required, f"{carrier} no longer requires {carried}: declare it"


def test_every_imported_distribution_is_declared() -> None:
    distributions = importlib.metadata.packages_distributions()
    wanted = declared() | set(CARRIED)
    missing = {
        module: (where, distributions.get(module))
        for module, where in imported().items()
        if module in distributions
        and not any(normal(dist) in wanted for dist in distributions[module])
    }
    assert missing == {}
