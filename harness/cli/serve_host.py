"""Serving a host from a terminal: ``harness run`` and ``harness mcp``, and what they print.

:func:`serve` enters a :class:`~harness.host.Host`, prints its entries and problems, serves
its tools over MCP (streamable HTTP, stdio, or not at all) and stops on SIGINT/SIGTERM.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import anyio
from rich.console import Console

from ..host import Host
from .logs import failures_reported
from .problem_report import report_problems
from .tables import status_table
from .token_notice import (
    needs_token,
    new_token,
    on_terminal,
    remove_token,
    token_lines,
    write_token,
)

if TYPE_CHECKING:
    from ..mcp.http.limits import HttpLimits


@dataclass(frozen=True)
class Serving:
    """How ``run`` serves MCP."""

    transport: str = "none"
    """``http``, ``stdio`` or ``none``."""
    bind: str = "127.0.0.1"
    port: int = 8765
    token: str | None = None
    web: bool = False
    """Serve the web console at ``/`` beside ``/mcp`` (HTTP only)."""
    allow_hosts: tuple[str, ...] = ()
    """Host names accepted beside the bind address's own (``--allow-host``)."""
    generated: bool = False
    """The token was made by this run (:mod:`.token_notice`), not given."""
    trusted_proxies: tuple[str, ...] = ()
    """Whose forwarded headers are believed (``--trust-proxy``): none by default."""
    sessions_per_client: int | None = None
    """MCP sessions one client may hold (``--sessions-per-client``); None: the default."""
    session_idle: float | None = None
    """Seconds an MCP session may idle (``--session-idle``); None: the default."""
    mcp_tools: str = "all"
    """``all``, or ``search``: serve ``search_tools``, ``call_tool`` and the kept tools."""

    def limits(self) -> HttpLimits:
        """The :class:`~harness.mcp.http.limits.HttpLimits` of these options."""
        from ..mcp.http.limits import HttpLimits

        limits = HttpLimits()
        if self.sessions_per_client is not None:
            limits = replace(limits, sessions_per_client=self.sessions_per_client)
        if self.session_idle is not None:
            limits = replace(limits, idle_session=self.session_idle)
        return limits


async def serve(host: Host, serving: Serving, *, table: bool, debug: bool) -> None:
    """Enter ``host`` and serve it until a signal (or, on stdio, until the client leaves)."""
    from ..mcp import check_bind  # the MCP SDK loads only for serving
    from ..tools.seal import check_state_env

    check_state_env(probe=True)  # a shared secret needs its shared folder: refused before loading
    token_file = None
    if serving.transport == "http":
        if needs_token(serving.bind, serving.token):  # a public bind gets one, not a refusal
            token = new_token()
            serving = replace(serving, token=token, generated=True)
            if not on_terminal():  # never into a log: into a file only this user reads
                token_file = write_token(host.config_path.absolute().parent, token)
        check_bind(serving.bind, serving.token)  # before loading anything
    if not debug:
        logging.getLogger("harness.reload").setLevel(logging.INFO)  # say what each reload did
        logging.getLogger("harness.plugin").setLevel(logging.INFO)  # and what plugins log
    err = Console(stderr=True)
    with contextlib.ExitStack() as stack:
        # with MCP on stdio, stdout belongs to the protocol: everything else goes to stderr
        wire = stack.enter_context(protocol_stdout()) if serving.transport == "stdio" else None
        if token_file is not None:
            stack.callback(remove_token, token_file, serving.token or "")
        await _serve(host, serving, table, err, wire, token_file)


async def _serve(
    host: Host,
    serving: Serving,
    table: bool,
    err: Console,
    wire: BinaryIO | None,
    token_file: Path | None,
) -> None:
    from ..mcp import McpSurface, TokenThrottle

    throttle = TokenThrottle()  # one count of wrong tokens for /mcp and the console
    tty = on_terminal()

    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with host:
            if table:
                # with MCP on stdio, stdout belongs to the protocol; the errors follow as
                # problems, with file and line
                Console(stderr=serving.transport == "stdio").print(
                    status_table(host.status(), with_tools=True, with_error=False)
                )
            report_problems(host.problems(), live=host.watch)
            failures_reported()  # a plugin failing from now on (a lost server) is logged
            console = None
            if serving.transport == "http" and serving.web:
                from ..web import WebConsole, console_app

                console = WebConsole(host)
                console.attach()  # before MCP's: approvals from the page are asked there
            surface = McpSurface(host.ctx, search=serving.mcp_tools == "search")
            surface.attach()
            if console is not None:
                console.tasks = surface.tasks  # the console's Tasks view
            async with anyio.create_task_group() as group:

                async def stop_on_signal() -> None:
                    async for _ in signals:
                        # before anything is cancelled: keyed work cut off by the stop stays
                        # in the store for the next start, as after kill -9 (docs/store.md)
                        host.ctx.mark_stopping()
                        if console is not None:
                            console.hub.drop_streams()  # open pages must not hold the exit
                        group.cancel_scope.cancel()
                        return

                def running() -> None:
                    if table:
                        count = len(host.tools.list())
                        err.print(
                            f"harness is running {count} tool(s); press Ctrl-C to stop",
                            highlight=False,
                        )

                def ready(url: str) -> None:
                    for line in token_lines(
                        url, serving.token, serving.generated, console is not None, tty, token_file
                    ):
                        err.print(line, highlight=False, soft_wrap=True)
                    running()  # only once the port is bound: a busy port prints just the error

                group.start_soon(stop_on_signal)
                if serving.transport == "http":
                    wrap = None
                    if console is not None:
                        web = console

                        def wrap(mcp_app: Any) -> Any:
                            return console_app(
                                web,
                                mcp_app,
                                serving.bind,
                                serving.token,
                                serving.allow_hosts,
                                throttle,
                            )

                    group.start_soon(
                        lambda: surface.serve_http(
                            serving.bind,
                            serving.port,
                            serving.token,
                            ready,
                            wrap,
                            serving.allow_hosts,
                            limits=serving.limits(),
                            throttle=throttle,
                            trusted_proxies=serving.trusted_proxies,
                        )
                    )
                elif serving.transport == "stdio":

                    async def stdio() -> None:
                        await surface.serve_stdio(wire)
                        host.ctx.mark_stopping()  # the client went away: the process ends
                        group.cancel_scope.cancel()

                    group.start_soon(stdio)
                if serving.transport != "http":
                    running()
        if table:
            err.print("harness stopped", highlight=False)


@contextlib.contextmanager
def protocol_stdout() -> Iterator[BinaryIO]:
    """Keep the real stdout for the MCP protocol alone while serving stdio.

    Yields a binary file on the original stdout; meanwhile file descriptor 1 and
    ``sys.stdout`` point at stderr, so a plugin's ``print()``, a C extension or a child
    process writing to stdout cannot corrupt the protocol stream (their output shows up
    on stderr instead). Everything is put back on exit.
    """
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    previous, sys.stdout = sys.stdout, sys.stderr
    try:
        with open(saved, "wb", buffering=0, closefd=False) as wire:
            yield wire
    finally:
        sys.stdout = previous
        os.dup2(saved, 1)
        os.close(saved)
