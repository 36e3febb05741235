"""``harness mcp`` reads its client's stdin so that a stop can cancel the read: SIGTERM ends
the process while the client keeps stdin open (the SDK's reader thread held it until stdin
closed), and a tool still reads EOF, not the protocol, from descriptor 0."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from harness.mcp.stdin_lines import StdinLines, claimed_stdin

from ..helpers import HARNESS, write

READER = """
import sys

from harness import define_tool

inject = ["tools"]


def apply(ctx):
    def read_stdin(args):
        return repr(sys.stdin.read())

    ctx.tools.register(
        define_tool(name="read_stdin", description="Read stdin. Use to test.", execute=read_stdin)
    )
"""


def request(number: int, method: str, params: dict[str, Any]) -> bytes:
    message = {"jsonrpc": "2.0", "id": number, "method": method, "params": params}
    return (json.dumps(message, ensure_ascii=False) + "\n").encode()


def test_sigterm_ends_harness_mcp_while_its_client_keeps_stdin_open(tmp_path: Path) -> None:
    write(tmp_path / "plugins" / "reader.py", READER)
    write(tmp_path / "cordis.yml", "insert:\n  - { id: reader, name: ./plugins/reader.py }\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    process = subprocess.Popen(
        [HARNESS, "mcp", "--no-watch"],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert process.stdin is not None
    assert process.stdout is not None
    try:
        hello = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        }
        process.stdin.write(request(1, "initialize", hello))
        process.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        # one message split across writes, and a character split across them too
        call = request(2, "tools/call", {"name": "read_stdin", "arguments": {"note": "é"}})
        cut = call.index("é".encode()) + 1
        process.stdin.write(call[:cut])
        process.stdin.flush()
        time.sleep(0.2)
        process.stdin.write(call[cut:])
        process.stdin.flush()
        answers = [json.loads(process.stdout.readline()) for _ in range(2)]
        assert [answer["id"] for answer in answers] == [1, 2]
        # the tool read descriptor 0 while serving: EOF, never the client's messages
        assert answers[1]["result"]["content"] == [{"type": "text", "text": "''"}]
        process.send_signal(signal.SIGTERM)  # stdin stays open: this test holds it
        # before: the process waited for stdin to close, which never comes here
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        with contextlib.suppress(BrokenPipeError):
            process.stdin.close()
        process.stdout.close()


async def lines_of(fd: int) -> list[str]:
    return [line async for line in StdinLines(fd)]


@pytest.mark.anyio
async def test_lines_from_a_pipe_keep_their_newlines_and_decode_across_reads() -> None:
    read, write_end = os.pipe()
    data = "first\nsecond é\nthird without newline".encode()

    def feed() -> None:
        for index in range(len(data)):  # a byte at a time: characters split across reads
            os.write(write_end, data[index : index + 1])
        os.close(write_end)

    feeder = threading.Thread(target=feed)
    feeder.start()
    try:
        with anyio.fail_after(30):
            got = await lines_of(read)
    finally:
        feeder.join()
        os.close(read)
    assert got == ["first\n", "second é\n", "third without newline"]


@pytest.mark.anyio
async def test_a_regular_file_is_read_in_a_thread(tmp_path: Path) -> None:
    path = tmp_path / "requests.jsonl"
    path.write_bytes(b"one\n\xfftwo\n")
    fd = os.open(path, os.O_RDONLY)
    try:
        lines = StdinLines(fd)
        assert not lines.pollable
        assert [line async for line in lines] == ["one\n", "\ufffdtwo\n"]  # bad bytes replaced
    finally:
        os.close(fd)


@pytest.mark.anyio
async def test_a_read_waiting_on_an_open_pipe_is_cancelled() -> None:
    read, write_end = os.pipe()
    try:
        lines = StdinLines(read)
        assert lines.pollable
        with anyio.move_on_after(0.3) as waited:
            await lines.__anext__()  # nothing comes, and the writer stays open
        assert waited.cancelled_caught
        os.write(write_end, b"late\n")  # the cancelled read lost nothing
        with anyio.fail_after(30):
            assert await lines.__anext__() == "late\n"
    finally:
        os.close(read)
        os.close(write_end)


def test_claimed_stdin_points_descriptor_0_at_the_null_device_and_back() -> None:
    before = os.fstat(0)
    with claimed_stdin() as private:
        assert os.path.samestat(os.fstat(private), before)
        assert os.path.samestat(os.fstat(0), os.stat(os.devnull))
    assert os.path.samestat(os.fstat(0), before)
