"""Sessions in one real PostgreSQL, read through two replicas' consoles (the HTTP API): what
one replica appends to a session (a turn it ran) is what the other shows next, in its
events and its list, and a turn the other then runs carries on after it; the reads run off
the event loop (a worker thread), as the store's other operations do."""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from harness.testing import Reply, Rule, ScriptedServer, call

from ..processes import start_harness_run, stop
from .postgres import Postgres
from .test_restart import environment
from .test_turns import project

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the console's HTTP client and the OpenAI SDK run on asyncio


def rules() -> list[Rule]:
    return [
        Rule(Reply.calls(call("charge", {"amount": 1})), user="pay"),
        Rule(Reply.say("Paid."), tool="charge"),
        Rule(Reply.say("Hello there.")),
    ]


async def ended(http: httpx2.AsyncClient, session: str, turns: int) -> list[dict[str, Any]]:
    """The session's events, as this replica's console gives them, once ``turns`` turns ended
    there (30 s at most)."""
    with anyio.fail_after(30):
        while True:
            response = await http.get(f"/api/sessions/{session}")
            assert response.status_code == 200, response.text
            events: list[dict[str, Any]] = response.json()["events"]
            if sum(event["type"] == "turn/end" for event in events) >= turns:
                return events
            await anyio.sleep(0.1)


async def send(http: httpx2.AsyncClient, session: str, text: str) -> None:
    sent = await http.post(f"/api/sessions/{session}/messages", json={"text": text})
    assert sent.status_code == 202, sent.text


def shape(events: list[dict[str, Any]]) -> list[tuple[int, str]]:
    return [(event["seq"], event["type"]) for event in events]


async def test_each_replica_s_console_shows_what_the_other_appended_to_a_session(
    tmp_path: Path, postgres: Postgres
) -> None:
    url = postgres.create_database(f"replica_sessions_{secrets.token_hex(4)}")
    with ScriptedServer(rules()) as server:
        folder = project(tmp_path, server, url).parent
        a, port_a = start_harness_run(folder, environment(), web=True)
        b, port_b = start_harness_run(folder, environment(), web=True)
        try:
            async with (
                httpx2.AsyncClient(base_url=f"http://127.0.0.1:{port_a}", timeout=30) as on_a,
                httpx2.AsyncClient(base_url=f"http://127.0.0.1:{port_b}", timeout=30) as on_b,
            ):
                session = (await on_a.post("/api/sessions", json={})).json()["id"]
                await send(on_a, session, "hi")
                first = await ended(on_a, session, 1)
                assert shape(await ended(on_b, session, 1)) == shape(first)  # B opens it

                await send(on_a, session, "pay")  # A appends a turn B has open
                second = await ended(on_a, session, 2)
                exported = (await on_b.get(f"/api/sessions/{session}/export")).text
                assert [json.loads(line)["seq"] for line in exported.splitlines()] == [
                    seq for seq, _ in shape(second)
                ]
                steps = (await on_b.get(f"/api/sessions/{session}/trajectory")).json()["turns"]
                assert [turn["tools"] and turn["tools"][0]["name"] for turn in steps] == [
                    [],
                    "charge",
                ]
                seen = (await on_b.get(f"/api/sessions/{session}")).json()["events"]
                assert shape(seen) == shape(second)  # not B's copy from before
                answers = [e["text"] for e in seen if e["type"] == "assistant/message"]
                assert answers[-1] == "Paid."
                [listed] = (await on_b.get("/api/sessions", params={"q": "pay"})).json()
                assert (listed["id"], listed["turns"]) == (session, 2)

                renamed = await on_b.patch(f"/api/sessions/{session}", json={"title": "Bills"})
                assert renamed.status_code == 200, renamed.text
                await send(on_b, session, "hi again")  # B goes on after A's turn
                third = await ended(on_b, session, 3)
                assert shape(third)[: len(second)] == shape(second)
                assert shape(third)[len(second)] == (len(second) + 1, "session/title")
                assert shape(await ended(on_a, session, 3)) == shape(third)
                [listed] = (await on_a.get("/api/sessions")).json()
                assert (listed["title"], listed["turns"]) == ("Bills", 3)
        finally:
            stop(a)
            stop(b)
    assert [event["text"] for event in third if event["type"] == "assistant/message"] == [
        "Hello there.",
        "",
        "Paid.",
        "Hello there.",
    ]
    assert (folder / "effects.txt").read_text() == "charge 1\n"
