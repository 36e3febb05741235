"""A broken entry costs each command one line, in harness's own words (issue 29, items 19 and
23e): ``check`` prints each problem once (not also as a log record and in the table),
``call`` and ``tools`` say which entries failed in one line each on stderr (so ``--json``
stays valid JSON) and still exit 0, ``plugins`` shows it in its table alone. A model entry
whose ``api_key`` is missing is the case people meet first. The real ``harness`` each time.
"""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.cli.logs import configure_logging, failures_reported
from harness.host import Host

from ..helpers import HARNESS, project_copy, run_harness, write

NO_KEYS = {"OPENAI_API_KEY": "", "COLUMNS": "400"}  # a wide table: no text is folded
KEY_PROBLEM = (
    "invalid config for plugin 'model': api_key is empty, and https://api.openai.com/v1 is "
    "not a local server; set api_key (for instance api_key: ${OPENAI_API_KEY}) and export "
    "the key"
)


def with_model_on(folder: Path) -> Path:
    """The starter project with its assistant group (the model and the agent) switched on."""
    config = project_copy(folder)
    text = config.read_text()
    config.write_text(
        text.replace("  - id: assistant\n    enabled: false\n", "  - id: assistant\n")
    )
    return config


def model_problem(config: Path) -> str:
    """The model entry's problem, as harness words it: at its ``config:`` line."""
    lines = config.read_text().splitlines()
    line = next(n for n, text in enumerate(lines, 1) if "name: harness:openai" in text) + 1
    return f"{config}:{line}: entry 'model': {KEY_PROBLEM}"


def harness(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = run_harness(*args, cwd=folder, env=NO_KEYS)
    assert "Traceback" not in done.stdout + done.stderr
    assert "Value error" not in done.stdout + done.stderr  # pydantic's words, not ours
    return done


def test_check_prints_the_broken_model_entry_once(tmp_path: Path) -> None:
    config = with_model_on(tmp_path)
    done = harness(tmp_path, "check")
    assert done.returncode == 1
    assert (done.stdout + done.stderr).count("api_key is empty") == 1
    assert f"problem: {model_problem(config)}" in done.stderr.splitlines()
    [row] = [line for line in done.stdout.splitlines() if "harness:openai" in line]
    assert [cell.strip() for cell in row.split("│")[1:-1]] == ["model", "harness:openai", "failed"]
    report = json.loads(harness(tmp_path, "check", "--json").stdout)
    assert report["problems"][0]["message"] == KEY_PROBLEM


def test_call_and_tools_say_it_in_one_line_and_exit_0(tmp_path: Path) -> None:
    config = with_model_on(tmp_path)
    line = f"failed: {model_problem(config)}"
    added = harness(tmp_path, "call", "add", '{"a": 1, "b": 2}')
    assert (added.returncode, added.stdout, added.stderr.splitlines()) == (0, "3\n", [line])
    listed = harness(tmp_path, "tools")
    assert (listed.returncode, listed.stderr.splitlines()) == (0, [line])
    assert "│ add " in listed.stdout
    schemas = harness(tmp_path, "tools", "--json")
    assert (schemas.returncode, schemas.stderr.splitlines()) == (0, [line])
    assert "add" in [schema["function"]["name"] for schema in json.loads(schemas.stdout)]


def test_plugins_shows_it_in_the_table_alone(tmp_path: Path) -> None:
    with_model_on(tmp_path)
    done = harness(tmp_path, "plugins")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.count("api_key is empty") == 1
    assert "│ failed   │ invalid config for plugin 'model': api_key is empty" in done.stdout


def test_chat_names_it_once(tmp_path: Path) -> None:
    config = with_model_on(tmp_path)
    done = harness(tmp_path, "chat", "--no-watch", "-m", "hello")
    assert done.returncode == 1
    assert done.stderr.count("api_key is empty") == 1
    assert done.stderr.startswith(
        "ChatError: the model entry 'model' failed, so the agent 'agent' waits for it: "
        + model_problem(config)
    )


def test_a_failed_mount_is_one_line_of_tools_and_the_json_stays_valid(tmp_path: Path) -> None:
    config = project_copy(tmp_path)
    with config.open("a") as file:
        file.write(
            "  - id: upstream\n"
            "    name: harness:mcp-client\n"
            f"    config: {{command: {sys.executable}, args: [-c, 'raise SystemExit(3)']}}\n"
        )
    listed = harness(tmp_path, "tools", "--json")
    assert listed.returncode == 0  # DESIGN §6: broken entries do not change tools' exit code
    assert "echo" in [schema["function"]["name"] for schema in json.loads(listed.stdout)]
    [line] = listed.stderr.splitlines()
    assert line.startswith(f"failed: {config}:")
    assert ": entry 'upstream': " in line
    table = harness(tmp_path, "tools")
    assert (table.returncode, table.stderr) == (0, listed.stderr)


def test_harness_mcp_reports_it_once(tmp_path: Path) -> None:
    config = with_model_on(tmp_path)
    done = subprocess.run(  # stdin at its end: the MCP client has gone, the server stops
        [HARNESS, "mcp"],
        cwd=tmp_path,
        env={**{k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}, **NO_KEYS},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.stderr.count("api_key is empty") == 1, done.stderr
    assert f"problem: {model_problem(config)}" in done.stderr.splitlines()


@pytest.fixture
def cli_log(monkeypatch: pytest.MonkeyPatch) -> Iterator[io.StringIO]:
    """The command line's logging, set up as a command does, written here; the test
    process's put back after."""
    logger = logging.getLogger("harness")
    saved = (logger.handlers[:], logger.level, logger.propagate)
    written = io.StringIO()
    monkeypatch.setattr(sys, "stderr", written)
    configure_logging(debug=False)
    try:
        yield written
    finally:
        logger.handlers[:], logger.level, logger.propagate = saved


@pytest.mark.anyio
async def test_a_failure_after_the_first_load_is_logged_as_it_happens(
    tmp_path: Path, cli_log: io.StringIO
) -> None:
    """The commands report the first load's failures themselves; a later one (a lost MCP
    server while ``run`` serves, say) has no report but its log record, which stays."""
    write(
        tmp_path / "flaky.py",
        "from pathlib import Path\n\n"
        "def apply(ctx):\n"
        "    if (Path(__file__).parent / 'down').exists():\n"
        "        raise RuntimeError('down')\n",
    )
    config = write(tmp_path / "cordis.yml", "insert:\n  - { id: flaky, name: ./flaky.py }\n")
    async with Host(config) as host:
        failures_reported()  # as run and chat do once they have reported the first load
        (tmp_path / "down").touch()
        await host.reload_entries(["flaky"])  # fails, and so does the version put back
    assert (
        cli_log.getvalue().splitlines()
        == ["ERROR harness.plugin.flaky: plugin 'flaky' failed: down"] * 2
    )


@pytest.mark.anyio
async def test_the_first_loads_failures_are_left_to_the_command(
    tmp_path: Path, cli_log: io.StringIO
) -> None:
    write(tmp_path / "broken.py", "def apply(ctx):\n    raise RuntimeError('down')\n")
    config = write(tmp_path / "cordis.yml", "insert:\n  - { id: broken, name: ./broken.py }\n")
    async with Host(config) as host:
        assert [status.state for status in host.status()] == ["failed"]
    assert cli_log.getvalue() == ""
