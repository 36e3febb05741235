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

from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, TypeVar

import anyio
import pydantic_monty as monty

from ..errors import ToolArgsError
from ..tools.calls import ToolResult
from .checker import checker_message
from .clock import Clock
from .config import CodeConfig, show_size
from .names import CALL_TOOL, is_free
from .pool import Session
from .results import Output, to_json, value_of

Call = Callable[[str, dict[str, Any]], Awaitable[ToolResult]]
"""Run one inner call through the pipeline: (tool name, arguments) to its result."""
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
    ) -> None:
        self.session = session
        self.clock = clock
        self.config = config
        self.call = call
        self.lookup = lookup
        self.output = Output(config.max_output)
        self.calls = 0
        self._slots = anyio.Semaphore(parallel)
        self._settled: dict[int, monty.ExternalSettledResult] = {}
        self._wake = anyio.Event()

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

    async def _drive(self, group: anyio.abc.TaskGroup, code: str) -> Any:
        snapshot: Any = await self.session.step(self._start, code)
        while not isinstance(snapshot, monty.MontyComplete):
            snapshot = await self._answer(group, snapshot)
        return snapshot.output

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
            if snapshot.allow_eager_await:
                # Awaited at once, with no other sandbox task able to run: the program can
                # only wait for this call, so the host runs it first and hands the sandbox
                # its future and the result in one step instead of two.
                settled, snapshot = await self._wait(snapshot, partial(self._settle, target, args))
                return await step(self._resume_settled, snapshot, settled)
            group.start_soon(self._run_call, snapshot.call_id, target, args)
            return await step(snapshot.resume, {"future": ...})
        if isinstance(snapshot, monty.FutureSnapshot):
            waiting = snapshot.pending_call_ids
            _, snapshot = await self._wait(snapshot, partial(self._any_settled, waiting))
            ready = {i: self._settled.pop(i) for i in waiting if i in self._settled}
            return await step(snapshot.resume, ready)
        if isinstance(snapshot, monty.NameLookupSnapshot):
            name = snapshot.variable_name
            # A tool under a name the program already has is no function (call_tool reaches it)
            if name == CALL_TOOL or (is_free(name) and self.lookup(name) is not None):
                return await step(lambda: snapshot.resume(value=_function(name)))
            return await step(snapshot.resume)
        raise ProgramFailed(f"the sandbox stopped at an unexpected point ({snapshot!r})")

    async def _wait(self, snapshot: Any, host: Callable[[], Awaitable[T]]) -> tuple[T, Any]:
        """Run ``host``, the host's side of ``snapshot``; park the program if one of its calls
        waits for an approval meanwhile. Returns what ``host`` did and the snapshot to resume
        (restored on a worker again if the program was parked)."""
        clock = self.clock
        if clock is None:
            return await host(), snapshot
        session = self.session
        async with anyio.create_task_group() as group:

            async def park_when_asked() -> None:
                await clock.asked()
                await session.park(snapshot)

            group.start_soon(park_when_asked)
            done = await host()
            group.cancel_scope.cancel()
        if session.parked:
            snapshot = await session.unpark(self.output.write)
        return done, snapshot

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

    async def _settle(self, name: str, args: dict[str, Any]) -> monty.ExternalSettledResult:
        """Run one call (within max_parallel): its value, or the exception it raises."""
        try:
            self._slots.acquire_nowait()  # a free slot costs no pass through the event loop
        except anyio.WouldBlock:
            await self._slots.acquire()
        try:
            result = await self.call(name, args)
        finally:
            self._slots.release()
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
        self._settled[call_id] = await self._settle(name, args)
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
        await anyio.sleep(seconds)
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
