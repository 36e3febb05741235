"""Driving one program: each suspension of the sandbox answered by the host.

The program runs in a Monty worker until it needs the host: a call of one of its tool
functions (answered with a future, so ``asyncio.gather`` can have several in flight), a
wait on those futures (answered as soon as one of them settles), a name it does not define
(a tool function read without being called, or nothing), or an OS call (files, environment,
clock), which Monty's default answer refuses. Every tool call goes to ``call`` — the full
pipeline, in the plugin — in its own task, at most ``max_parallel`` at once.

While the host side of a suspension waits on a person (one of the program's calls awaits an
approval, as its :class:`~.clock.Clock` tells), the program is parked: its state moves to
the host and its worker serves other programs until the wait is over
(:meth:`~.pool.Session.park`).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, Protocol, TypeVar

import anyio
import pydantic_monty as monty

from ..errors import ToolArgsError
from ..tools.calls import ToolResult
from .checker import checker_message
from .clock import Clock
from .config import CodeConfig, show_size
from .names import CALL_TOOL, is_free
from .pool import Session, TooLarge
from .results import Output, to_json, value_of

Call = Callable[[str, dict[str, Any], int], Awaitable[ToolResult]]
"""Run one inner call through the pipeline: (tool name, arguments, the sandbox's id of the
call: unique within the program, the same after a restore) to its result."""
Lookup = Callable[[str], list[str] | None]
"""A tool the program may call → its parameter names in positional order; None if not."""
T = TypeVar("T")

# The exception a failed call raises inside the program, by code: all are Exceptions, and
# the text always begins with the code.
EXCEPTIONS: dict[str, monty.ExcType] = {
    "denied": "PermissionError",
    "approval_pending": "PermissionError",
    "timeout": "TimeoutError",
    "invalid_args": "ValueError",
    "unknown_tool": "LookupError",
}


class ProgramFailed(Exception):
    """Raised when the program cannot finish; the message names the limit or the error."""


class Parking(Protocol):
    """Where a program goes while it waits for a person (:mod:`.parking`)."""

    limit: int
    """The longest snapshot dump kept, in bytes."""

    async def park(self, program: Program, wait: Wait) -> None:
        """The program is about to park (its calls ``wait``): raise ProgramFailed when it
        may not; else keep it, and return only when it has waited too long (raising
        ProgramFailed), or never (its wait ends first and cancels this)."""

    async def unparked(self, program: Program) -> None:
        """The program holds a worker again (or ended while parked): forget it."""


Wait = dict[str, Any]
"""What a parked program waits for: ``{"call": id}`` (a call it awaited at once) or
``{"future": [ids]}`` (any of the calls it gathered)."""


class Program:
    """One run of one program in one sandbox session."""

    def __init__(
        self,
        session: Session,
        config: CodeConfig,
        call: Call,
        lookup: Lookup,
        parallel: int,
        clock: Clock | None = None,
        parking: Parking | None = None,
    ) -> None:
        self.session = session
        self.clock = clock
        self.parking = parking
        self.config = config
        self.call = call
        self.lookup = lookup
        self.output = Output(config.max_output)
        self.calls = 0
        self._slots = anyio.Semaphore(parallel)
        self._settled: dict[int, monty.ExternalSettledResult] = {}
        self.pending: dict[int, tuple[str, dict[str, Any]]] = {}
        """The calls running now, by the sandbox's id: (tool, arguments); a sleep's tool is
        empty and its arguments ``{"seconds": s}``."""
        self.paused_at: float | None = None
        """When the program's current wait for a person began (``time.time()``)."""
        self._wake = anyio.Event()

    def state(self) -> dict[str, Any]:
        """What is kept beside a parked program's snapshot to resume it elsewhere: its
        calls running or settled, its output and call count (see :meth:`resume`)."""
        return {
            "pending": [[i, tool, args] for i, (tool, args) in self.pending.items()],
            "settled": [[i, settled] for i, settled in self._settled.items()],
            "output": [self.output.parts, self.output.kept, self.output.total],
            "calls": self.calls,
            "paused_at": self.paused_at,
        }

    async def run(self, code: str) -> Any:
        """Run ``code`` to its end: the value of its last expression.

        Raises ToolArgsError (syntax or type error) or ProgramFailed (anything else).
        """
        failure: Exception | None = None
        value: Any = None
        async with anyio.create_task_group() as group:
            try:
                value = await self._drive(group, code)
            except Exception as exc:  # raised after the calls still running are cancelled
                failure = self._failure(exc)
            group.cancel_scope.cancel()  # calls the program never awaited
        if failure is not None:
            raise failure
        return value

    async def resume(self, state: dict[str, Any], wait: Wait) -> Any:
        """Run on a program restored from its snapshot (its session starts parked) and
        ``state``: the calls that were running run again (through the journal, by their
        keys: one that ended is answered from it), and once what it waits for has settled
        it takes a worker and goes on from where it stopped. Raises as :meth:`run`."""
        parts, kept, total = state["output"]
        self.output.parts, self.output.kept, self.output.total = list(parts), kept, total
        self.calls = state["calls"]
        self.paused_at = state["paused_at"]
        self.pending = {i: (tool, args) for i, tool, args in state["pending"]}
        self._settled = {int(i): settled for i, settled in state["settled"]}
        failure: Exception | None = None
        value: Any = None
        async with anyio.create_task_group() as group:
            try:
                value = await self._drive(group, None, state, wait)
            except Exception as exc:
                failure = self._failure(exc)
            group.cancel_scope.cancel()
        if failure is not None:
            raise failure
        return value

    async def _drive(
        self,
        group: anyio.abc.TaskGroup,
        code: str | None,
        state: dict[str, Any] | None = None,
        wait: Wait | None = None,
    ) -> Any:
        if state is None or wait is None:
            snapshot: Any = await self.session.step(self._start, code)
        else:
            snapshot = await self._restored(group, state, wait)
        while not isinstance(snapshot, monty.MontyComplete):
            snapshot = await self._answer(group, snapshot)
        return snapshot.output

    async def _restored(self, group: anyio.abc.TaskGroup, state: dict[str, Any], wait: Wait) -> Any:
        """Start the calls a restored program had running; the snapshot it waits at, once
        what it waits for settled (it holds a worker again)."""
        eager = wait.get("call")
        for call_id, tool, args in state["pending"]:
            if call_id == eager:
                continue
            if tool:
                group.start_soon(self._run_call, call_id, tool, args)
            else:
                group.start_soon(self._run_sleep, call_id, float(args.get("seconds", 0.0)))
        clock = self.clock
        if clock is not None:  # its wait is for a person: the clock runs again after it
            clock.pause()
        try:
            if eager is not None:
                tool, args = next((t, a) for i, t, a in state["pending"] if i == eager)
                settled, snapshot = await self._wait(
                    None, wait, partial(self._settle, tool, args, eager)
                )
                return await self.session.step(self._resume_settled, snapshot, settled)
            waiting = list(wait["future"])
            _, snapshot = await self._wait(None, wait, partial(self._any_settled, waiting))
        finally:
            if clock is not None:
                clock.resume()
        ready = {i: self._settled.pop(i) for i in waiting if i in self._settled}
        return await self.session.step(snapshot.resume, ready)

    def _failure(self, exc: Exception) -> Exception:
        """What the run_code call fails with: invalid_args, or a message naming the limit."""
        if isinstance(exc, ToolArgsError | ProgramFailed):
            return exc
        if isinstance(exc, monty.MontySyntaxError | monty.MontyTypingError):
            return ToolArgsError(checker_message(exc))
        if isinstance(exc, monty.MontyRuntimeError):
            return ProgramFailed(self._runtime_message(exc))
        if isinstance(exc, monty.MontyCrashedError):
            return ProgramFailed(
                f"the sandbox worker stopped ({exc}); it has been replaced, run the program again"
                + self._so_far()
            )
        if isinstance(exc, monty.MontyError):
            return ProgramFailed(f"the sandbox failed: {exc}" + self._so_far())
        return exc

    def _start(self, code: str) -> Any:
        # Checked already, by the entry's checker (.checker): this session only runs it.
        return self.session.monty.feed_start(
            code, print_callback=self.output.write, skip_type_check=True
        )

    async def _answer(self, group: anyio.abc.TaskGroup, snapshot: Any) -> Any:
        step = self.session.step
        if isinstance(snapshot, monty.FunctionSnapshot):
            if snapshot.is_os_function:
                if snapshot.function_name in _SLEEPS:
                    return await self._sleep(group, snapshot)
                return await step(snapshot.resume_not_handled)
            name = str(snapshot.function_name)
            problem: monty.ExternalSettledResult | None = None
            if name == CALL_TOOL:
                target, args = _call_tool_args(snapshot.args, snapshot.kwargs)
                if self.lookup(target) is None:
                    problem = {
                        "exc_type": "LookupError",
                        "message": f"unknown_tool: no tool {target!r} may be called from "
                        "this program",
                    }
            else:
                target, params = name, self.lookup(name)
                if params is None:
                    return await step(
                        snapshot.resume,
                        {"exc_type": "NameError", "message": f"name {name!r} is not defined"},
                    )
                args, wrong = _bind(name, params, snapshot.args, snapshot.kwargs)
                if wrong is not None:
                    problem = {"exc_type": "TypeError", "message": wrong}
            self.calls += 1
            if self.calls > self.config.max_calls:
                raise ProgramFailed(
                    f"the program made more than {self.config.max_calls} tool calls "
                    f"(max_calls); it was stopped at call {self.calls} ({target})" + self._so_far()
                )
            if problem is not None:
                return await step(snapshot.resume, problem)
            call_id = snapshot.call_id
            if snapshot.allow_eager_await:
                # Awaited at once, with no other sandbox task able to run: the program can
                # only wait for this call, so the host runs it first and hands the sandbox
                # its future and the result in one step instead of two.
                self.pending[call_id] = (target, args)
                settled, snapshot = await self._wait(
                    snapshot, {"call": call_id}, partial(self._settle, target, args, call_id)
                )
                return await step(self._resume_settled, snapshot, settled)
            self.pending[call_id] = (target, args)
            group.start_soon(self._run_call, call_id, target, args)
            return await step(snapshot.resume, {"future": ...})
        if isinstance(snapshot, monty.FutureSnapshot):
            waiting = snapshot.pending_call_ids
            _, snapshot = await self._wait(
                snapshot, {"future": list(waiting)}, partial(self._any_settled, waiting)
            )
            ready = {i: self._settled.pop(i) for i in waiting if i in self._settled}
            return await step(snapshot.resume, ready)
        if isinstance(snapshot, monty.NameLookupSnapshot):
            name = snapshot.variable_name
            # A tool under a name the program already has is no function (call_tool reaches it)
            if name == CALL_TOOL or (is_free(name) and self.lookup(name) is not None):
                return await step(lambda: snapshot.resume(value=_function(name)))
            return await step(snapshot.resume)
        raise ProgramFailed(f"the sandbox stopped at an unexpected point ({snapshot!r})")

    async def _wait(
        self, snapshot: Any, wait: Wait, host: Callable[[], Awaitable[T]]
    ) -> tuple[T, Any]:
        """Run ``host``, the host's side of ``snapshot`` (which waits for ``wait``); park the
        program if one of its calls waits for an approval meanwhile (a restored program
        starts parked: ``snapshot`` None). Returns what ``host`` did and the snapshot to
        resume (restored on a worker again if the program was parked)."""
        clock = self.clock
        if clock is None:
            return await host(), snapshot
        session = self.session
        failed: list[Exception] = []
        try:
            async with anyio.create_task_group() as group:

                async def park_when_asked() -> None:
                    await clock.asked()
                    try:
                        await self._park(snapshot, wait)
                    except ProgramFailed as exc:  # not parked, or parked too long
                        failed.append(exc)
                        group.cancel_scope.cancel()

                group.start_soon(park_when_asked)
                done = await host()
                group.cancel_scope.cancel()
            if failed:
                raise failed[0]
            if session.parked:
                snapshot = await session.unpark(self.output.write)
        finally:
            if self.paused_at is not None and self.parking is not None:
                self.paused_at = None
                with anyio.CancelScope(shield=True):
                    await self.parking.unparked(self)
        return done, snapshot

    async def _park(self, snapshot: Any, wait: Wait) -> None:
        """Park the program while its call waits (its state to the host, or the store)."""
        parking = self.parking
        if parking is None:
            if not self.session.parked:
                await self.session.park(snapshot, 1 << 62)
            await anyio.sleep_forever()
            return
        if self.paused_at is None:
            self.paused_at = time.time()
        if not self.session.parked:
            try:
                await self.session.park(snapshot, parking.limit)
            except TooLarge as exc:
                raise ProgramFailed(
                    f"the program's state ({show_size(exc.size)}) is larger than max_snapshot "
                    f"({show_size(parking.limit)}), so it cannot wait for an approval "
                    "without holding a sandbox worker; it was stopped: keep less in its "
                    "variables, or raise max_snapshot" + self._so_far()
                ) from None
        await parking.park(self, wait)

    def _resume_settled(
        self, snapshot: monty.FunctionSnapshot, settled: monty.ExternalSettledResult
    ) -> Any:
        """In the session's thread: answer a call with its future, then the future."""
        call_id = snapshot.call_id
        waiting = snapshot.resume({"future": ...})
        if isinstance(waiting, monty.FutureSnapshot) and call_id in waiting.pending_call_ids:
            return waiting.resume({call_id: settled})
        self._settled[call_id] = settled  # not awaited after all: the wait finds it settled
        return waiting

    async def _settle(
        self, name: str, args: dict[str, Any], call_id: int
    ) -> monty.ExternalSettledResult:
        """Run one call (within max_parallel): its value, or the exception it raises."""
        try:
            self._slots.acquire_nowait()  # a free slot costs no pass through the event loop
        except anyio.WouldBlock:
            await self._slots.acquire()
        try:
            result = await self.call(name, args, call_id)
        finally:
            self._slots.release()
        self.pending.pop(call_id, None)
        if result.ok:
            return {"return_value": value_of(result)}
        code = result.code or "tool_error"
        return {
            "exc_type": EXCEPTIONS.get(code, "RuntimeError"),
            "message": f"{code}: {result.error}",
        }

    async def _any_settled(self, waiting: list[int]) -> None:
        while not any(call_id in self._settled for call_id in waiting):
            self._wake = anyio.Event()
            await self._wake.wait()

    async def _run_call(self, call_id: int, name: str, args: dict[str, Any]) -> None:
        self.pending[call_id] = (name, args)
        self._settled[call_id] = await self._settle(name, args, call_id)
        self._wake.set()

    async def _sleep(self, group: anyio.abc.TaskGroup, snapshot: monty.FunctionSnapshot) -> Any:
        """``time.sleep`` and ``asyncio.sleep``: the host waits, on the program's clock (a
        sleep counts against ``timeout``); an async sleep not awaited at once is a future,
        as a tool call is, so ``asyncio.gather`` overlaps it with calls and other sleeps."""
        seconds = _seconds(snapshot.args)
        if _SLEEPS[snapshot.function_name] and not snapshot.allow_eager_await:
            group.start_soon(self._run_sleep, snapshot.call_id, seconds)
            return await self.session.step(snapshot.resume, {"future": ...})
        await anyio.sleep(seconds)
        return await self.session.step(snapshot.resume, {"return_value": None})

    async def _run_sleep(self, call_id: int, seconds: float) -> None:
        self.pending[call_id] = ("", {"seconds": seconds})
        await anyio.sleep(seconds)
        self.pending.pop(call_id, None)
        self._settled[call_id] = {"return_value": None}
        self._wake.set()

    def _runtime_message(self, exc: monty.MontyRuntimeError) -> str:
        text = exc.display("type-msg")
        config = self.config
        if text.startswith("TimeoutError: feed time limit exceeded"):
            why = f"the program ran out of time: timeout ({config.timeout:g} seconds) exceeded"
        elif text.startswith("MemoryError: memory limit exceeded"):
            why = (
                f"the program ran out of memory: max_memory ({show_size(config.max_memory)}) "
                f"exceeded ({text.partition(': ')[2]})"
            )
        elif text.startswith("RecursionError"):
            why = f"the program recursed too deep: max_recursion ({config.max_recursion}) exceeded"
        elif "suspension limit" in text:
            why = f"the program made too many tool calls (max_calls {config.max_calls})"
        else:
            why = f"the program raised an exception:\n{exc.display('traceback')}"
        return why + self._so_far()

    def _so_far(self) -> str:
        printed = self.output.text()
        if not printed:
            return ""
        return f"\nOutput before it stopped:\n{printed}"


