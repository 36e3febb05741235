"""Spans exported over real OTLP/HTTP by ``harness chat`` and ``harness run``.

The receiver is a small HTTP server on 127.0.0.1 that decodes each
``ExportTraceServiceRequest`` (protobuf, opentelemetry-proto) it is posted; the processes
are the real executable with only the standard ``OTEL_*`` variables set.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from harness.testing import ScriptedServer

from ..helpers import HARNESS
from ..providers import PROVIDERS, server_for
from ..spans import Receiver, Span, check_tree, named
from ..web.conftest import Served
from .conftest import config_file, entry
from .test_traces import TWO_CALLS


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    running = Receiver()
    yield running
    running.close()


def otel_env(receiver: Receiver) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HARNESS_", "OTEL_"))}
    env["OTEL_EXPORTER_OTLP_ENDPOINT"] = receiver.endpoint
    env["OTEL_BSP_SCHEDULE_DELAY"] = "50"
    return env


@pytest.mark.parametrize("provider", PROVIDERS)
def test_harness_chat_exports_one_tree(tmp_path: Path, receiver: Receiver, provider: str) -> None:
    with server_for(provider, TWO_CALLS) as server:
        config_file(tmp_path, server, [entry("echo"), entry("add")])
        done = subprocess.run(
            [HARNESS, "chat", "-m", "both", "--yes"],
            cwd=tmp_path,
            env=otel_env(receiver),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert "hi, and 5" in done.stdout
        session = done.stderr.split("session ", 1)[1].split()[0]
        spans = receiver.wait_for("invoke_agent")
        check(spans, server, session)
    assert set(receiver.paths) == {"/v1/traces"}
    assert set(receiver.services) == {"harness"}


def check(spans: list[Span], server: ScriptedServer, session: str) -> None:
    check_tree(spans, server, session)
    ours = [s for s in spans if s.name.startswith(("invoke_agent", "chat ", "execute_tool "))]
    assert len(ours) == 5
    # a span the SDK makes itself (anthropic's client is instrumented) is a chat span's child
    chats = {s.span_id for s in named(spans, "chat ")}
    for other in spans:
        if other not in ours:
            assert other.parent_id in chats, other


def test_harness_run_exports_the_console_turns(tmp_path: Path, receiver: Receiver) -> None:
    with server_for("anthropic", TWO_CALLS) as server:
        config = config_file(tmp_path, server, [entry("echo"), entry("add")])
        env = otel_env(receiver)
        env["OTEL_SERVICE_NAME"] = "agent-under-test"
        served = Served(config, "--mcp", "http", env=env)
        try:
            session = httpx2.post(served.base + "api/sessions", json={}).json()["id"]
            sent = httpx2.post(
                served.base + f"api/sessions/{session}/messages", json={"text": "both"}
            )
            assert sent.status_code == 202, sent.text
            spans = receiver.wait_for("invoke_agent")
        finally:
            served.close()
        check(spans, server, session)
    assert set(receiver.services) == {"agent-under-test"}


def test_without_the_variables_nothing_is_exported(tmp_path: Path, receiver: Receiver) -> None:
    with server_for("openai", TWO_CALLS) as server:
        config_file(tmp_path, server, [entry("echo"), entry("add")])
        env = otel_env(receiver)
        del env["OTEL_EXPORTER_OTLP_ENDPOINT"]
        done = subprocess.run(
            [HARNESS, "chat", "-m", "both", "--yes"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    assert receiver.paths == []
