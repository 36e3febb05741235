"""Type-checking programs in one long-lived session, so that a check covers only the program.

Monty type-checks what is fed to a session with a checker (ty) that keeps, for the
session's life, what it built: typeshed's builtins, the modules a program imports, the
stubs. Built from scratch, that is 10 to 25 ms of a worker; reused, a program's check is
well under a millisecond. Programs cannot share a session to run in (they share no names),
but they can share one to be checked in, as long as nothing of theirs ever runs there.

So each entry keeps a checker: a worker of its own (beside the ``workers`` that run
programs) with one session, checked out for the current stubs and warmed at once by a
snippet that uses what programs use. Every program is fed to it with :data:`GUARD` after
its last line: a ``del`` statement, which type-checks but which Monty's parser refuses
(``NotImplementedError``) before anything runs. So the checker sees the whole program, at
its own line numbers; nothing of it runs; and, as the feed fails, Monty leaves it out of
the session's context for later checks (only snippets that ran to the end join it): every
program is checked as in a fresh session. ``tests/repository/test_private_apis.py`` pins that Monty
behaviour. Then the program runs in a session of the pool that skips the check.

New stubs (a tool added, reloaded, removed) get a new checker session, warmed in the
background; a checker whose worker died (or was killed by a program's clock running out in
the middle of a check) is replaced at the next program.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Coroutine
from typing import Any

import anyio
import pydantic_monty as monty

from ..errors import ToolArgsError
from .config import CodeConfig
from .names import CALL_TOOL
from .pool import Pool, Session

_log = logging.getLogger("harness.code")
Spawn = Callable[[Callable[[], Coroutine[Any, Any, Any]]], Callable[[], Any]]
"""Run a coroutine function in the background until the entry unloads."""

GUARD = "\ndel ()"
"""Fed after each program: type-checks, and Monty's parser refuses it before anything runs."""
REFUSED = "The monty syntax parser does not yet support"
"""How Monty's parser refuses a snippet, before running any of it (GUARD, or the program's own
syntax that Monty lacks: the session that runs it says so)."""

RENEW = 2000
"""Programs a checker session checks before a new one replaces it."""

WARM_UP = f"""\
import asyncio
import json
import math
import re


async def _warm(text: str, items: list[int], table: dict[str, int]) -> None:
    lines = text.splitlines()[1:]
    parts = [line.split(" | ")[0].strip().lower() for line in lines if line.count("x") > 3]
    joined = ", ".join(parts).replace("a", "b").startswith("c")
    total = sum(items) + len(items) + max(items) + round(math.sqrt(2), 2)
    pairs = sorted(zip(parts, items), key=lambda pair: pair[1], reverse=True)[:3]
    found = {{key: number for key, number in table.items() if number > 1}}
    matched = re.findall(r"\\w+", text)
    data = json.loads(json.dumps({{"a": [1, 2.5, None, True]}}))
    results = await asyncio.gather(*[{CALL_TOOL}("x", {{"a": 1}}) for _ in items])
    for index, result in enumerate(results):
        if isinstance(result, dict) and result.get("k") is not None:
            print(index, str(result["k"]), int("1"), float("2"))
    try:
        await {CALL_TOOL}("y")
    except Exception as exc:
        print(f"{{total:.1f}} {{joined}} {{pairs}} {{found}}", matched, data, str(exc))
"""
"""What programs commonly use, checked once per checker session (never run)."""


def warm_up(functions: list[str]) -> str:
    """The warm-up snippet for stubs whose tool functions are ``functions``."""
    if not functions:
        return WARM_UP
    return WARM_UP + f"    print([{', '.join(functions)}])\n"


class CheckerStopped(Exception):
    """Raised when the type checker's worker stops while it checks a program, twice."""


