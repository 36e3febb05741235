"""OAuth 2.1 for HTTP upstreams: ``harness auth ID`` against a real local authorisation
server (the SDK's, in ``oauth_server.py``), the token stored 0600, used, and refreshed."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.auth import OAuthClientProvider

from harness import Host
from harness.gateway.plugin import supervision
from harness.gateway.tokens import margin

from ..helpers import HARNESS
from .conftest import PYTHON, fiber_of, write_config
from .test_transports import Process

pytestmark = pytest.mark.anyio
HERE = Path(__file__).parent


class Protected:
    """The OAuth-protected server: its URL and the log of what it granted and served."""

    def __init__(self, url: str, marks: Path) -> None:
        self.url = url
        self.marks = marks

    def seen(self) -> list[str]:
        return self.marks.read_text().splitlines() if self.marks.exists() else []


@pytest.fixture
def protected(tmp_path: Path) -> Iterator[Protected]:
    marks = tmp_path / "granted.log"
    served = Process(
        [PYTHON, str(HERE / "oauth_server.py")],
        r"serving (http://\S+)",
        cwd=tmp_path,
        env={"OAUTH_MARK": str(marks)},
    )
    try:
        assert served.match is not None
        yield Protected(served.match.group(1), marks)
    finally:
        served.close()


def entry(url: str, **config: Any) -> dict[str, Any]:
    return {"id": "safe", "name": "harness:mcp-client", "config": {"url": url, **config}}


def harness_auth(config: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """``harness auth safe`` with a browser that follows the redirects (no person)."""
    browser = f"{sys.executable} {HERE / 'fake_browser.py'} %s"
    return subprocess.run(
        [HARNESS, "auth", "safe", "-c", str(config), *extra],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "BROWSER": browser},
        check=False,
    )


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # the SDK's HTTP client (test_transports)
async def test_harness_auth_stores_the_token_0600_which_is_used_then_refreshed(
    tmp_path: Path, protected: Protected
) -> None:
    config = write_config(tmp_path, [entry(protected.url, oauth=True)])
    async with Host(config) as host:  # not authorised yet: the entry says what to do
        fiber = fiber_of(host, "safe")
        assert fiber.state.value == "failed"
        assert str(fiber.error).startswith(
            "MCP server 'safe': the server requires authorisation (OAuth): run "
            "`harness auth safe` to authorise harness in a browser; the entry connects "
            "again by itself; restarting in 0.5 s"
        )
    assert protected.seen() == []  # nothing registered nor asked by a running harness

    done = harness_auth(config)
    assert done.returncode == 0, done.stdout + done.stderr
    tokens = tmp_path / ".harness" / "oauth" / "safe.json"
    assert done.stdout.splitlines()[-1] == (
        f"entry 'safe' is authorised; its tokens are in {tokens}"
    )
    assert "/authorize?response_type=code" in done.stdout  # the URL, printed as well
    assert protected.seen() == ["register harness", "authorize", "token authorization_code"]
    assert stat.S_IMODE(tokens.stat().st_mode) == 0o600
    stored = json.loads(tokens.read_text())
    assert stored["tokens"]["access_token"] == "access-1"
    refresh = stored["tokens"]["refresh_token"]
    assert refresh not in done.stdout + done.stderr
    assert "access-1" not in done.stdout + done.stderr

    async with Host(config) as host:
        used = await host.tools.execute({"id": "1", "name": "safe_token", "args": {}})
        assert used.result == {"result": "access-1"}

    # Later (here: after a restart), the token is a minute from its expiry: it is refreshed
    # before it is used, never sent expired.
    stored["expires_at"] = time.time() + 30
    tokens.write_text(json.dumps(stored))
    tokens.chmod(0o600)
    async with Host(config) as host:
        used = await host.tools.execute({"id": "2", "name": "safe_token", "args": {}})
        assert used.result == {"result": "access-2"}
    assert protected.seen()[3:] == [
        "call Bearer access-1",
        "token refresh_token",
        "call Bearer access-2",
    ]
    again = json.loads(tokens.read_text())
    assert again["tokens"]["access_token"] == "access-2"
    assert again["expires_at"] > time.time() + 3000
    assert stat.S_IMODE(tokens.stat().st_mode) == 0o600


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_step_up_fails_that_call_only_and_harness_auth_adds_the_scope_for_the_entry(
    tmp_path: Path, protected: Protected
) -> None:
    config = write_config(tmp_path, [entry(protected.url, oauth=True)])
    done = harness_auth(config)
    assert done.returncode == 0, done.stdout + done.stderr
    tokens = tmp_path / ".harness" / "oauth" / "safe.json"

    async with Host(config) as host:
        fiber = fiber_of(host, "safe")
        state = supervision(fiber)
        assert state is not None
        connection = state.connection
        before = await host.tools.execute({"id": "1", "name": "safe_token", "args": {}})
        assert before.result == {"result": "access-1"}
        refused = await host.tools.execute({"id": "2", "name": "safe_admin", "args": {}})
        assert refused.code == "tool_error"
        assert refused.error == (
            "MCP server 'safe': the call needs more access than harness was granted: "
            f"{protected.url} answered HTTP 403 insufficient_scope, asking for the scope "
            "'admin'; run `harness auth safe` to authorise entry 'safe' for that scope as "
            "well (its other calls go on meanwhile)"
        )
        # The connection goes on: the same one answers the entry's other calls.
        after = await host.tools.execute({"id": "3", "name": "safe_token", "args": {}})
        assert after.result == {"result": "access-1"}
        assert fiber.state.value == "active"
        assert state.connection is connection
        assert state.attempts == 0
        assert json.loads(tokens.read_text())["scope_wanted"] == "admin"
        assert protected.seen()[3:] == [
            "call Bearer access-1",
            "refused admin: insufficient_scope",
            "call Bearer access-1",
        ]

        # The person runs `harness auth safe` meanwhile: it asks for the scope the call
        # needed, and the running entry uses the new tokens.
        done = await anyio.to_thread.run_sync(harness_auth, config)
        assert done.returncode == 0, done.stdout + done.stderr
        assert protected.seen()[6:] == ["authorize admin", "token authorization_code"]
        assert "scope_wanted" not in json.loads(tokens.read_text())
        granted = await host.tools.execute({"id": "4", "name": "safe_admin", "args": {}})
        assert granted.result == {"result": "admin done"}
        used = await host.tools.execute({"id": "5", "name": "safe_token", "args": {}})
        assert used.result == {"result": "access-2"}
        # The request with the old token met the step-up, found the new tokens kept, and
        # was sent once more with them; the connection is the same.
        assert protected.seen()[8:] == [
            "refused admin: insufficient_scope",
            "call admin",
            "call Bearer access-2",
        ]
        assert state.connection is connection


def stored_record(db: Path) -> dict[str, Any]:
    with contextlib.closing(sqlite3.connect(db)) as connection:
        rows = connection.execute("SELECT name, value FROM secrets").fetchall()
    assert [name for name, _ in rows] == ["oauth/safe"]
    record: dict[str, Any] = json.loads(rows[0][1])
    return record


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_with_harness_store_loaded_the_tokens_are_kept_in_the_store(
    tmp_path: Path, protected: Protected
) -> None:
    store = {"id": "store", "name": "harness:store"}
    config = write_config(tmp_path, [store, entry(protected.url, oauth=True)])
    done = harness_auth(config)
    assert done.returncode == 0, done.stdout + done.stderr
    db = tmp_path / ".harness" / "harness.db"
    assert done.stdout.splitlines()[-1] == (
        f"entry 'safe' is authorised; its tokens are in the store ({db})"
    )
    assert not (tmp_path / ".harness" / "oauth").exists()
    record = stored_record(db)
    assert record["tokens"]["access_token"] == "access-1"
    for suffix in ("", "-wal", "-shm"):
        held = db.with_name(db.name + suffix)
        if held.exists():
            assert stat.S_IMODE(held.stat().st_mode) == 0o600, held

    async with Host(config) as host:
        used = await host.tools.execute({"id": "1", "name": "safe_token", "args": {}})
        assert used.result == {"result": "access-1"}

    record["expires_at"] = time.time() + 30  # due for a refresh at the next start
    with contextlib.closing(sqlite3.connect(db)) as connection, connection:
        connection.execute("UPDATE secrets SET value = ?", (json.dumps(record),))
    async with Host(config) as host:
        used = await host.tools.execute({"id": "2", "name": "safe_token", "args": {}})
        assert used.result == {"result": "access-2"}
    assert stored_record(db)["tokens"]["access_token"] == "access-2"
    assert "token refresh_token" in protected.seen()


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_401_names_the_entry_and_says_to_run_harness_auth(
    tmp_path: Path, protected: Protected
) -> None:
    config = write_config(tmp_path, [entry(protected.url)])
    async with Host(config) as host:
        fiber = fiber_of(host, "safe")
        assert fiber.state.value == "failed"
        message = str(fiber.error)
    assert message.startswith(
        f"MCP server 'safe': the server requires authorisation: {protected.url} answered "
        "HTTP 401 (Bearer "
    )
    assert (
        "for OAuth, set oauth: true on entry 'safe' and run `harness auth safe`; else set the "
        "credentials it expects in the entry's headers" in message
    )


def test_harness_auth_refuses_an_entry_without_oauth(tmp_path: Path) -> None:
    config = write_config(tmp_path, [entry("http://127.0.0.1:9/mcp")])
    done = harness_auth(config)
    assert done.returncode == 2
    assert done.stderr == (
        "AuthProblem: entry 'safe' does not use OAuth: add `oauth: true` to its config, then "
        "run harness auth safe again\n"
    )


def test_tokens_are_refreshed_a_minute_before_they_expire_or_half_way() -> None:
    assert margin(3600) == 60
    assert margin(60) == 30


def test_the_sdk_provider_steps_harness_overrides_are_still_there() -> None:
    """harness.gateway.auth.EntryOAuth overrides these private steps of SDK 2.3's provider:
    an SDK that renames them fails here, by name, instead of tokens silently expiring."""
    steps = ("_initialize", "_handle_token_response", "_handle_refresh_response")
    for name in (*steps, "_auth_flow", "_perform_authorization"):
        assert callable(getattr(OAuthClientProvider, name, None)), name
    provider = OAuthClientProvider.__init__.__code__.co_varnames
    assert "storage" in provider


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_concurrent_step_ups_each_fail_alone_and_leave_the_tokens_whole(
    tmp_path: Path, protected: Protected
) -> None:
    config = write_config(tmp_path, [entry(protected.url, oauth=True)])
    done = harness_auth(config)
    assert done.returncode == 0, done.stdout + done.stderr
    folder = tmp_path / ".harness" / "oauth"
    tokens = folder / "safe.json"
    granted = json.loads(tokens.read_text())["tokens"]
    refusal = (
        "MCP server 'safe': the call needs more access than harness was granted: "
        f"{protected.url} answered HTTP 403 insufficient_scope, asking for the scope "
        "'admin'; run `harness auth safe` to authorise entry 'safe' for that scope as "
        "well (its other calls go on meanwhile)"
    )

    async with Host(config) as host:
        state = supervision(fiber_of(host, "safe"))
        assert state is not None
        connection = state.connection
        results: dict[str, Any] = {}

        async def call(call_id: str, name: str) -> None:
            results[call_id] = await host.tools.execute({"id": call_id, "name": name, "args": {}})

        with anyio.fail_after(60):
            async with anyio.create_task_group() as calls:
                for call_id, name in [
                    ("a", "safe_admin"),
                    ("b", "safe_admin"),
                    ("c", "safe_token"),
                ]:
                    calls.start_soon(call, call_id, name)
        for call_id in ("a", "b"):
            assert (results[call_id].code, results[call_id].error) == ("tool_error", refusal)
        assert results["c"].result == {"result": "access-1"}  # the other call went on
        record = json.loads(tokens.read_text())  # whole JSON, the tokens untouched
        assert (record["tokens"], record["scope_wanted"]) == (granted, "admin")
        assert sorted(path.name for path in folder.iterdir()) == ["safe.json"]
        assert stat.S_IMODE(tokens.stat().st_mode) == 0o600
        assert sorted(protected.seen()[3:]) == [
            "call Bearer access-1",
            "refused admin: insufficient_scope",
            "refused admin: insufficient_scope",
        ]
        after = await host.tools.execute({"id": "d", "name": "safe_token", "args": {}})
        assert after.result == {"result": "access-1"}
        assert state.connection is connection

        done = await anyio.to_thread.run_sync(harness_auth, config)
        assert done.returncode == 0, done.stdout + done.stderr
        assert protected.seen()[7:] == ["authorize admin", "token authorization_code"]
        admitted = await host.tools.execute({"id": "e", "name": "safe_admin", "args": {}})
        assert admitted.result == {"result": "admin done"}
