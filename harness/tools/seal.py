"""Sealed tokens that bind an approval to one call, safe to hand to a client and to replicas.

``CallSeal.seal(call)`` returns ``v1.<payload>.<mac>``: the payload names the tool, a digest of
the canonical arguments (:func:`call_key`), a random nonce, an expiry and, when given, a JSON
value the server needs back (an MCP ``requestState``'s answers so far); the MAC is
HMAC-SHA256 under ``HARNESS_SECRET``, so every replica given the same secret opens the tokens
of the others, and an edited token, or one moved to another call, opens nowhere.

A token opens once. Its nonce is spent in a :class:`SpentNonces` set: this process's memory,
or, when ``HARNESS_STATE_DIR`` names a folder the replicas share, one file per nonce created
with ``O_CREAT | O_EXCL`` — the file system decides which replica spent it first, so a
replayed token is refused by every replica. Expired nonces are swept from the folder; the
expiry (``ttl``, ten minutes) bounds how long either set remembers.

A secret without a folder is refused (:func:`check_state_env`, ``ConfigError``): the secret
exists to be shared by replicas, and each replica's memory would accept a replayed token once.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import heapq
import hmac
import json
import logging
import math
import os
import secrets
import time
from pathlib import Path
from typing import Any, Protocol

from ..errors import ConfigError
from .calls import ToolCall

__all__ = [
    "CallSeal",
    "FileSpent",
    "MemorySpent",
    "SealError",
    "SpentNonces",
    "call_key",
    "check_state_env",
]

_log = logging.getLogger("harness.approval")
MAX_TOKEN = 2 * 1024 * 1024
"""The longest token :meth:`CallSeal.open` reads (a payload of recorded answers included)."""
STATE_DIR = "HARNESS_STATE_DIR"
SECRET = "HARNESS_SECRET"


def call_key(call: ToolCall) -> str:
    """The tool name and canonical arguments of ``call`` (sorted keys, no spaces)."""
    args = call.args
    if isinstance(args, str | bytes):
        with contextlib.suppress(ValueError):
            args = json.loads(args)
    try:
        canonical = json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    except (TypeError, ValueError):
        canonical = repr(args)
    return json.dumps([call.name, canonical], ensure_ascii=True)


class SealError(Exception):
    """A sealed token failed verification; the message says why (for the log and the model)."""


class SpentNonces(Protocol):
    """Where used nonces are remembered until they expire."""

    def spend(self, nonce: str, expires: float, now: float) -> bool:
        """Record ``nonce``; False when it was spent before (by any process sharing this set)."""
        ...


class MemorySpent:
    """This process's spent nonces (what replicas without a shared folder have).

    Only unexpired nonces are kept: a heap orders them by expiry, and each spend first drops
    those past it, so a spend costs O(log n) amortised and memory is bounded by the tokens
    issued within one expiry window (only server-sealed tokens reach the set).
    """

    def __init__(self) -> None:
        self._spent: dict[str, float] = {}
        self._expiry: list[tuple[float, str]] = []

    def __len__(self) -> int:
        """How many unexpired nonces are held."""
        return len(self._spent)

    def spend(self, nonce: str, expires: float, now: float) -> bool:
        expiry, spent = self._expiry, self._spent
        while expiry and expiry[0][0] <= now:
            until, old = heapq.heappop(expiry)
            if spent.get(old) == until:
                del spent[old]
        if nonce in spent:
            return False
        spent[nonce] = expires
        heapq.heappush(expiry, (expires, nonce))
        return True


class FileSpent:
    """Spent nonces as files in ``folder`` (``<state dir>/spent-approvals``), shared by replicas.

    A nonce's file is created with ``O_CREAT | O_EXCL``, which exactly one process wins; its
    modification time is set to the nonce's expiry, and files past it are swept at most once
    a minute. A folder that cannot be written fails closed: the token opens nowhere.
    """

    SWEEP_EVERY = 60.0

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._swept = 0.0

    def spend(self, nonce: str, expires: float, now: float) -> bool:
        # the nonce came out of a verified payload; hashing it keeps file names plain anyway
        path = self.folder / hashlib.sha256(nonce.encode()).hexdigest()[:40]
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            return False
        except OSError as exc:
            raise SealError(
                f"cannot record the approval as used in {self.folder} ({exc.strerror}); "
                f"check {STATE_DIR}"
            ) from None
        try:
            os.close(fd)
            os.utime(path, (expires, expires))
        except OSError as exc:  # recorded all the same: the file exists
            _log.warning("cannot set the expiry of %s: %s", path, exc)
        if now - self._swept > self.SWEEP_EVERY:
            self._swept = now
            self._sweep(now)
        return True

    def _sweep(self, now: float) -> None:
        with contextlib.suppress(OSError):
            for entry in os.scandir(self.folder):
                with contextlib.suppress(OSError):
                    if entry.stat().st_mtime <= now:
                        os.unlink(entry.path)


def check_state_env(probe: bool = False) -> Path | None:
    """The spent-approvals folder ``$HARNESS_STATE_DIR`` names, or None without one.

    Raises :class:`~harness.errors.ConfigError` when ``HARNESS_SECRET`` is set without it,
    and, with ``probe``, when the folder cannot be created or written (checked by creating
    and removing a file, as a spend would).
    """
    folder = os.environ.get(STATE_DIR)
    if not folder:
        if os.environ.get(SECRET):
            raise ConfigError(
                f"{SECRET} is set but {STATE_DIR} is not: replicas sharing the secret would "
                "each accept a replayed approval once more, since each would remember the "
                f"used ones only in its own memory; set {STATE_DIR} to a folder every replica "
                f"can write (the same folder for all of them), or unset {SECRET} to serve "
                "from one process (docs/distributed.md)"
            )
        return None
    spent = Path(folder).expanduser() / "spent-approvals"
    if probe:
        probe_file = spent / f".probe-{os.getpid()}-{secrets.token_hex(4)}"
        try:
            spent.mkdir(parents=True, exist_ok=True)
            os.close(os.open(probe_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            os.unlink(probe_file)
        except OSError as exc:
            raise ConfigError(
                f"{STATE_DIR}={folder!r} cannot hold the used approvals: {spent} cannot be "
                f"written ({exc.strerror}); point {STATE_DIR} at a folder every replica can "
                "write"
            ) from None
    return spent


def spent_from_env() -> SpentNonces:
    """A :class:`FileSpent` under ``$HARNESS_STATE_DIR`` when it is set, else memory.

    Refuses ``HARNESS_SECRET`` without ``HARNESS_STATE_DIR`` (:func:`check_state_env`).
    """
    folder = check_state_env()
    return FileSpent(folder) if folder is not None else MemorySpent()


def _secret() -> bytes:
    value = os.environ.get(SECRET)
    if value:
        return value.encode("utf-8", "surrogatepass")
    return secrets.token_bytes(32)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class CallSeal:
    """Tokens that carry an approval question for one call, safe to hand to a client.

    ``secret`` defaults to ``HARNESS_SECRET`` (else a random secret made when this object is);
    ``spent`` to :func:`spent_from_env`. ``open(token, call)`` verifies a token against the
    call being resumed and spends its nonce, so a token opens once across every replica that
    shares the spent set.
    """

    def __init__(
        self, secret: bytes | None = None, ttl: float = 600.0, spent: SpentNonces | None = None
    ) -> None:
        if not (math.isfinite(ttl) and ttl > 0):
            raise ValueError(f"ttl must be a positive number of seconds, got {ttl!r}")
        self._key = hashlib.sha256(b"harness/call-seal/v1" + (secret or _secret())).digest()
        self.ttl = ttl
        self.spent = spent if spent is not None else spent_from_env()

    def seal(self, call: ToolCall, purpose: str = "approval", payload: Any = None) -> str:
        """A token binding ``purpose`` (and ``payload``, any JSON value, which :meth:`open`
        returns) to ``call``'s name and arguments."""
        digest = hashlib.sha256(call_key(call).encode()).hexdigest()
        claims = {
            "v": 1,
            "p": purpose,
            "t": call.name,
            "a": digest,
            "n": secrets.token_urlsafe(16),
            "e": time.time() + self.ttl,
        }
        if payload is not None:
            claims["d"] = payload
        body = json.dumps(
            claims,
            separators=(",", ":"),
            sort_keys=True,
            ensure_ascii=True,
        ).encode()
        encoded = _b64(body)
        return f"v1.{encoded}.{_b64(self._mac(encoded))}"

    def open(self, token: object, call: ToolCall, purpose: str = "approval") -> Any:
        """Check ``token`` was sealed for ``call`` and is unspent, spend it, and return its
        payload (None without one); raise :class:`SealError`."""
        noun = "approval state" if purpose == "approval" else "requestState"
        if not isinstance(token, str) or len(token) > MAX_TOKEN:
            raise SealError(f"the {noun} is not one this server issued")
        parts = token.split(".")
        if len(parts) != 3 or parts[0] != "v1":
            raise SealError(f"the {noun} is not one this server issued")
        # The MAC is compared in its encoded form: base64's last character carries padding
        # bits a decoder ignores, so comparing decoded bytes would accept an edited token.
        if not hmac.compare_digest(parts[2].encode(), _b64(self._mac(parts[1])).encode()):
            raise SealError(f"the {noun} was altered or not issued by this server")
        try:
            claims = json.loads(_unb64(parts[1]))
        except (ValueError, binascii.Error):
            raise SealError(f"the {noun} is not one this server issued") from None
        if not isinstance(claims, dict) or claims.get("v") != 1 or claims.get("p") != purpose:
            raise SealError(f"the {noun} is not one this server issued")
        now = time.time()
        expires = claims.get("e")
        if not isinstance(expires, int | float) or not now < expires:
            raise SealError(f"the {noun} has expired; call the tool again")
        digest = hashlib.sha256(call_key(call).encode()).hexdigest()
        if claims.get("t") != call.name or not hmac.compare_digest(str(claims.get("a")), digest):
            raise SealError(f"the {noun} was issued for another call (tool or arguments differ)")
        if not self.spent.spend(str(claims.get("n")), float(expires), now):
            raise SealError(f"the {noun} was already used; call the tool again")
        return claims.get("d")

    def _mac(self, body: str) -> bytes:
        return hmac.new(self._key, body.encode(), hashlib.sha256).digest()
