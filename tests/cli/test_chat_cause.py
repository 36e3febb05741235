"""``harness chat`` without a running agent names the entry at fault first: the model entry
that failed (file, line, entry, its problem), the switch that is off, or what is missing —
never "add an agent" when the agent entry is there. The real ``harness`` each time."""

from __future__ import annotations

from pathlib import Path

from ..helpers import project_copy, run_harness

AGENT_GUIDE = """\
  - id: model
    name: harness:openai            # provides `llm`
    config:
      model: ${HARNESS_MODEL:-gpt-4.1-mini}
      base_url: ${HARNESS_BASE_URL:-https://api.openai.com/v1}
      api_key: ${OPENAI_API_KEY:-}
  - id: agent
    name: harness:agent
    config:
      sessions: ./.harness/sessions
"""
NO_KEYS = {"OPENAI_API_KEY": "", "HARNESS_TEST_NO_SUCH_KEY": ""}


def tools_only(folder: Path) -> Path:
    """The default project without the template's (switched-off) model and agent entries."""
    config = project_copy(folder)
    text = config.read_text()
    config.write_text(text[: text.index("  # The model and the agent loop,")])
    return config


def chat(project: Path) -> str:
    done = run_harness("chat", "-m", "hello", cwd=project, env=NO_KEYS)
    assert done.returncode == 1, done.stdout
    assert "Traceback" not in done.stderr
    # the headline: the error line (log records of the failed entry may come before it)
    return next(line for line in done.stderr.splitlines() if line.startswith("ChatError: "))


def line_of(config: Path, text: str) -> int:
    return next(n for n, line in enumerate(config.read_text().splitlines(), 1) if text in line)


def test_a_failed_model_entry_is_named_with_its_problem(tmp_path: Path) -> None:
    config = tools_only(tmp_path)
    with config.open("a") as file:
        file.write(AGENT_GUIDE)
    line = line_of(config, "name: harness:openai            # provides") + 1  # its config:
    headline = chat(tmp_path)
    assert headline.startswith(
        "ChatError: the model entry 'model' failed, so the agent 'agent' waits for it: "
        f"{config}:{line}: entry 'model': invalid config for plugin 'model': "
    )
    assert "api_key is empty" in headline
    assert "name: harness:agent" not in headline


def test_an_unset_key_variable_is_named(tmp_path: Path) -> None:
    config = tools_only(tmp_path)
    with config.open("a") as file:
        file.write(AGENT_GUIDE.replace("${OPENAI_API_KEY:-}", "${HARNESS_NO_SUCH_KEY}"))
    headline = chat(tmp_path)
    assert headline.startswith("ChatError: the model entry 'model' failed")
    assert "'HARNESS_NO_SUCH_KEY' is not set" in headline


def test_straight_after_init_the_switch_to_flip_is_named(tmp_path: Path) -> None:
    config = project_copy(tmp_path)  # the template: the assistant group is off
    headline = chat(tmp_path)
    assert headline == (
        f"ChatError: the agent entry 'agent' is switched off in {config.name}: run "
        "`harness enable assistant`, or try `harness chat --demo` (a scripted demo model, "
        "no key needed)"
    )


def test_a_switched_off_model_entry_is_named(tmp_path: Path) -> None:
    config = tools_only(tmp_path)
    with config.open("a") as file:
        file.write(
            AGENT_GUIDE.replace(
                "name: harness:openai ", "enabled: false\n    name: harness:openai "
            )
        )
    headline = chat(tmp_path)
    assert headline.startswith(
        "ChatError: the model entry 'model' is switched off in cordis.yml, so the agent "
        "'agent' waits for an `llm` service: run `harness enable model`"
    )


def test_an_agent_with_no_model_entry_says_to_add_one(tmp_path: Path) -> None:
    config = tools_only(tmp_path)
    with config.open("a") as file:
        file.write(AGENT_GUIDE[AGENT_GUIDE.index("  - id: agent") :])
    line = line_of(config, "name: harness:agent")
    headline = chat(tmp_path)
    assert headline.startswith(
        f"ChatError: the agent entry 'agent' ({config}:{line}) waits for an `llm` service "
        "and no entry provides one: add a model entry"
    )


def test_no_agent_entry_says_what_to_add(tmp_path: Path) -> None:
    (tmp_path / "cordis.yml").write_text("insert: []\n")
    headline = chat(tmp_path)
    assert headline.startswith(
        "ChatError: no agent in cordis.yml: add an entry `name: harness:agent` and a model entry"
    )
