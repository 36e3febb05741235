"""Seals shared by replicas: one secret opens everywhere, a shared folder spends once for all."""

from __future__ import annotations

import multiprocessing
import os
import time
from pathlib import Path

import pytest

from harness import ToolCall
from harness.errors import ConfigError
from harness.tools.seal import CallSeal, FileSpent, MemorySpent, SealError

CALL = ToolCall("1", "write", {"path": "a"})
SECRET = b"shared by the replicas"


def test_a_token_opened_on_one_replica_is_refused_on_another(tmp_path: Path) -> None:
    first = CallSeal(SECRET, spent=FileSpent(tmp_path / "spent"))
    second = CallSeal(SECRET, spent=FileSpent(tmp_path / "spent"))
    token = first.seal(CALL)
    second.open(token, CALL)
    for replica in (first, second):
        with pytest.raises(SealError, match="already used"):
            replica.open(token, CALL)


def test_without_a_shared_folder_each_replica_spends_alone() -> None:
    # what HARNESS_STATE_DIR exists for: memory sets do not see each other's nonces
    first, second = CallSeal(SECRET, spent=MemorySpent()), CallSeal(SECRET, spent=MemorySpent())
    token = first.seal(CALL)
    first.open(token, CALL)
    second.open(token, CALL)


def test_the_state_dir_comes_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNESS_SECRET", "s")
    monkeypatch.setenv("HARNESS_STATE_DIR", str(tmp_path))
    token = CallSeal().seal(CALL)
    CallSeal().open(token, CALL)
    [spent] = list((tmp_path / "spent-approvals").iterdir())
    assert spent.stat().st_mtime > time.time() + 500  # kept until the token expires
    with pytest.raises(SealError, match="already used"):
        CallSeal().open(token, CALL)


def test_a_secret_without_a_state_dir_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_SECRET", "s")
    monkeypatch.delenv("HARNESS_STATE_DIR", raising=False)
    with pytest.raises(ConfigError, match="HARNESS_SECRET is set but HARNESS_STATE_DIR is not"):
        CallSeal()
    CallSeal(b"given", spent=MemorySpent())  # a library caller choosing its own set may
    monkeypatch.delenv("HARNESS_SECRET")
    assert isinstance(CallSeal().spent, MemorySpent)  # one process, its own random secret


def test_an_unwritable_folder_fails_closed(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    seal = CallSeal(SECRET, spent=FileSpent(blocker / "spent"))
    with pytest.raises(SealError, match="cannot record the approval as used"):
        seal.open(seal.seal(CALL), CALL)


def test_expired_nonces_are_swept(tmp_path: Path) -> None:
    spent = FileSpent(tmp_path)
    now = time.time()
    assert spent.spend("old", now - 1, now)
    assert spent.spend("new", now + 600, now + spent.SWEEP_EVERY + 1)  # sweeps "old"
    assert len(os.listdir(tmp_path)) == 1
    assert not spent.spend("new", now + 600, now)


def test_memory_spent_refuses_every_replay_beyond_a_thousand_nonces() -> None:
    spent, now = MemorySpent(), 1000.0
    for number in range(3000):
        assert spent.spend(f"n{number}", now + 600, now)
    assert all(not spent.spend(f"n{number}", now + 600, now + 1) for number in range(3000))
    assert len(spent) == 3000


def test_memory_spent_frees_nonces_once_they_expire_and_only_those() -> None:
    spent, now = MemorySpent(), 1000.0
    for number in range(2000):
        assert spent.spend(f"soon{number}", now + 10, now)
        assert spent.spend(f"late{number}", now + 600, now)
    assert len(spent) == 4000
    assert spent.spend("after", now + 611, now + 11)  # the "soon" ones are past their expiry
    assert len(spent) == 2001
    assert not spent.spend("late7", now + 600, now + 11)
    assert not spent.spend("after", now + 611, now + 12)
    assert spent.spend("last", now + 1300, now + 700)  # everything before has expired
    assert len(spent) == 1


def test_memory_spent_stays_bounded_by_one_expiry_window() -> None:
    # a steady stream, one token a second, each valid for 60 s: never more than 60 kept
    spent, window = MemorySpent(), 60.0
    held = []
    for second in range(5000):
        assert spent.spend(f"t{second}", second + window, float(second))
        held.append(len(spent))
    assert max(held) == window
    assert held[-1] == window


def test_tokens_open_once_each_through_the_memory_set() -> None:
    seal = CallSeal(SECRET, spent=MemorySpent())
    tokens = [seal.seal(CALL) for _ in range(1500)]
    for token in tokens:
        seal.open(token, CALL)
    for token in tokens[::100]:
        with pytest.raises(SealError, match="already used"):
            seal.open(token, CALL)


def _race(folder: str, token: str, results: multiprocessing.Queue[bool]) -> None:
    seal = CallSeal(SECRET, spent=FileSpent(Path(folder)))
    try:
        seal.open(token, CALL)
    except SealError:
        results.put(False)
    else:
        results.put(True)


def test_processes_racing_one_token_open_it_once(tmp_path: Path) -> None:
    token = CallSeal(SECRET, spent=MemorySpent()).seal(CALL)
    context = multiprocessing.get_context("spawn")
    results: multiprocessing.Queue[bool] = context.Queue()
    workers = [
        context.Process(target=_race, args=(str(tmp_path), token, results)) for _ in range(4)
    ]
    for worker in workers:
        worker.start()
    outcomes = [results.get(timeout=60) for _ in workers]
    for worker in workers:
        worker.join(timeout=60)
    assert sorted(outcomes) == [False, False, False, True]
