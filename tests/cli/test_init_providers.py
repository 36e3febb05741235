"""``harness init`` writes a model entry for the provider it finds, switched on, and keeps the
template's switched-off entries when it finds none. A real ``harness init`` each time, in a
fresh folder; Ollama is a real HTTP server on 127.0.0.1 answering ``GET /api/tags``."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from ..helpers import TEMPLATE, run_harness

NO_OLLAMA = "127.0.0.1:9"  # nothing answers there


@contextmanager
def ollama(answer: Any) -> Iterator[str]:
    """An HTTP server answering ``/api/tags`` with ``answer`` (JSON); yields host:port."""

    class Tags(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = json.dumps(answer).encode()
            self.send_response(200 if self.path == "/api/tags" else 404)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Tags)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def init(folder: Path, env: dict[str, str]) -> tuple[list[str], dict[str, Any], str]:
    """Run ``harness init`` in ``folder``; its report, the model group's entries, the text."""
    base = {"OPENAI_API_KEY": "", "DEEPSEEK_API_KEY": "", "ANTHROPIC_API_KEY": ""}
    done = run_harness("init", cwd=folder, env={"OLLAMA_HOST": NO_OLLAMA, **base, **env})
    assert done.returncode == 0, done.stderr
    text = (folder / "cordis.yml").read_text()
    group = next(e for e in yaml.safe_load(text)["insert"] if e["id"] == "assistant")
    return done.stdout.splitlines(), group, text


def model_of(group: dict[str, Any]) -> dict[str, Any]:
    entry: dict[str, Any] = group["insert"][0]
    assert entry["id"] == "model"
    assert group["insert"][1]["name"] == "harness:agent"
    return entry


def test_no_provider_writes_the_template_as_it_is(tmp_path: Path) -> None:
    report, group, text = init(tmp_path, {})
    assert text == TEMPLATE.read_text()
    assert group["enabled"] is False
    assert report[-2].startswith("model: none found (set OPENAI_API_KEY, DEEPSEEK_API_KEY")
    assert "`harness chat --demo` needs none" in report[-2]
    check = run_harness("check", cwd=tmp_path, env={"OLLAMA_HOST": NO_OLLAMA})
    assert check.returncode == 0, check.stdout + check.stderr


@pytest.mark.parametrize(
    ("key", "name", "model", "base_url"),
    [
        ("OPENAI_API_KEY", "harness:openai", "gpt-4.1-mini", "https://api.openai.com/v1"),
        ("DEEPSEEK_API_KEY", "harness:openai", "deepseek-chat", "https://api.deepseek.com/v1"),
        ("ANTHROPIC_API_KEY", "harness:anthropic", "claude-sonnet-4-5", None),
    ],
)
def test_a_key_in_the_environment_gets_its_entry_switched_on(
    tmp_path: Path, key: str, name: str, model: str, base_url: str | None
) -> None:
    secret = "sk-test-never-written-0123456789"
    report, group, text = init(tmp_path, {key: secret})
    assert "enabled" not in group
    entry = model_of(group)
    assert entry["name"] == name
    assert entry["config"]["model"] == f"${{HARNESS_MODEL:-{model}}}"
    assert entry["config"]["api_key"] == f"${{{key}}}"
    if base_url is not None:
        assert base_url in entry["config"]["base_url"]
    assert secret not in text  # the file names the variable, never the key
    assert f"because {key} is set" in report[-2]
    assert text.startswith(TEMPLATE.read_text().split("  # The model and the agent loop,")[0])


def test_openai_first_and_the_entry_loads(tmp_path: Path) -> None:
    _, group, _ = init(tmp_path, {"OPENAI_API_KEY": "sk-a", "DEEPSEEK_API_KEY": "sk-b"})
    assert model_of(group)["config"]["api_key"] == "${OPENAI_API_KEY}"
    env = {"OPENAI_API_KEY": "sk-a", "OLLAMA_HOST": NO_OLLAMA}
    check = run_harness("check", "--json", cwd=tmp_path, env=env)
    assert json.loads(check.stdout) == {"ok": True, "problems": []}, check.stderr
    plugins = {
        p["id"]: p["state"]
        for p in json.loads(run_harness("plugins", "--json", cwd=tmp_path, env=env).stdout)
    }
    assert (plugins["model"], plugins["agent"]) == ("active", "active")


def test_a_key_in_the_folders_dotenv_counts(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("DEEPSEEK_API_KEY=sk-from-dotenv\n")
    _, group, text = init(tmp_path, {})
    assert model_of(group)["config"]["api_key"] == "${DEEPSEEK_API_KEY}"
    assert "sk-from-dotenv" not in text


def test_an_answering_ollama_gets_its_first_model(tmp_path: Path) -> None:
    tags = {"models": [{"name": "llama3.2:3b"}, {"name": "qwen3:8b"}]}
    with ollama(tags) as address:
        report, group, _ = init(tmp_path, {"OLLAMA_HOST": address})
    entry = model_of(group)
    assert entry["config"] == {
        "model": "${HARNESS_MODEL:-llama3.2:3b}",
        "base_url": f"http://{address}/v1",
        "api_key": "",
    }
    assert f"model: Ollama (llama3.2:3b), because Ollama answers at {address}" in report
    check = run_harness("check", "--json", cwd=tmp_path, env={"OLLAMA_HOST": NO_OLLAMA})
    assert json.loads(check.stdout)["ok"] is True, check.stdout


def test_an_ollama_with_no_model_yet_says_what_to_pull(tmp_path: Path) -> None:
    with ollama({"models": []}) as address:
        _, _, text = init(tmp_path, {"OLLAMA_HOST": address})
    assert "model: ${HARNESS_MODEL:-qwen3:8b}  # none pulled yet: ollama pull qwen3:8b" in text


def test_a_hostile_ollama_cannot_write_yaml(tmp_path: Path) -> None:
    evil = "x}\n  - id: evil\n    name: /tmp/evil.py\n#"
    with ollama({"models": [{"name": evil}, {"name": "ok-model"}]}) as address:
        _, group, text = init(tmp_path, {"OLLAMA_HOST": address})
    assert "evil" not in text
    assert model_of(group)["config"]["model"] == "${HARNESS_MODEL:-ok-model}"


def test_a_kept_cordis_yml_is_not_touched(tmp_path: Path) -> None:
    (tmp_path / "cordis.yml").write_text("insert: []\n")
    done = run_harness("init", cwd=tmp_path, env={"OPENAI_API_KEY": "sk-a"})
    assert done.stdout.splitlines()[0] == "kept cordis.yml (it exists)"
    assert not any(line.startswith("model:") for line in done.stdout.splitlines())
    assert (tmp_path / "cordis.yml").read_text() == "insert: []\n"
