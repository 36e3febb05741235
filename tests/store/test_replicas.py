"""Two ``harness run`` replicas on one real PostgreSQL store (Debian's ``postgresql``, a
cluster of the test's own): a call started on one is answered on the other. While the first
replica runs it, the repeat waits for its result; once the first is ``kill -9``-ed, the
other answers ``interrupted`` (the effect happened once), answers a finished call from the
journal without running it, and runs an idempotent call again, once. An approval pending on
a replica that dies is listed by the other, and answering it there runs the call once."""

from __future__ import annotations

import contextlib
import secrets
from pathlib import Path

import anyio
import httpx2
import pytest

from ..processes import start_harness_run, stop
from ..web.page import Page
from .postgres import Postgres
from .test_restart import (
    cut_off,
    effects,
    environment,
    kill_9,
    over_http,
    over_mcp,
    project,
    written,
)

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the SDK's HTTP client runs on asyncio


async def test_a_call_started_on_one_replica_is_finished_on_the_other(
    tmp_path: Path, postgres: Postgres
) -> None:
    url = postgres.create_database(f"replicas_{secrets.token_hex(4)}")
    folder = project(tmp_path, url)
    a, port_a = start_harness_run(folder, environment())
    b, port_b = start_harness_run(folder, environment(), web=True)
    try:
        # while replica a runs a call, its repeat through b waits for a's result
        (folder / "hold").touch()
        answers: dict[str, tuple[bool, str]] = {}
        b_answered = anyio.Event()
        async with over_mcp(port_a) as on_a, over_http(port_b) as on_b:

            async def through_a() -> None:
                answers["a"] = await on_a("charge", 1, "live")

            async def through_b() -> None:
                answers["b"] = await on_b("charge", 1, "live")
                b_answered.set()

            async with anyio.create_task_group() as group:
                group.start_soon(through_a)
                await written(folder, "charge 1")
                group.start_soon(through_b)
                with anyio.move_on_after(1):  # b knows a is alive: it does not answer alone
                    await b_answered.wait()
                assert answers == {}
                (folder / "hold").unlink()
        assert answers == {"a": (False, "charged 1"), "b": (False, "charged 1")}

        # replica a is killed inside two calls; b answers for it
        await cut_off(over_mcp, a, port_a, folder)
        (folder / "hold").unlink()
        async with over_http(port_b) as on_b:
            interrupted = await on_b("charge", 5, "order-5")
            finished = await on_b("charge", 7, "order-7")
            again = await on_b("reserve", 3, "seat-3")
    finally:
        stop(a)
        stop(b)
    assert interrupted == (
        True,
        "interrupted: the host stopped while this call ran; it may or may not have taken effect",
    )
    assert finished == (False, "charged 7")
    assert again == (False, "reserved 3")
    # charge 5 and reserve 3 ran at once (their lines in either order); reserve 3 ran again
    assert sorted(effects(folder)) == ["charge 1", "charge 5", "charge 7", "reserve 3", "reserve 3"]


async def test_an_approval_pending_on_a_dead_replica_is_answered_on_the_other(
    tmp_path: Path, postgres: Postgres
) -> None:
    url = postgres.create_database(f"approvals_{secrets.token_hex(4)}")
    folder = project(tmp_path, url, ask=True)
    a, port_a = start_harness_run(folder, environment(), web=True)
    b, port_b = start_harness_run(folder, environment(), web=True)
    asked: dict[str, object] = {}
    try:
        with contextlib.suppress(Exception):  # a's client fails as a dies
            async with (
                Page(f"http://127.0.0.1:{port_a}/") as page,
                over_http(port_a) as on_a,
                anyio.create_task_group() as group,
            ):
                group.start_soon(on_a, "charge", 5, "order-5")
                asked = await page.next("approval/request", name="charge")
                kill_9(a)
                group.cancel_scope.cancel()
        async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{port_b}", timeout=30) as http:
            with anyio.fail_after(20):  # b adopts it within its sweep
                while True:
                    listed = (await http.get("/api/approvals")).json()
                    if listed:
                        break
                    await anyio.sleep(0.1)
            assert [(item["id"], item["args"]) for item in listed] == [(asked["id"], {"amount": 5})]
            answered = await http.post(
                f"/api/approvals/{asked['id']}", json={"decision": "allow_once"}
            )
            assert answered.status_code == 200, answered.text
            await written(folder, "charge 5")
        async with over_http(port_b) as on_b:
            assert await on_b("charge", 5, "order-5") == (False, "charged 5")
    finally:
        kill_9(a)
        stop(b)
    assert effects(folder) == ["charge 5"]
