"""The session record over real HTTP: search, rename, export and trajectories (DESIGN §15)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from harness.testing import Reply, Rule, ScriptedServer

from ..agent.session_logs import write_log, yesterday_events
from ..providers import model_yaml
from .conftest import Served, make_project

OLD = "20261130-093000-abc123"


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedServer]:
    with ScriptedServer([Rule(Reply.say("Noted."), user="")]) as server:
        yield server


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory, model: ScriptedServer) -> Path:
    extra = (
        f"  - id: model\n    {model_yaml(model, '    ')}\n  - id: agent\n    name: harness:agent\n"
    )
    config = make_project(tmp_path_factory.mktemp("record"), extra)
    folder = config.parent / ".harness" / "sessions"
    write_log(folder, OLD, yesterday_events(OLD))
    write_log(folder, "20261130-100000-def456", yesterday_events("x", "the lion", "Lions roar."))
    return config


@pytest.fixture(scope="module")
def served(project: Path) -> Iterator[Served]:
    running = Served(project)
    yield running
    running.close()


def api(served: Served, path: str) -> str:
    return f"{served.base}api/sessions{path}"


def test_search_finds_yesterdays_session_by_a_word(served: Served) -> None:
    found = httpx2.get(api(served, ""), params={"q": "ZEBRA"}).json()
    assert [item["id"] for item in found] == [OLD]
    assert found[0]["turns"] == 1
    assert found[0]["created"] < found[0]["updated"]
    everything = httpx2.get(api(served, "")).json()
    assert {item["id"] for item in everything} >= {OLD, "20261130-100000-def456"}
    assert httpx2.get(api(served, ""), params={"q": "giraffe"}).json() == []
    long = httpx2.get(api(served, ""), params={"q": "x" * 201})
    assert long.status_code == 400
    assert "200 characters" in long.json()["error"]


def test_the_trajectory_of_each_turn(served: Served) -> None:
    answer = httpx2.get(api(served, f"/{OLD}/trajectory"))
    assert answer.status_code == 200
    (turn,) = answer.json()["turns"]
    assert (turn["steps"], turn["input_tokens"], turn["output_tokens"]) == (2, 230, 29)
    assert turn["model_ms"] == pytest.approx(1750.0)
    assert [(t["name"], t["ok"], t["code"]) for t in turn["tools"]] == [
        ("read_text_file", True, None),
        ("git_log_reader", False, "tool_error"),
    ]


def test_rename_is_validated_and_kept_across_a_restart(served: Served, project: Path) -> None:
    session = api(served, f"/{OLD}")
    for body, status, words in [
        ({"title": "evil\x1b[2Jtitle"}, 400, "control character U+001B"),
        ({"title": "x" * 201}, 400, "200 characters"),
        ({"title": 7}, 400, "must be a string"),
        ({}, 400, "title is missing"),
    ]:
        answer = httpx2.patch(session, json=body)
        assert (answer.status_code, words in answer.json()["error"]) == (status, True), answer.text
    plain = httpx2.patch(session, content=b'{"title": "x"}', headers={"content-type": "text/plain"})
    assert plain.status_code == 415
    foreign = httpx2.patch(session, json={"title": "x"}, headers={"origin": "https://evil.example"})
    assert foreign.status_code == 403
    renamed = httpx2.patch(session, json={"title": "  Zebra work "})
    assert renamed.status_code == 200
    assert renamed.json()["title"] == "Zebra work"
    listed = {item["id"]: item["title"] for item in httpx2.get(api(served, "")).json()}
    assert listed[OLD] == "Zebra work"
    again = Served(project)  # a new server process reads the title from the log
    try:
        listed = {
            item["id"]: item["title"] for item in httpx2.get(f"{again.base}api/sessions").json()
        }
        assert listed[OLD] == "Zebra work"
    finally:
        again.close()


def test_export_is_the_log_as_a_jsonl_download(served: Served, project: Path) -> None:
    answer = httpx2.get(api(served, f"/{OLD}/export"))
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("application/x-ndjson")
    assert answer.headers["content-disposition"] == f'attachment; filename="session-{OLD}.jsonl"'
    log = project.parent / ".harness" / "sessions" / f"{OLD}.jsonl"
    assert answer.content == log.read_bytes()


@pytest.mark.parametrize(
    "bad", ["..%2F..%2Fcordis", "%2E%2E", "a..b", "nope-000000", "x%00y", ".hidden", "-" * 200]
)
def test_unknown_or_malformed_ids_are_404_never_a_path(served: Served, bad: str) -> None:
    for method, tail in [("GET", "/trajectory"), ("GET", "/export"), ("PATCH", ""), ("GET", "")]:
        answer = httpx2.request(method, api(served, f"/{bad}{tail}"), json={"title": "x"})
        assert answer.status_code == 404, (method, bad, answer.text)
        assert "insert:" not in answer.text  # never the content of a file
