"""A pending approval survives a ``kill -9`` of ``harness run``: after the restart it is
listed again (``GET /api/approvals``, same id), and answering it runs the call once, whose
result the client's repeat of its key then reads from the journal."""

from __future__ import annotations

import contextlib
from pathlib import Path

import anyio
import httpx2
import pytest

from ..processes import start_harness_run, stop
from ..web.page import Page
from .test_restart import effects, environment, kill_9, over_http, project, written

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the console's HTTP client here runs on asyncio


async def test_an_approval_pending_at_kill_9_is_asked_again_and_runs_the_call_once(
    tmp_path: Path,
) -> None:
    folder = project(tmp_path, ask=True)
    process, port = start_harness_run(folder, environment(), web=True)
    base = f"http://127.0.0.1:{port}/"
    asked: dict[str, object] = {}
    try:
        # the call waits for a person (a console page is open); the process dies meanwhile
        with contextlib.suppress(Exception):
            async with (
                Page(base) as page,
                over_http(port) as call,
                anyio.create_task_group() as group,
            ):
                group.start_soon(call, "charge", 5, "order-5")
                asked = await page.next("approval/request", name="charge")
                kill_9(process)
                group.cancel_scope.cancel()
    finally:
        kill_9(process)
    assert asked["args"] == {"amount": 5}
    assert effects(folder) == []

    process, port = start_harness_run(folder, environment(), web=True)
    try:
        async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
            listed = (await http.get("/api/approvals")).json()
            assert [(item["id"], item["name"], item["args"]) for item in listed] == [
                (asked["id"], "charge", {"amount": 5})
            ]
            answered = await http.post(
                f"/api/approvals/{asked['id']}", json={"decision": "allow_once"}
            )
            assert answered.status_code == 200, answered.text
            await written(folder, "charge 5")  # the approved call runs
            assert (await http.get("/api/approvals")).json() == []
        async with over_http(port) as call:
            # the client's repeat: not asked again, answered from the journal
            assert await call("charge", 5, "order-5") == (False, "charged 5")
    finally:
        stop(process)
    assert effects(folder) == ["charge 5"]
