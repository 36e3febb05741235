"""A console page as the server sees it: an open ``GET /api/events`` stream, read as it comes."""

from __future__ import annotations

import json
from types import TracebackType
from typing import Any

import anyio
import httpx2


class Page:
    """An open event stream of the console at ``base``, its events kept as they arrive.

    ``async with Page(base) as page`` returns once the server has answered with its ``hello``
    event, so the stream is open on the server's side too; leaving the block closes it.
    """

    def __init__(self, base: str) -> None:
        self.base = base
        self.events: list[dict[str, Any]] = []
        self._taken: set[int] = set()
        self._arrived = anyio.Event()
        self._group: Any = None
        self._http: httpx2.AsyncClient | None = None

    async def __aenter__(self) -> Page:
        self._http = httpx2.AsyncClient(base_url=self.base, timeout=60)
        self._group = anyio.create_task_group()
        await self._group.__aenter__()
        await self._group.start(self._read)
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._group.cancel_scope.cancel()
        await self._group.__aexit__(kind, error, trace)
        assert self._http is not None
        await self._http.aclose()

    async def _read(self, *, task_status: Any) -> None:
        assert self._http is not None
        async with self._http.stream("GET", "api/events") as response:
            assert response.status_code == 200, response.status_code
            fields: dict[str, str] = {}
            async for line in response.aiter_lines():
                if line == "":
                    if "data" in fields:
                        event = json.loads(fields["data"])
                        if event.get("type") == "hello":
                            task_status.started()
                        self.events.append(event)
                        self._arrived.set()
                        self._arrived = anyio.Event()
                    fields = {}
                elif not line.startswith(":"):
                    key, _, value = line.partition(": ")
                    fields[key] = value

    async def next(self, kind: str, seconds: float = 30, **match: Any) -> dict[str, Any]:
        """The first event of type ``kind`` whose fields include ``match`` that no earlier
        ``next`` returned (waiting for it)."""
        with anyio.fail_after(seconds):
            while True:
                for index, event in enumerate(self.events):
                    if (
                        index not in self._taken
                        and event.get("type") == kind
                        and all(event.get(key) == value for key, value in match.items())
                    ):
                        self._taken.add(index)
                        return event
                await self._arrived.wait()