_SLEEPS = {"system.sleep": False, "time.sleep": False}
_SLEEPS.update({"system.async_sleep": True, "asyncio.sleep": True})
"""The OS calls that sleep: name → whether the program awaits it (asyncio.sleep)."""


def _seconds(args: tuple[Any, ...]) -> float:
    """A sleep's length (Monty passes a float); anything else, negative or NaN is none."""
    value = args[0] if args else 0.0
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    return float(value) if value > 0 else 0.0


def _call_tool_args(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    values = list(args)
    name = kwargs.get("name", values.pop(0) if values else "")
    given = kwargs.get("args", values.pop(0) if values else None)
    return str(name), to_json(given) if isinstance(given, dict) else {}


def _bind(
    name: str, params: list[str], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[dict[str, Any], str | None]:
    """Positional and keyword arguments as the tool's argument object (None means absent)."""
    if len(args) > len(params):
        return {}, f"{name}() takes {len(params)} positional arguments but {len(args)} were given"
    bound: dict[str, Any] = dict(zip(params, args, strict=False))
    for key, value in kwargs.items():
        if key in bound:
            return {}, f"{name}() got multiple values for argument {key!r}"
        bound[key] = value
    return {k: to_json(v) for k, v in bound.items() if v is not None}, None


def _function(name: str) -> Callable[..., None]:
    """A stand-in the sandbox holds for a tool function read as a value (``f = tool``).

    Calling it comes back to the host as a call of ``name``; the sandbox sees a plain
    function with no attributes to reach the host through.
    """

    def function(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("never called: the host answers calls of tool functions itself")

    function.__name__ = function.__qualname__ = name
    return function
