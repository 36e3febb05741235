"""``harness call --key``: a repeat of the key is answered from the journal, in another
process, without running again; the same key with other arguments is refused."""

from __future__ import annotations

import json
from pathlib import Path

from ..helpers import run_harness
from .test_restart import effects, project


def test_harness_call_with_a_key_runs_once(tmp_path: Path) -> None:
    folder = project(tmp_path)
    outputs = [
        run_harness("call", "charge", '{"amount": 2}', "--key", "cli-1", "--json", cwd=folder)
        for _ in range(2)
    ]
    for done in outputs:
        assert done.returncode == 0, done.stdout + done.stderr
        assert json.loads(done.stdout)["result"] == "charged 2"
    assert effects(folder) == ["charge 2"]
    other = run_harness("call", "charge", '{"amount": 3}', "--key", "cli-1", cwd=folder)
    assert other.returncode == 1
    assert "the idempotency key 'cli-1' was used for other arguments" in other.stdout + other.stderr
    assert effects(folder) == ["charge 2"]