class Checker:
    """The type checker of one ``harness:code`` entry."""

    def __init__(self, config: CodeConfig, spawn: Spawn) -> None:
        self._pool = Pool(config.model_copy(update={"workers": 1}))
        self._spawn = spawn
        self._session: tuple[str, Session] | None = None
        """The checker session and the stubs it checks against."""
        self._lock = anyio.Lock()
        self._wanted: tuple[str, list[str]] | None = None
        """The stubs (and their tool functions) to have a warm session for."""
        self._warming = False
        self._started = False
        self._checks = 0
        """Programs checked by the current session."""
        self._old = False
        """Whether the current session has checked RENEW programs: the next gets a new one."""

    async def close(self) -> None:
        """Close the session and stop the checker's worker (the entry is unloading)."""
        self._wanted = None  # a warm-up under way stops after its step
        await self._drop()
        await self._pool.close()

    async def check(self, stubs: str, code: str) -> None:
        """Type-check ``code`` against ``stubs``; raise ToolArgsError with the checker's
        message when it does not type-check (or is not valid Python).

        A checker whose worker died is replaced and asked again, once; CheckerStopped when
        the new one stops too.
        """
        async with self._lock:
            for attempt in (1, 2):
                session = await self._session_for(stubs)
                try:
                    await session.step(_feed, session, code)
                    self._renew_if_old(stubs)
                    return
                except (monty.MontyTypingError, monty.MontySyntaxError) as exc:
                    raise ToolArgsError(checker_message(exc, code)) from None
                except Exception as exc:
                    await self._drop()  # its worker died (or its session is gone with it)
                    if attempt == 2:
                        raise CheckerStopped(
                            f"the type checker stopped while checking the program ({exc}); "
                            "it has been replaced, run the program again"
                        ) from None
                except BaseException:
                    await self._drop()  # cancelled mid-check: step() killed its worker
                    raise

    def _renew_if_old(self, stubs: str) -> None:
        """After RENEW checks, warm a new session for the next ones: the checker keeps a
        little of every program it checked (about half a kilobyte each)."""
        self._checks += 1
        if self._checks >= RENEW and self._wanted is not None and self._wanted[0] == stubs:
            self._checks = 0
            self._old = True
            self.prepare(*self._wanted)

    def prepare(self, stubs: str, functions: list[str]) -> None:
        """Have a warm session for ``stubs`` (in the background): the entry started, or its
        tools changed."""
        self._wanted = (stubs, functions)
        if not self._warming:
            self._warming = True
            self._spawn(self._warm)

    async def _warm(self) -> None:
        """Open the session for the wanted stubs, then check the warm-up snippet in it. The
        lock is let go in between: a program that came meanwhile is checked first (cold,
        as it would have been), rather than after the whole warm-up."""
        try:
            while (wanted := self._wanted) is not None:
                stubs, functions = wanted
                async with self._lock:
                    session = await self._session_for(stubs)
                async with self._lock:
                    if self._session is not None and self._session[1] is session:
                        try:
                            await session.step(_feed, session, warm_up(functions))
                        except monty.MontyTypingError as exc:  # checked all the same
                            _log.debug("the checker's warm-up does not type-check: %s", exc)
                if self._wanted is wanted:
                    return
        except Exception as exc:  # a crashed worker, say: the next program opens another
            _log.debug("could not warm the type checker: %s", exc)
            async with self._lock:
                await self._drop()
        finally:
            self._warming = False

    async def _session_for(self, stubs: str) -> Session:
        """The checker session for ``stubs``, opened if it is not there yet."""
        if self._session is not None:
            if self._session[0] == stubs and not self._session[1].killed and not self._old:
                return self._session[1]
            await self._drop()
        self._old, self._checks = False, 0
        if not self._started:
            await self._pool.start()
            self._started = True
        session = self._pool.session(stubs)
        await session.__aenter__()
        self._session = (stubs, session)
        return session

    async def _drop(self) -> None:
        old, self._session = self._session, None
        if old is not None:
            await old[1].__aexit__(None, None, None)


def guarded(code: str) -> tuple[str, int]:
    """``code`` with GUARD after its last line (blank lines at its end dropped, so the
    checker's excerpts show none that the program does not have), and GUARD's line."""
    code = code.rstrip("\r\n")
    return code + GUARD, code.count("\n") + 2


def _feed(session: Session, code: str) -> None:
    """In the session's thread: check ``code``, which Monty then refuses to run (GUARD)."""
    try:
        session.monty.feed_run(guarded(code)[0], print_callback=_discard)
    except monty.MontyRuntimeError as exc:
        if REFUSED not in str(exc):  # it ran: never, unless Monty changed (see GUARD)
            raise RuntimeError(f"the type checker ran a program: {exc}") from exc


def _discard(stream: str, text: str) -> None:
    """Where a checked program's output would go: nowhere (none is ever printed)."""


# The checker's notes about its own environment (the Python version it assumed, where it
# looked for modules, links to its docs, "added as a builtin"): not about the program.
_CHECKER_NOISE = re.compile(
    r"^info: (Python \d|make sure your Python environment|Searched in the following paths"
    r"|  \d+\. |`\w+` was added as a builtin)"
)


def checker_message(exc: monty.MontyError, code: str | None = None) -> str:
    """What a program that does not type-check (or parse) is told; with ``code``, the
    checker's excerpts of it leave out the GUARD line that followed it."""
    if isinstance(exc, monty.MontyTypingError):
        guard = None
        if code is not None:
            line = guarded(code)[1]
            guard = re.compile(rf"^ *{line} \| {re.escape(GUARD.strip())}$")
        lines = [
            line
            for line in exc.display().splitlines()
            if not _CHECKER_NOISE.match(line) and not (guard and guard.match(line))
        ]
        text = "\n".join(lines).strip()
        return f"the program does not type-check against the tool stubs:\n{text}"
    if isinstance(exc, monty.MontySyntaxError):
        return f"the program is not valid Python:\n{exc.display('traceback')}"
    return str(exc)
