"""``harness run`` and ``harness mcp``: serve the tools until Ctrl-C (:mod:`.serve_host`)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from functools import partial
from typing import Any

import click

from . import otel
from .options import common, options_of


def _proxies(ctx: click.Context, param: click.Parameter, values: Any) -> tuple[str, ...]:
    from ..errors import HarnessError
    from ..mcp.hosts import trusted_proxies

    try:
        return trusted_proxies(values or ())
    except HarnessError as exc:
        raise click.BadParameter(str(exc)) from None


def mcp_tools_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """``--mcp-tools``: serve every tool, or search for them (docs/search.md)."""
    return click.option(
        "--mcp-tools",
        type=click.Choice(["all", "search"]),
        default="all",
        show_default=True,
        help="Serve every tool over MCP, or only search_tools, call_tool and the tools "
        "search.keep keeps (for thousands of tools).",
    )(func)


def mcp_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The options of serving MCP over HTTP."""
    func = click.option(
        "--session-idle",
        type=click.FloatRange(min=1),
        envvar="HARNESS_SESSION_IDLE",
        metavar="SECONDS",
        help="Close an MCP session after this long with no request in flight (an open "
        "event stream counts as one); it then stops counting for its client "
        "(default 120).",
    )(func)
    func = click.option(
        "--sessions-per-client",
        type=click.IntRange(min=1),
        envvar="HARNESS_SESSIONS_PER_CLIENT",
        metavar="N",
        help="MCP sessions one client address may hold at once; a further initialize gets "
        "429 (default 64).",
    )(func)
    func = click.option(
        "--trust-proxy",
        "trusted_proxies",
        multiple=True,
        metavar="ADDRESS",
        envvar="HARNESS_TRUST_PROXY",
        callback=_proxies,
        help="Believe X-Forwarded-For and X-Forwarded-Proto from this reverse proxy (an IP "
        "address or network; repeatable). Without it no forwarded header is believed: "
        "clients count by the address they connect from.",
    )(func)
    func = click.option(
        "--allow-host",
        "allow_hosts",
        multiple=True,
        metavar="NAME",
        help="Also accept requests for this host name (repeatable; e.g. a DNS name or a "
        "proxy's). The bind address's own names are always accepted.",
    )(func)
    func = click.option(
        "--token",
        envvar="HARNESS_MCP_TOKEN",
        metavar="SECRET",
        help="Require Authorization: Bearer SECRET (needed to bind beyond loopback).",
    )(func)
    func = click.option(
        "--port", type=int, default=8765, show_default=True, help="HTTP port (0: any)."
    )(func)
    func = click.option(
        "--host", "bind", default="127.0.0.1", show_default=True, help="HTTP address."
    )(func)
    return func


@click.command()
@common
@click.option("--no-watch", is_flag=True, help="Do not hot-reload on file changes.")
@click.option(
    "--mcp",
    "transport",
    type=click.Choice(["http", "stdio", "none"]),
    default="http",
    show_default=True,
    help="Serve the tools over MCP: streamable HTTP at /mcp, stdio, or not at all.",
)
@mcp_options
@mcp_tools_option
@click.option("--no-web", is_flag=True, help="Do not serve the web console at / (HTTP only).")
@click.option(
    "--demo",
    is_flag=True,
    help="Use the demo model: scripted rules, not a language model (no key needed).",
)
@click.pass_context
def run(
    ctx: click.Context,
    /,
    no_watch: bool,
    transport: str,
    bind: str,
    port: int,
    token: str | None,
    allow_hosts: tuple[str, ...],
    trusted_proxies: tuple[str, ...],
    sessions_per_client: int | None,
    session_idle: float | None,
    mcp_tools: str,
    no_web: bool,
    demo: bool,
    **shared: Any,
) -> None:
    """Start the host: load, print the entries and their tools, serve until Ctrl-C."""
    import anyio

    from .serve_host import Serving, serve

    options = options_of(ctx, **shared)
    serving = Serving(
        transport,
        bind,
        port,
        token,
        web=not no_web,
        allow_hosts=allow_hosts,
        trusted_proxies=trusted_proxies,
        sessions_per_client=sessions_per_client,
        session_idle=session_idle,
        mcp_tools=mcp_tools,
    )
    stop_traces = otel.setup()  # OTLP export when the OTEL_* variables ask for it
    try:
        with contextlib.ExitStack() as stack:
            if demo:
                from .demo import banner, demo_options

                options, info = stack.enter_context(demo_options(options))
                for line in banner(info):
                    click.echo(line, err=True)
            host = options.host(watch=not no_watch)
            anyio.run(partial(serve, host, serving, table=True, debug=options.debug))
    finally:
        stop_traces()


@click.command(name="mcp")
@common
@click.option("--no-watch", is_flag=True, help="Do not hot-reload on file changes.")
@mcp_tools_option
@click.pass_context
def mcp_command(ctx: click.Context, /, no_watch: bool, mcp_tools: str, **shared: Any) -> None:
    """Serve the tools over MCP on stdin/stdout (for MCP client configs)."""
    import anyio

    from .serve_host import Serving, serve

    options = options_of(ctx, **shared)
    host = options.host(watch=not no_watch)
    stop_traces = otel.setup()
    try:
        anyio.run(
            partial(
                serve, host, Serving("stdio", mcp_tools=mcp_tools), table=False, debug=options.debug
            )
        )
    finally:
        stop_traces()
