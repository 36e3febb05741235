"""Who is subscribed to which resource URI, counted across every surface and client.

A surface calls :meth:`Subscriptions.subscribe` for each client's ``resources/subscribe``
(or URI of a 2026-07-28 listen stream) and :meth:`~Subscriptions.unsubscribe` when it
leaves or disconnects. The resource serving the URI hears of the first subscriber and of
the last one leaving (its ``watch``), once however many clients subscribe: the gateway
subscribes upstream then. The last one's leaving goes to the resource serving the URI at
that moment (a re-registered one, after a reload). A URI nothing serves is counted all the
same (a subscription to a resource that may appear later), as MCP allows. Each URI is
locked on its own (:class:`UriLocks`): a resource slow to hear of a subscriber holds up
only that URI's subscribers.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import anyio

from ..errors import HarnessError

if TYPE_CHECKING:
    from .define import ResourceDefinition
    from .service import ResourcesService

_log = logging.getLogger("harness.resources")


@dataclass
class _Held:
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    users: int = 0
    """Tasks holding or waiting for the lock."""


class UriLocks:
    """A lock per URI, kept only while a task holds or waits for it."""

    def __init__(self) -> None:
        self._held: dict[str, _Held] = {}

    @contextlib.asynccontextmanager
    async def hold(self, uri: str) -> AsyncIterator[None]:
        """Hold ``uri``'s lock (waiting for the task that holds it, if any)."""
        held = self._held.get(uri)
        if held is None:
            held = self._held[uri] = _Held()
        held.users += 1
        try:
            async with held.lock:
                yield
        finally:
            held.users -= 1
            if held.users == 0:
                del self._held[uri]

    def __len__(self) -> int:
        """URIs locked or waited for now."""
        return len(self._held)


class Subscriptions:
    """Subscriber counts per URI, and the resource told of each one's first and last."""

    def __init__(self, service: ResourcesService) -> None:
        self.service = service
        self.counts: dict[str, int] = {}
        """URI → its subscribers (only URIs with some)."""
        self._locks = UriLocks()
        """One URI's first subscriber and last one leaving at a time; other URIs meanwhile."""

    async def subscribe(self, uri: str) -> None:
        """One more subscriber of ``uri``; the first is announced to its resource, and
        when that fails the subscriber is not counted and the error is raised."""
        async with self._locks.hold(uri):
            if self.counts.get(uri, 0) == 0:
                definition = self._watcher(uri)
                if definition is not None and definition.watch is not None:
                    await definition.watch(uri, True)
            self.counts[uri] = self.counts.get(uri, 0) + 1

    async def unsubscribe(self, uri: str) -> None:
        """One subscriber of ``uri`` fewer (none left: a no-op); the last one's leaving is
        announced to the resource serving it (its failure only logged)."""
        async with self._locks.hold(uri):
            count = self.counts.get(uri, 0)
            if count == 0:
                return
            if count > 1:
                self.counts[uri] = count - 1
                return
            del self.counts[uri]
            definition = self._watcher(uri)
            if definition is None or definition.watch is None:
                return
            try:
                await definition.watch(uri, False)
            except Exception as exc:
                _log.warning("unsubscribing from resource %r failed: %s", uri, exc)

    def _watcher(self, uri: str) -> ResourceDefinition | None:
        try:
            found = self.service.find(uri)
        except HarnessError:  # a template refusing a value: nothing serves it
            return None
        return found[0] if found is not None else None
