"""The events of one turn, handed to the caller as they happen."""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator
from typing import Any

import anyio


class TurnEvents:
    """The events of one turn, as an async iterator that ends after ``turn/end``."""

    def __init__(self) -> None:
        self._items: deque[dict[str, Any]] = deque()
        self._wake = anyio.Event()
        self.done = False

    def put(self, event: dict[str, Any]) -> None:
        self._items.append(event)
        self._wake.set()

    def close(self) -> None:
        self.done = True
        self._wake.set()

    def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        return self

    async def __anext__(self) -> dict[str, Any]:
        while not self._items:
            if self.done:
                raise StopAsyncIteration
            wake = self._wake
            await wake.wait()
            if wake is self._wake:
                self._wake = anyio.Event()
        return self._items.popleft()
