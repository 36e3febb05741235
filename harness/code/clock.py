"""A program's clock: its ``timeout`` counts the time it runs, not a person's answer.

The clock runs from the ``run_code`` call's start (the wait for a free worker and the type
check included) and stops while one or more of the program's calls wait for an answer: an
approval, or the inner tool's own question, sampling or roots request. Such a wait is
bounded by its own timeout instead. Calls gathered alongside a waiting one go on meanwhile,
unmetered. The clock is the deadline of the cancel scope the program runs in: moved away
while it is paused, set again to what is left when it runs on.

The program's inner calls learn of the clock through their context: their client is a
:class:`ProgramClient`, the program's own client (so they ask whoever the program would
ask, and nobody else) that pauses the clock around every wait for an answer.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import anyio

from ..tools.call_context import CallContext, Client
from ..tools.inputs import Input


class Clock:
    """``budget`` seconds of running time, paused while approvals are awaited."""

    def __init__(self, budget: float, spent: float = 0.0) -> None:
        self.budget = budget
        self._spent = spent
        """Seconds run before (a program restored from its snapshot: its runs so far)."""
        self._since: float | None = anyio.current_time()
        self._waiting = 0
        self.scope = anyio.CancelScope(deadline=self._since + budget - spent)
        """Run the program in it; ``scope.cancelled_caught`` says the budget was spent."""
        self._paused = anyio.Event()
        """Set (and replaced) when the clock stops."""

    def pause(self) -> None:
        """An approval of one of the program's calls is awaited."""
        self._waiting += 1
        if self._since is not None:
            self._spent += anyio.current_time() - self._since
            self._since = None
            self.scope.deadline = math.inf
            self._paused.set()
            self._paused = anyio.Event()

    def resume(self) -> None:
        """An awaited approval was decided; the clock runs again once none is awaited."""
        if self._waiting == 0:
            return
        self._waiting -= 1
        if self._waiting == 0:
            self._since = anyio.current_time()
            self.scope.deadline = self._since + self.budget - self._spent

    async def asked(self) -> None:
        """Return once one of the program's calls waits for an approval (at once if one
        does now)."""
        while self._waiting == 0:
            await self._paused.wait()

    @property
    def ran_out(self) -> bool:
        """Whether the budget was spent (the scope the program ran in was cancelled)."""
        return self.scope.cancelled_caught

    def spent(self) -> float:
        """Seconds of running time so far."""
        running = 0.0 if self._since is None else anyio.current_time() - self._since
        return self._spent + running


class ProgramClient(Client):
    """The client of a program's inner calls: the program's ``client``, answering as it
    does, with ``clock`` paused while an answer is awaited."""

    def __init__(self, client: Client, clock: Clock) -> None:
        super().__init__(client.id)
        self.client = client
        self.clock = clock
        self.asks = client.asks

    async def answer(self, ctx: CallContext, requests: Mapping[str, Input]) -> dict[str, Any]:
        with self.waiting(ctx):
            return await self.client.answer(ctx, requests)

    def approver(self, ctx: CallContext) -> Any:
        return self.client.approver(ctx)

    @contextmanager
    def waiting(self, ctx: CallContext) -> Iterator[None]:
        self.clock.pause()
        try:
            with self.client.waiting(ctx):
                yield
        finally:
            self.clock.resume()

    async def progress(
        self, ctx: CallContext, done: float, total: float | None, message: str | None
    ) -> None:
        await self.client.progress(ctx, done, total, message)

    async def log(self, ctx: CallContext, level: str, message: str, data: dict[str, Any]) -> None:
        await self.client.log(ctx, level, message, data)

    def __getattr__(self, name: str) -> Any:
        if name == "client":  # not set yet (a copy being made): no loop through here
            raise AttributeError(name)
        return getattr(self.client, name)  # what a surface's own client adds
