"""The bearer token of ``harness run``: made when a public bind has none, shown only safely.

A token is a password: what ``harness run`` prints to its stderr often ends in a log (a
systemd journal, ``docker logs``, a CI transcript), so the token is printed only when stderr
is a terminal. Otherwise the console's URL is printed without it, followed by where the
token is: the ``--token`` / ``HARNESS_MCP_TOKEN`` the user gave, or, for one generated here,
the file ``.harness/token`` beside the config (mode 0600), removed when harness stops.

A bind beyond loopback without a token gets a generated one (``secrets.token_urlsafe(32)``,
256 bits) instead of a refusal: every client then needs it, and nothing guessable protects
the port.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import sys
from pathlib import Path

from ..errors import HarnessError
from ..mcp.hosts import is_loopback

TOKEN_FILE = Path(".harness") / "token"
"""Where a generated token is written, relative to the config's folder."""


def needs_token(bind: str, token: str | None) -> bool:
    """Whether serving HTTP on ``bind`` needs a token made for it (beyond loopback, none given)."""
    return not token and not is_loopback(bind)


def new_token() -> str:
    """A token nobody guesses: 32 random bytes, URL-safe."""
    return secrets.token_urlsafe(32)


def on_terminal() -> bool:
    """Whether stderr is a terminal (a person reads it; no log keeps it)."""
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def write_token(folder: Path, token: str) -> Path:
    """Write a generated token to ``folder/.harness/token``, readable by this user only."""
    path = folder / TOKEN_FILE
    temporary = path.with_name(f".token-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            with os.fdopen(fd, "w") as file:
                file.write(token + "\n")
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
    except OSError as exc:
        raise HarnessError(
            f"cannot write the token generated for this run to {path} ({exc.strerror}); "
            "pass --token SECRET (or set HARNESS_MCP_TOKEN), or run harness in a terminal"
        ) from None
    return path


def remove_token(path: Path, token: str) -> None:
    """Remove the token file if it still holds ``token`` (another run may have replaced it)."""
    with contextlib.suppress(OSError):
        if path.read_text().strip() == token:
            path.unlink()


def token_lines(
    url: str, token: str | None, generated: bool, web: bool, tty: bool, file: Path | None
) -> list[str]:
    """What ``harness run`` prints once it serves at ``url`` (the MCP endpoint's)."""
    lines = [f"serving MCP at {url}"]
    page = url.removesuffix("mcp")
    if not token:
        return [*lines, f"web console at {page}"] if web else lines
    if tty:
        if web:
            lines.append(f"web console at {page}?token={token}")
        if generated:
            lines.append(
                "no --token was given for a bind beyond loopback, so this run made one: "
                f"{token} (MCP clients send Authorization: Bearer {token})"
            )
        return lines
    if generated:
        where = f"the token this run made is in {file} (readable by you only)"
    else:
        where = "the token is the value of --token / HARNESS_MCP_TOKEN"
    if web:
        lines.append(f"web console at {page} (add ?token=<token> to open it: {where})")
    elif generated:
        lines.append(f"MCP clients send Authorization: Bearer <token>: {where}")
    return lines
