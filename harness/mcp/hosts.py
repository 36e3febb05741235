"""Where the MCP HTTP server may listen, and which ``Host`` names it answers to.

Standard library only, so the CLI can check a bind address before the MCP SDK loads.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
from collections.abc import Sequence

from ..errors import HarnessError


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and localhost."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """Refuse to listen beyond this machine without a bearer token."""
    if not is_loopback(host) and not token:
        raise HarnessError(
            f"refusing to serve MCP on {host}, which other machines can reach, without "
            "--token; pass --token SECRET (clients then send Authorization: Bearer SECRET) "
            "or bind to 127.0.0.1"
        )


def allowed_hosts(host: str, extra: Sequence[str] = ()) -> list[str]:
    """The ``Host`` header values accepted (``name:*``), derived from the bind address.

    Loopback names always; a specific address itself; for a wildcard bind (``0.0.0.0``,
    ``::``) this machine's host name, its fully qualified name and its addresses; plus every
    ``extra`` name (``--allow-host``: a DNS name or a proxy's, say).
    """
    names = {"127.0.0.1", "localhost", "[::1]"}
    if host in ("0.0.0.0", "::", ""):
        names.update(machine_names(ipv6=host == "::"))
    elif not is_loopback(host):
        names.add(host)
    names.update(name.strip() for name in extra if name.strip())
    return sorted({_host_pattern(name) for name in names})


def _host_pattern(name: str) -> str:
    """``name:*``, or ``name:port`` as given; IPv6 literals in brackets."""
    if name.startswith("["):
        return name if "]:" in name else f"{name}:*"
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        base, _, port = name.rpartition(":")
        return name if base and port.isdigit() else f"{name}:*"
    return f"[{address}]:*" if address.version == 6 else f"{address}:*"


def machine_names(ipv6: bool = False) -> set[str]:
    """This machine's host names and addresses (what clients on the network may use)."""
    names = {socket.gethostname(), socket.getfqdn()}
    families = (socket.AF_INET, socket.AF_INET6) if ipv6 else (socket.AF_INET,)
    for family in families:
        with contextlib.suppress(OSError):
            for *_, address in socket.getaddrinfo(socket.gethostname(), None, family):
                names.add(str(address[0]))
        # the address of the default route: a UDP "connection" sends nothing
        probe = "192.0.2.1" if family == socket.AF_INET else "2001:db8::1"
        with contextlib.suppress(OSError), socket.socket(family, socket.SOCK_DGRAM) as udp:
            udp.connect((probe, 9))
            names.add(str(udp.getsockname()[0]))
    return {name for name in names if name and not name.startswith("fe80")}


def url_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def trusted_proxies(values: Sequence[str]) -> tuple[str, ...]:
    """The proxies whose ``X-Forwarded-For`` and ``X-Forwarded-Proto`` are believed
    (``--trust-proxy``): each value an IP address or network, several may be given in one
    value separated by commas or spaces. Raises :class:`HarnessError` naming a value that is
    neither (a host name is not accepted: the check is made on the peer's address)."""
    found: list[str] = []
    for value in values:
        for part in value.replace(",", " ").split():
            try:
                network = ipaddress.ip_network(part.strip("[]"), strict=False)
            except ValueError:
                raise HarnessError(
                    f"--trust-proxy {part!r} is not an IP address or network: give the "
                    "address your reverse proxy connects from, say 127.0.0.1 or 10.0.0.0/8"
                ) from None
            if str(network) not in found:
                found.append(str(network))
    return tuple(found)
