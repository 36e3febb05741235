"""The stable surface: everything in __all__ exists, and the error tree is rooted."""

from __future__ import annotations

import importlib
import inspect

import pytest

import harness
from harness import errors


def test_all_names_exist_and_nothing_public_is_missing() -> None:
    for name in harness.__all__:
        assert hasattr(harness, name), name
    public = {
        name
        for name, value in vars(harness).items()
        if not name.startswith("_") and not inspect.ismodule(value)
    }
    assert public == set(harness.__all__)


@pytest.mark.parametrize(
    "package",
    ["harness", "harness.agent", "harness.cli", "harness.mcp", "harness.testing", "harness.tools"],
)
def test_every_name_a_package_exports_imports(package: str) -> None:
    """A lazy re-export names its home module by string: a renamed module must not leave one
    pointing nowhere."""
    module = importlib.import_module(package)
    for name in module.__all__:
        assert getattr(module, name) is not None, f"{package}.{name}"


def test_every_error_derives_from_harness_error() -> None:
    classes = [
        value
        for value in vars(errors).values()
        if inspect.isclass(value) and issubclass(value, Exception)
    ]
    assert len(classes) >= 8
    for cls in classes:
        assert issubclass(cls, harness.HarnessError)
        assert cls.__doc__
        assert cls.__doc__.startswith("Raised ")
