"""Plugin Config validation before apply, and fiber.update."""

from __future__ import annotations

from typing import Any

import pydantic
import pytest

from harness import ConfigError, Context, FiberState
from harness.errors import PluginError
from harness.plugin import check_plugin, spec_of

pytestmark = pytest.mark.anyio


class Item(pydantic.BaseModel):
    x: int


class Settings(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")
    prefix: str = ">"
    count: int = 1
    items: list[Item] = []


def configured(ctx: Context, config: Settings) -> None:
    ctx.effect(lambda: None)


configured.Config = Settings  # type: ignore[attr-defined]


async def test_pydantic_config_is_validated_and_passed_as_model() -> None:
    seen: list[Any] = []

    def plugin(ctx: Context, config: Settings) -> None:
        seen.append(config)

    plugin.Config = Settings  # type: ignore[attr-defined]
    async with Context() as root:
        fiber = await root.plugin(plugin, {"prefix": "$"})
        assert fiber.config == Settings(prefix="$")
        await root.plugin(plugin)
    assert seen == [Settings(prefix="$"), Settings()]


async def test_config_errors_list_every_issue_with_its_path() -> None:
    async with Context() as root:
        fiber = root.plugin(
            configured, {"prefix": 5, "count": "many", "items": [{"x": 1}, {"x": "y"}], "extra": 1}
        )
        assert fiber.state is FiberState.FAILED
        with pytest.raises(ConfigError) as caught:
            await fiber
    assert caught.value.issues == (
        "prefix: Input should be a valid string",
        "count: Input should be a valid integer, unable to parse string as an integer",
        "items[1].x: Input should be a valid integer, unable to parse string as an integer",
        "extra: Extra inputs are not permitted",
    )
    assert str(caught.value).startswith("invalid config for plugin 'configured': prefix: ")


async def test_callable_config_validator() -> None:
    def positive(raw: Any) -> int:
        if not isinstance(raw, int) or raw <= 0:
            raise ValueError(f"expected a positive integer, got {raw!r}")
        return raw

    seen: list[int] = []

    def plugin(ctx: Context, config: int) -> None:
        seen.append(config)

    plugin.Config = positive  # type: ignore[attr-defined]
    async with Context() as root:
        await root.plugin(plugin, 3)
        with pytest.raises(ConfigError, match="expected a positive integer, got -1"):
            await root.plugin(plugin, -1)
    assert seen == [3]


async def test_update_revalidates_and_restarts() -> None:
    seen: list[str] = []

    def plugin(ctx: Context, config: Settings) -> Any:
        seen.append(f"apply {config.prefix}")
        return lambda: seen.append(f"dispose {config.prefix}")

    plugin.Config = Settings  # type: ignore[attr-defined]
    async with Context() as root:
        fiber = await root.plugin(plugin, {"prefix": "a"})
        assert await fiber.update({"prefix": "b"}) is fiber
        assert seen == ["apply a", "dispose a", "apply b"]
        assert fiber.config.prefix == "b"


async def test_invalid_update_raises_and_keeps_old_config_running() -> None:
    seen: list[str] = []

    def plugin(ctx: Context, config: Settings) -> None:
        seen.append(config.prefix)

    plugin.Config = Settings  # type: ignore[attr-defined]
    async with Context() as root:
        fiber = await root.plugin(plugin, {"prefix": "a"})
        with pytest.raises(ConfigError, match="prefix: Input should be a valid string"):
            await fiber.update({"prefix": 1})
        assert fiber.state is FiberState.ACTIVE
        assert fiber.config.prefix == "a"
    assert seen == ["a"]


def _no_args() -> None:
    return None


class _Needs:
    inject = 5

    def apply(self, ctx: Context) -> None:
        return None


@pytest.mark.parametrize(
    "plugin",
    [object(), 3, _no_args, _Needs(), type("Broken", (), {"__init__": lambda self: None})],
)
def test_check_plugin_refuses_what_spec_of_refuses_in_the_same_words(plugin: Any) -> None:
    with pytest.raises(PluginError) as expected:
        spec_of(plugin)
    with pytest.raises(PluginError) as checked:
        check_plugin(plugin)
    assert str(checked.value) == str(expected.value)


class _Fine:
    def __init__(self, ctx: Context, config: Any) -> None:
        self.ctx = ctx


def test_check_plugin_passes_what_spec_of_reads() -> None:
    for plugin in (configured, _Fine, _Needs.apply):
        check_plugin(plugin)
        assert spec_of(plugin).plugin is plugin
