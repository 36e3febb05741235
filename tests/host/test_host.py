"""Host: loading, status, problems, and reconciling by id through reload()."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import ConfigError, Host

from ..helpers import write

pytestmark = pytest.mark.anyio

LOGGED = """
from pathlib import Path

import pydantic

from harness import define_tool

inject = ["tools"]


class Config(pydantic.BaseModel):
    log: str
    label: str = "{name}"
    fail: bool = False


def note(path, text):
    with Path(path).open("a") as out:
        out.write(text + "\\n")


def apply(ctx, config):
    note(config.log, f"apply {name} {{config.label}}")
    if config.fail:
        raise RuntimeError("refusing to start")
    ctx.tools.register(
        define_tool(name="{name}", description="d", execute=lambda args: config.label)
    )
    return lambda: note(config.log, f"dispose {name} {{config.label}}")
"""


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return tmp_path / "log.txt"


def lines(log: Path) -> list[str]:
    text = log.read_text() if log.exists() else ""
    log.write_text("")
    return text.splitlines()


def config(tmp_path: Path, body: str) -> Path:
    for name in ("one", "two", "three"):
        write(tmp_path / "plugins" / f"{name}.py", LOGGED.format(name=name))
    return write(tmp_path / "cordis.yml", body)


async def call(host: Host, name: str) -> object:
    result = await host.tools.execute({"name": name})
    return result.result if result.ok else result.code


async def test_load_status_and_isolated_failure(tmp_path: Path, log: Path) -> None:
    path = config(
        tmp_path,
        f"""
        - {{ id: one, name: ./plugins/one.py, config: {{ log: {log} }} }}
        - {{ id: two, name: ./plugins/two.py, config: {{ log: {log}, fail: true }} }}
        - {{ id: three, name: ./plugins/three.py, config: {{ log: {log} }}, enabled: false }}
        - {{ id: lonely, name: ./plugins/one.py, inject: [nothing_provides_this],
             config: {{ log: {log} }} }}
        """,
    )
    async with Host(path) as host:
        states = {s.id: (s.state, s.tools) for s in host.status()}
        assert states == {
            "one": ("active", ("one",)),
            "two": ("failed", ()),
            "three": ("disabled", ()),
            "lonely": ("pending", ()),
        }
        two = next(s for s in host.status() if s.id == "two")
        assert two.error == (
            f"apply raised RuntimeError: refusing to start ({tmp_path / 'plugins' / 'two.py'}:24)"
        )
        problems = {p.entry: p for p in host.problems()}
        assert problems["two"].line == 2
        assert problems["lonely"].message == (
            "waiting for service(s) 'nothing_provides_this': no loaded plugin provides them "
            "(pending)"
        )
        assert await call(host, "one") == "one"


async def test_reload_adds_removes_enables_and_disables(tmp_path: Path, log: Path) -> None:
    one = f"- {{ id: one, name: ./plugins/one.py, config: {{ log: {log} }} }}\n"
    two = f"- {{ id: two, name: ./plugins/two.py, config: {{ log: {log} }} }}\n"
    path = config(tmp_path, one)
    async with Host(path) as host:
        assert host.tools.list() == ["one"]
        lines(log)
        path.write_text(one + two)
        await host.reload()
        assert host.tools.list() == ["one", "two"]
        assert lines(log) == ["apply two two"]  # one was not touched
        path.write_text(two)
        await host.reload()
        assert host.tools.list() == ["two"]
        assert lines(log) == ["dispose one one"]
        path.write_text(two.replace("} }", "}, enabled: false }"))
        await host.reload()
        assert host.tools.list() == []
        assert [s.state for s in host.status()] == ["disabled"]
        path.write_text(two)
        await host.reload()
        assert host.tools.list() == ["two"]


async def test_config_change_restarts_only_that_plugin(tmp_path: Path, log: Path) -> None:
    body = (
        f"- {{ id: one, name: ./plugins/one.py, config: {{ log: {log}, label: A }} }}\n"
        f"- {{ id: two, name: ./plugins/two.py, config: {{ log: {log} }} }}\n"
    )
    path = config(tmp_path, body)
    async with Host(path) as host:
        lines(log)
        path.write_text(body.replace("label: A", "label: B"))
        await host.reload()
        assert lines(log) == ["dispose one A", "apply one B"]
        assert await call(host, "one") == "B"


async def test_failing_config_change_rolls_back(tmp_path: Path, log: Path) -> None:
    body = f"- {{ id: one, name: ./plugins/one.py, config: {{ log: {log}, label: A }} }}\n"
    path = config(tmp_path, body)
    async with Host(path) as host:
        lines(log)
        path.write_text(body.replace("label: A", "label: B, fail: true"))
        await host.reload()
        assert lines(log) == ["dispose one A", "apply one B", "apply one A"]
        status = host.status()[0]
        assert (status.state, status.error) == (
            "active",
            f"apply raised RuntimeError: refusing to start ({tmp_path / 'plugins' / 'one.py'}:24)",
        )
        assert await call(host, "one") == "A"
        path.write_text(body.replace("label: A", "label: [not, a, string]"))
        await host.reload()
        status = host.status()[0]
        assert status.state == "active"
        assert status.error is not None
        assert status.error.startswith("invalid config for plugin 'one': label: ")
        assert [p.line for p in host.problems()] == [1]
        assert await call(host, "one") == "A"
        path.write_text(body)
        await host.reload()
        assert host.status()[0].error is None


async def test_name_change_imports_new_module_before_disposing_old(
    tmp_path: Path, log: Path
) -> None:
    body = f"- {{ id: x, name: ./plugins/one.py, config: {{ log: {log}, label: L }} }}\n"
    path = config(tmp_path, body)
    write(tmp_path / "plugins" / "broken.py", "raise ImportError('cannot import me')\n")
    async with Host(path) as host:
        lines(log)
        path.write_text(body.replace("one.py", "broken.py"))
        await host.reload()
        assert lines(log) == []  # the old one kept running
        status = host.status()[0]
        assert status.state == "active"
        assert status.error is not None
        assert "importing the plugin raised ImportError: cannot import me" in status.error
        assert await call(host, "one") == "L"
        path.write_text(body.replace("one.py", "two.py"))
        await host.reload()
        assert lines(log) == ["dispose one L", "apply two L"]
        assert host.tools.list() == ["two"]


async def test_unreadable_config_on_reload_raises_and_keeps_state(
    tmp_path: Path, log: Path
) -> None:
    body = f"- {{ id: one, name: ./plugins/one.py, config: {{ log: {log} }} }}\n"
    path = config(tmp_path, body)
    async with Host(path) as host:
        path.write_text("- { id: one, name: [broken\n")
        with pytest.raises(ConfigError, match="YAML syntax error"):
            await host.reload()
        assert host.tools.list() == ["one"]
        assert host.status()[0].state == "active"


async def test_configured_tools_service_replaces_the_implicit_one(tmp_path: Path) -> None:
    path = write(
        tmp_path / "cordis.yml", "- { id: tools, name: 'harness:tools', config: { timeout: 5 } }\n"
    )
    async with Host(path) as host:
        assert host.tools.config.timeout == 5
        path.write_text("[]\n")
        await host.reload()
        assert host.tools.config.timeout == 60


async def test_tools_keep_their_entrys_place_across_disable_enable_and_reload(
    tmp_path: Path, log: Path
) -> None:
    def body(enabled: str = "true", order: tuple[str, ...] = ("one", "group", "three")) -> str:
        items = {
            "one": f"- {{ id: one, name: ./plugins/one.py, config: {{ log: {log} }}, "
            f"enabled: {enabled} }}\n",
            "group": f"- id: group\n  insert:\n"
            f"    - {{ id: two, name: ./plugins/two.py, config: {{ log: {log} }} }}\n",
            "three": f"- {{ id: three, name: ./plugins/three.py, config: {{ log: {log} }} }}\n",
        }
        return "".join(items[key] for key in order)

    path = config(tmp_path, body())
    async with Host(path) as host:
        assert host.tools.list() == ["one", "two", "three"]
        path.write_text(body(enabled="false"))
        await host.reload()
        assert host.tools.list() == ["two", "three"]
        path.write_text(body())
        await host.reload()
        assert host.tools.list() == ["one", "two", "three"]
        assert [s["name"] for s in host.tools.schemas("mcp")] == ["one", "two", "three"]
        await host.reload_entries(["one"])  # a hot reload of one
        assert host.tools.list() == ["one", "two", "three"]
        path.write_text(body(order=("three", "one", "group")))  # the file decides
        await host.reload()
        assert host.tools.list() == ["three", "one", "two"]


async def test_problems_of_a_group_entry_are_reported(tmp_path: Path, log: Path) -> None:
    path = config(
        tmp_path,
        f"""
        - id: group
          name: ./plugins/one.py
          config: {{ log: {log} }}
          colour: red
          insert:
            - {{ id: two, name: ./plugins/two.py, config: {{ log: {log} }} }}
        """,
    )
    async with Host(path) as host:
        assert [str(problem) for problem in host.problems()] == [
            f"{path}:4: entry 'group': unknown key 'colour'; an entry takes id, name, enabled, "
            "disabled, config, inject, insert",
            f"{path}:2: entry 'group': a group (an entry with 'insert') takes no 'name'",
            f"{path}:3: entry 'group': a group (an entry with 'insert') takes no 'config'",
        ]
        assert host.tools.list() == ["two"]  # the children still load
