"""Reaching Ray from a host: one connection per process, and the host's executor actors.

``ray.init`` blocks for seconds (a local cluster starts its processes) and Ray's driver
state must stay with the thread that made it, so it runs in a thread of its own that stays
parked for the life of the process; the event loop only waits for it. A process already
connected to Ray (by its own ``ray.init``) is used as it is: one Ray connection per process.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import os
import socket
import threading
from collections.abc import Callable
from typing import Any, cast

import anyio
import anyio.lowlevel

from .config import ExecutorConfig

_log = logging.getLogger("harness.executor")

_lock = threading.Lock()
_connecting: concurrent.futures.Future[str] | None = None
"""The process's one connection attempt: its result is the cluster's address."""


class Unreachable(Exception):
    """The cluster or an executor cannot be reached; the message says what to do."""


def connect(config: ExecutorConfig) -> concurrent.futures.Future[str]:
    """Connect this process to Ray (once; again after a failed attempt)."""
    global _connecting
    with _lock:
        if _connecting is None or (_connecting.done() and _connecting.exception() is not None):
            _connecting = concurrent.futures.Future()
            thread = threading.Thread(
                target=_init, args=(config, _connecting), name="harness-ray", daemon=True
            )
            thread.start()
        return _connecting


def _init(config: ExecutorConfig, done: concurrent.futures.Future[str]) -> None:
    try:
        address = config.address
        if address == "local" or _loopback(address):
            # Loopback stays loopback: Ray otherwise binds (or rewrites 127.0.0.1 to) the
            # machine's network address. Ray reads this when it is first imported.
            os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        import ray

        if not ray.is_initialized():
            # Ray's start-up chatter (token notices, signal handlers) stays off the host's
            # stderr; its errors still show.
            logging.getLogger("ray").setLevel(logging.ERROR)
            if address == "local":
                ray.init(
                    num_cpus=config.local_cpus,
                    include_dashboard=False,
                    log_to_driver=False,
                    configure_logging=False,
                )
            else:
                _probe(address, config.connect_timeout)
                ray.init(address=address, log_to_driver=False, configure_logging=False)
        done.set_result(str(ray.get_runtime_context().gcs_address))
    except BaseException as exc:
        done.set_exception(exc)
        return
    threading.Event().wait()  # Ray's driver state stays with this thread: park it


def _loopback(address: str) -> bool:
    host = address.removeprefix("ray://").rpartition(":")[0].strip("[]")
    return host == "localhost" or host == "::1" or host.startswith("127.")


def _probe(address: str, seconds: float) -> None:
    """Fail fast when nothing listens at ``HOST:PORT`` (Ray itself retries for minutes)."""
    if address == "auto":
        return
    target = address.removeprefix("ray://")
    host, _, port = target.rpartition(":")
    if not host or not port.isdigit():
        raise Unreachable(f"address {address!r} is not HOST:PORT, ray://HOST:PORT, auto or local")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=seconds):
            pass
    except OSError as exc:
        raise Unreachable(f"nothing answers at {target} ({exc.strerror or exc})") from None


async def wait(future: concurrent.futures.Future[Any]) -> Any:
    """Await a future that another thread completes, on asyncio or trio."""
    if not future.done():
        native = anyio.lowlevel.current_token().native_token
        soon = cast(
            "Callable[[Callable[[], object]], object]",
            native.call_soon_threadsafe
            if isinstance(native, asyncio.AbstractEventLoop)
            else native.run_sync_soon,  # type: ignore[attr-defined]
        )
        event = anyio.Event()

        def notify(_: object) -> None:
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
                soon(event.set)

        future.add_done_callback(notify)
        await event.wait()
    return future.result()
