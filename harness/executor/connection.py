"""Reaching Ray from a host: one connection per process, and the host's executor actors.

``ray.init`` blocks for seconds (a local cluster starts its processes) and Ray's driver
state must stay with the thread that made it, so it runs in a thread of its own that stays
parked for the life of the process (``ray.shutdown`` runs there too); the event loop only
waits for it. A process already connected to Ray (by its own ``ray.init``) is used as it
is: one Ray connection per process.

A cluster head that goes away does not end the host (Ray's driver would, after 60 s):
harness raises Ray's wait to :data:`HEAD_WAIT`, and :func:`head_gone` tells a failed call
that the head no longer answers, ending the lost connection so that the next call reconnects.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import os
import queue
import socket
import threading
from collections.abc import Callable
from typing import Any, cast

import anyio
import anyio.lowlevel
import anyio.to_thread

from .config import ExecutorConfig

_log = logging.getLogger("harness.executor")

HEAD_WAIT = 10 * 365 * 86400
"""Seconds this process's Ray driver waits for a lost cluster head before Ray ends the
process (Ray's ``gcs_rpc_server_reconnect_timeout_s``, 60 by default): set so high that Ray
never does; harness notices the loss itself (:func:`head_gone`) and fails the calls."""

_lock = threading.Lock()
_connecting: concurrent.futures.Future[str] | None = None
"""The process's one connection attempt: its result is the cluster's address."""
_owned = False
"""Whether harness made the connection (and may end it), or found the process connected."""
_generation = 0
"""Counts the connections harness ended: executors of an earlier one are gone."""
_driver: queue.SimpleQueue[Callable[[], None]] | None = None
"""Work for the one thread that holds Ray's driver state (``ray.init``, ``ray.shutdown``)."""


class Unreachable(Exception):
    """The cluster or an executor cannot be reached; the message says what to do."""


def generation() -> int:
    """The current connection's number; it changes when harness ends a lost connection."""
    return _generation


def connect(config: ExecutorConfig) -> concurrent.futures.Future[str]:
    """Connect this process to Ray (once; again after a failed attempt or a lost head)."""
    global _connecting
    with _lock:
        if _connecting is None or (_connecting.done() and _connecting.exception() is not None):
            done: concurrent.futures.Future[str] = concurrent.futures.Future()
            _connecting = done
            _on_driver(lambda: _init(config, done))
        return _connecting


def _on_driver(work: Callable[[], None]) -> None:
    """Run ``work`` on the driver thread (started once, parked for the process's life)."""
    global _driver
    if _driver is None:
        _driver = queue.SimpleQueue()
        threading.Thread(target=_serve, args=(_driver,), name="harness-ray", daemon=True).start()
    _driver.put(work)


def _serve(work: queue.SimpleQueue[Callable[[], None]]) -> None:
    while True:
        work.get()()


def _init(config: ExecutorConfig, done: concurrent.futures.Future[str]) -> None:
    global _owned
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
            # A lost head must not end the host: Ray reads this at ray.init (a value the
            # environment already sets is kept).
            os.environ.setdefault("RAY_gcs_rpc_server_reconnect_timeout_s", str(HEAD_WAIT))
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
            _owned = True
        done.set_result(str(ray.get_runtime_context().gcs_address))
    except BaseException as exc:
        done.set_exception(exc)


async def head_gone(seconds: float) -> str | None:
    """Why the connected cluster's head no longer answers, or None while it does.

    When it is gone and harness made the connection, the connection is ended (on the driver
    thread) so that the next :func:`connect` starts anew: executors of the old one are gone.
    """
    global _connecting, _generation
    with _lock:
        connecting = _connecting
    if connecting is None or not connecting.done() or connecting.exception() is not None:
        return None
    address = connecting.result()
    try:
        await anyio.to_thread.run_sync(_probe, address, seconds)
    except Unreachable as exc:
        reason = str(exc)
    else:
        return None
    with _lock:
        if _connecting is connecting and _owned:
            _connecting = None
            _generation += 1
            _on_driver(_shutdown)
    return reason


def _shutdown() -> None:
    global _owned
    import ray

    try:
        ray.shutdown()
    except Exception as exc:  # the head is gone already: nothing else to end
        _log.warning("ending the lost Ray connection: %s", exc)
    _owned = False


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
