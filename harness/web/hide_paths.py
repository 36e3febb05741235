"""Error answers of the console name no file of this host by its absolute path.

An error's message often comes from deeper down (the loader, the session log, a policy file),
where an absolute path is what a person at the terminal needs; the console may be read from
another machine, where it tells how this one is laid out. :class:`HidePaths` rewrites every
answer with a status of 400 or more before it leaves: a path inside the project folder (the
one holding ``cordis.yml``) becomes relative to it (``cordis.yml:3``,
``.harness/sessions``), which still says where to look; any other absolute path of this host
is cut to its last name. A path is taken to be of this host when its first folder exists
here (``/tmp/...``, ``/home/...``), so the paths of the API echoed in a message
(``GET /api/nope``) stay as they were. JSON answers are rewritten value by value, so
escaping is kept; other text as it comes.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

_ABSOLUTE = re.compile(r"(?<![\w.~/\\-])(?:/|[A-Za-z]:\\)[^\s'\"`()<>,;]*")


def hide_paths(text: str, folder: Path) -> str:
    """``text`` without absolute paths of this host (see the module docstring)."""
    for root in dict.fromkeys((str(folder.absolute()), str(folder.resolve()))):
        if len(root) > 1:
            text = text.replace(root + os.sep, "").replace(root, ".")
    return _ABSOLUTE.sub(_name_only, text)


def _name_only(match: re.Match[str]) -> str:
    found = match.group(0)
    path = found.rstrip(".:")  # the end of a sentence, or file:line's colon
    parts = [part for part in re.split(r"[/\\]", path) if part]
    if not parts:
        return found
    first = parts[0] + "\\" if re.fullmatch(r"[A-Za-z]:", parts[0]) else "/" + parts[0]
    if not os.path.isdir(first):
        return found  # not a folder of this host: a URL path, say
    return parts[-1] + found[len(path) :]


class HidePaths:
    """ASGI middleware: error answers (status 400 and above) through :func:`hide_paths`."""

    def __init__(self, app: Any, folder: Path) -> None:
        self.app = app
        self.folder = folder

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("method") == "HEAD":  # HEAD: no body to read
            await self.app(scope, receive, send)
            return
        held: list[Any] = []
        body = bytearray()

        async def hide(message: Any) -> None:
            if message["type"] == "http.response.start" and message["status"] >= 400:
                held.append(message)
                return
            if not held or message["type"] != "http.response.body":
                await send(message)
                return
            body.extend(message.get("body", b""))
            if message.get("more_body"):
                return
            start = held[0]
            text = self._rewrite(bytes(body), start)
            headers = [
                (name, value)
                for name, value in start.get("headers", [])
                if name.lower() != b"content-length"
            ]
            headers.append((b"content-length", str(len(text)).encode()))
            await send({**start, "headers": headers})
            await send({"type": "http.response.body", "body": text})

        await self.app(scope, receive, hide)

    def _rewrite(self, body: bytes, start: Any) -> bytes:
        kind = dict(start.get("headers", [])).get(b"content-type", b"").decode("latin-1")
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            return body
        if kind.startswith("application/json"):
            try:
                value = json.loads(text)
            except ValueError:
                pass
            else:
                return json.dumps(self._rewrite_value(value), ensure_ascii=False).encode()
        return hide_paths(text, self.folder).encode()

    def _rewrite_value(self, value: Any) -> Any:
        if isinstance(value, str):
            return hide_paths(value, self.folder)
        if isinstance(value, list):
            return [self._rewrite_value(item) for item in value]
        if isinstance(value, dict):
            return {key: self._rewrite_value(item) for key, item in value.items()}
        return value
