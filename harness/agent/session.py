"""A conversation: its event log and the turn loop.

A turn starts with a user message and runs steps: each step sends the system prompt, the
history and the visible tools' schemas, streams the answer, and runs the tool calls it asks
for through the pipeline (``tools.execute_many``, results in the model's order). It ends
``done`` (an answer without tool calls), ``max_steps`` (after the wrap-up request made with
the model may not call tools), ``cancelled`` or ``error``. One turn runs at a time; messages sent
meanwhile wait their turn. Every event is logged, published to the turn's reader and
emitted as ``agent/event``.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from ..llm.base import (
    AssistantMessage,
    ChatRequest,
    Completion,
    LLMError,
    RequestedCall,
    UserMessage,
)
from ..service import unwrap
from ..tools import jsonvalue, traces
from ..tools.call_context import CallContext
from ..tools.calls import ToolCall, ToolResult
from ..tools.finding import SEARCH_TOOL
from . import spans
from .client import AgentClient, model_label
from .history import arguments_of, history_of, normal_call, tool_message
from .log import now
from .resume import OpenTurn, open_turn
from .turn_events import TurnEvents

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from ..context import Context
    from ..llm.base import LLM
    from ..tools.approval_requests import Approvals
    from ..tools.inputs import Root
    from .deferral import RequestTools

_log = logging.getLogger("harness.agent")

WRAP_UP = (
    "[harness] This turn has used its step budget: do not call tools now. Answer the user "
    "with what you found so far, and say what is left to do."
)


class Agent(Protocol):
    """What a session needs of the agent service."""

    ctx: Context
    approvals: Approvals
    system_prompt: str
    running: dict[int, Any]
    roots: list[Root]

    @property
    def max_steps(self) -> int: ...

    @property
    def llm(self) -> LLM: ...

    def visible_tools(self) -> dict[str, dict[str, Any]]: ...

    def request_tools(self, loaded: Sequence[str]) -> RequestTools: ...


class Writer(Protocol):
    """Where a session's events are recorded: a JSONL log (:class:`.log.LogWriter`) or the
    store (:class:`.stored_sessions.StoreWriter`)."""

    resumable: bool
    """Whether a turn left open is finished by the next process (a store), so a turn the
    host's stop cuts off is left open there, as ``kill -9`` leaves it."""

    def append(self, event: dict[str, Any]) -> None: ...

    def running(self, turn: int | None) -> None: ...

    async def flush(self) -> None: ...

    def close(self) -> None: ...


@dataclass
class Run:
    """One call of a step, as the pipeline runs it."""

    call: ToolCall
    scope: anyio.CancelScope | None = None
    cancelled: bool = False
    started: float = 0.0
    ended: float = 0.0
    result: ToolResult | None = None


@dataclass
class _Step:
    turn: int
    step: int
    text: list[str] = field(default_factory=list)
    answered: bool = False
    calls: list[RequestedCall] = field(default_factory=list)
    runs: dict[str, Run] = field(default_factory=dict)
    early: dict[str, ToolResult] = field(default_factory=dict)
    reported: set[str] = field(default_factory=set)


class Session:
    """One conversation with the agent (``agent.session()``)."""

    def __init__(
        self,
        agent: Agent,
        session_id: str,
        events: list[dict[str, Any]],
        writer: Writer,
        repair: bool = True,
    ) -> None:
        self.agent = agent
        self.id = session_id
        self.events = events
        """Every logged event of the session, oldest first (deltas are not logged)."""
        self.history = history_of(events)
        self.client = AgentClient(self)
        """Who answers its calls' inputs and shows their progress and logs (the context's
        client, :mod:`.client`)."""
        self._writer = writer
        self._seq = max((int(e.get("seq") or 0) for e in events), default=0)
        self._turns = sum(1 for e in events if e.get("type") == "turn/start")
        self._queue: deque[tuple[str, TurnEvents]] = deque()
        self._working = False
        self._sink: TurnEvents | None = None
        self._scope: anyio.CancelScope | None = None
        self._step: _Step | None = None
        self._closed = False
        self._span: spans.TurnSpan | None = None
        self._answer = ""
        self.loaded: list[str] = [
            name
            for event in events
            if event.get("type") == "tools/loaded"
            for name in event.get("names") or ()
        ]
        """The tools searches of this session found, in order: sent with every later
        request while deferral is on (``tools/loaded`` events in the log)."""
        if repair:
            self._repair()

    # -- public ----------------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        """True while a turn runs or waits."""
        return self._working

    def send(self, text: str) -> TurnEvents:
        """Queue a user message; iterate the result for the events of its turn."""
        if self._closed:
            raise RuntimeError(f"session {self.id} is closed")
        sink = TurnEvents()
        self._queue.append((str(text), sink))
        if not self._working:
            self._working = True
            self.agent.ctx.start_soon(self._work)
        return sink

    def cancel(self) -> bool:
        """Cancel the running turn (its stream and calls); False when none runs."""
        if self._scope is None:
            return False
        self._scope.cancel()
        return True

    def cancel_call(self, call_id: str) -> bool:
        """Cancel one call of the running step; False when it is not running or waiting."""
        step = self._step
        run = None if step is None else step.runs.get(call_id)
        if run is None or run.result is not None:
            return False
        if self.agent.approvals.cancel(call_id, self.id):
            return True
        run.cancelled = True
        if run.scope is not None:
            run.scope.cancel()
        return True

    def record(self, kind: str, **fields: Any) -> dict[str, Any]:
        """Log and publish one event."""
        self._seq += 1
        event = {"seq": self._seq, "time": now(), "type": kind, "session": self.id, **fields}
        if not jsonvalue.is_json(event):  # a program's call may carry an int too long to write
            event = jsonvalue.printable(event)
        self.events.append(event)
        if kind == "tool/result":  # a progress report still held back is stale now
            self.client.shown.end(str(fields.get("id")))
        try:
            self._writer.append(event)
        except OSError as exc:
            _log.error("cannot append to the log of session %s: %s", self.id, exc)
        self._publish(event)
        return event

    def stream(self, kind: str, **fields: Any) -> None:
        """Publish one event to the session's readers without logging it (``tool/progress``,
        as ``assistant/delta``)."""
        self._publish({"type": kind, "session": self.id, **fields})

    def reload(self, events: list[dict[str, Any]]) -> None:
        """Take the log as another process left it (it ran this session's turn meanwhile);
        only while no turn runs here."""
        self.events = events
        self.history = history_of(events)
        self._seq = max((int(e.get("seq") or 0) for e in events), default=0)
        self._turns = sum(1 for e in events if e.get("type") == "turn/start")
        self.loaded = [
            name
            for event in events
            if event.get("type") == "tools/loaded"
            for name in event.get("names") or ()
        ]

    @property
    def seq(self) -> int:
        """The ``seq`` of its last event (0: none yet)."""
        return self._seq

    def catch_up(self, events: list[dict[str, Any]]) -> None:
        """Take the events another process appended to the log after :attr:`seq` (it ran a
        turn of this session meanwhile); only while no turn runs here."""
        newer = [event for event in events if int(event.get("seq") or 0) > self._seq]
        if newer:
            self.reload([*self.events, *newer])

    def resume(self, adopt: Callable[[], Awaitable[bool | None]]) -> None:
        """Finish the turn the log leaves open (cut off by a restart) once ``adopt()`` says
        this process takes it over (True); close it as cut off when no process was marked
        running it (None); leave it to the live process that runs it (False). Messages sent
        meanwhile wait their turn."""
        if self._closed:
            return
        self._working = True
        self.agent.ctx.start_soon(self._work, adopt)

    def close(self) -> None:
        self._closed = True
        self.cancel()
        self._writer.close()

    # -- the loop --------------------------------------------------------------------------

    def _publish(self, event: dict[str, Any]) -> None:
        if self._sink is not None:
            self._sink.put(event)
        self.agent.ctx.emit("agent/event", event)

    async def _work(self, adopt: Callable[[], Awaitable[bool | None]] | None = None) -> None:
        try:
            if adopt is not None:
                await self._resume(adopt)
            while self._queue and not self._closed:
                text, sink = self._queue.popleft()
                self._sink = sink
                try:
                    await self._turn(text)
                finally:
                    sink.close()
                    self._sink = None
        finally:
            self._working = False
            for _, sink in self._queue:
                sink.close()
            self._queue.clear()

    async def _resume(self, adopt: Callable[[], Awaitable[bool | None]]) -> None:
        try:
            adopted = await adopt()
        except Exception:
            _log.exception("the store could not say who runs the turn of session %s", self.id)
            return
        opened = open_turn(self.events)
        if adopted is None:
            self._repair()
        elif adopted and opened is None:
            self._writer.running(None)
        elif adopted and opened is not None and not self._closed:
            if getattr(unwrap(self.agent.ctx.tools), "journal", None) is None:
                _log.warning(
                    "session %s: turn %d is resumed without a call journal (no harness:store "
                    "entry): calls cut off by the restart may run again",
                    self.id,
                    opened.turn,
                )
            _log.info("session %s: resuming turn %d at step %d", self.id, opened.turn, opened.step)
            await self._turn(opened.input, opened)

    async def _turn(self, text: str, resumed: OpenTurn | None = None) -> None:
        if resumed is None:
            self._turns += 1
            turn = self._turns
        else:
            turn = resumed.turn
        if not traces.ON:
            await self._run_turn(turn, text, resumed)
            return
        content = self._trace_content()
        with spans.turn_span(self.id, self.agent.llm, turn, text, content) as opened:
            self._span = opened
            try:
                reason, error, kind = await self._run_turn(turn, text, resumed)
            finally:
                self._span = None
            spans.end_turn(opened, reason, error, kind, self._answer, content)

    async def _run_turn(
        self, turn: int, text: str, resumed: OpenTurn | None = None
    ) -> tuple[str, str | None, str | None]:
        """The turn's steps; ``(reason, error, what failed)``, as its turn/end says."""
        if resumed is None:
            self._writer.running(turn)  # before turn/start: an open turn is always marked
            self.record("turn/start", turn=turn, input=text, model=model_label(self.agent.llm))
            self.history.append(UserMessage(text))
        else:
            self.record("turn/resume", turn=turn, step=resumed.step)
        self._answer = ""
        reason, error, kind = "cancelled", None, None
        scope = anyio.CancelScope()
        cut = False  # cut off by the host's stop: left open for the next process
        try:
            with scope:
                self._scope = scope
                try:
                    reason = await self._steps(turn, resumed)
                except LLMError as exc:
                    reason, error, kind = "error", str(exc), exc.code
                except Exception as exc:
                    _log.exception("the agent loop failed in session %s", self.id)
                    reason, kind = "error", type(exc).__qualname__
                    error = f"internal error in the agent loop ({type(exc).__name__}: {exc})"
            if scope.cancel_called:
                reason, error, kind = "cancelled", None, None
                cut = self._left_open()
        except anyio.get_cancelled_exc_class():
            cut = self._left_open()
            raise
        finally:
            self._scope = None
            if cut:
                # left open and marked as this process's, whose end the store sees: the next
                # process on the store finishes the turn from here (:mod:`.resume`)
                self._step = None
                _log.info("session %s: turn %d is left for the next start", self.id, turn)
            else:
                self._settle()
                self.record("turn/end", turn=turn, reason=reason, error=error)
                self._writer.running(None)
        return reason, error, kind

    def _left_open(self) -> bool:
        """Whether a turn cancelled now is left open: the host's stop cancelled it (not a
        person) and its store has the next process finish it."""
        return self._writer.resumable and self.agent.ctx.is_stopping

    def _trace_content(self) -> bool:
        """``trace_content`` of the tools service: messages and arguments in spans."""
        return bool(getattr(getattr(self.agent.ctx.tools, "config", None), "trace_content", False))

    async def _complete(self, request: ChatRequest, on_text: Callable[[str], None]) -> Completion:
        """The model's answer, in a ``chat`` span while tracing is on."""
        llm = self.agent.llm
        if not traces.ON:
            return await llm.complete(request, on_text)
        content = self._trace_content()
        with spans.chat_span(self.id, llm, request, content) as span:
            try:
                answer = await llm.complete(request, on_text)
            except LLMError as exc:
                traces.fail(span, exc.code, str(exc), content)
                raise
            except BaseException as exc:
                traces.failed(span, exc, content)
                raise
            spans.end_chat(span, self._span, answer, content)
            return answer

    async def _steps(self, turn: int, resumed: OpenTurn | None = None) -> str:
        agent = self.agent
        step_number = 0
        started = False
        """Whether the next step's ``step/start`` is recorded already (a resumed step)."""
        if resumed is not None and resumed.step:
            step_number = resumed.step
            if resumed.answered and not resumed.ended:
                reason = await self._finish_step(turn, resumed)
                if reason is not None:
                    return reason
            elif not resumed.answered and not resumed.ended:
                step_number, started = step_number - 1, True  # its answer was cut off: ask again
        while True:
            step_number += 1
            wrap = step_number > agent.max_steps
            step = self._step = _Step(turn, step_number)
            if not started:
                self.record("step/start", turn=turn, step=step_number)
            started = False
            tools = agent.request_tools(self.loaded)
            messages = [*self.history, UserMessage(WRAP_UP)] if wrap else list(self.history)
            request = ChatRequest(
                agent.system_prompt,
                messages,
                list(tools.sent.values()),
                not wrap,
                deferred=list(tools.deferred.values()),
            )

            def on_text(piece: str, step: _Step = step) -> None:
                step.text.append(piece)
                self._publish(
                    {
                        "type": "assistant/delta",
                        "session": self.id,
                        "turn": turn,
                        "step": step.step,
                        "text": piece,
                    }
                )

            answer = await self._complete(request, on_text)
            self._answer = answer.text or self._answer
            calls = [] if wrap else list(answer.tool_calls)
            step.answered = True
            step.calls = calls
            extra = {"thinking": list(answer.thinking)} if answer.thinking else {}
            self.record(
                "assistant/message",
                text=answer.text,
                tool_calls=[
                    {"id": c.id, "name": c.name, "args": arguments_of(c.arguments)} for c in calls
                ],
                **extra,
            )
            # arguments that parse are kept compact, as a resumed history has them
            self.history.append(
                AssistantMessage(
                    answer.text, tuple(normal_call(c) for c in calls), tuple(answer.thinking)
                )
            )
            self._load(step, [n for n in answer.loaded if n in tools.deferred])
            if calls:
                await self._writer.flush()  # the answer is kept before it is acted on
                await self._run_calls(step, tools)
                self._load_found(step, tools.sent)
            self._step = None
            self.record("step/end", turn=turn, step=step_number, usage=answer.usage)
            if not calls and answer.finish_reason == "paused" and not wrap:
                continue  # the API paused a long server-side turn: sent back, it goes on
            if not calls:
                return "max_steps" if wrap else "done"

    async def _finish_step(self, turn: int, resumed: OpenTurn) -> str | None:
        """Go on with a step whose answer was recorded before the restart: run its calls
        that have no result (the journal answers those that finished or were cut off), end
        the step; the turn's reason when that answer ended it."""
        wrap = resumed.step > self.agent.max_steps
        calls = [] if wrap else resumed.calls
        step = self._step = _Step(turn, resumed.step, answered=True, calls=calls)
        step.reported.update(resumed.reported)
        if calls:
            tools = self.agent.request_tools(self.loaded)
            await self._run_calls(step, tools, resumed.called)
            self._load_found(step, tools.sent)
        self._step = None
        self.record("step/end", turn=turn, step=resumed.step, usage={})
        if not calls:
            return "max_steps" if wrap else "done"
        return None

    async def _run_calls(
        self, step: _Step, tools: RequestTools, called: set[str] | frozenset[str] = frozenset()
    ) -> None:
        """Run the step's calls that have no result yet (``called``: those whose
        ``tool/call`` is recorded already, in a resumed step)."""
        callable_ = tools.callable
        for item in step.calls:
            if item.id not in called and item.id not in step.reported:
                self.record(
                    "tool/call", id=item.id, name=item.name, args=arguments_of(item.arguments)
                )
        runs: list[Run] = []
        for item in step.calls:
            if item.id in step.reported:
                continue
            if item.name not in callable_:  # hidden, unknown or not loaded yet: never run
                message = f"Tool {item.name} not found"
                if SEARCH_TOOL in callable_ and item.name in self.agent.visible_tools():
                    message += f" among the loaded tools; find it with {SEARCH_TOOL} first"
                step.early[item.id] = ToolResult(
                    item.id,
                    item.name,
                    None,
                    [{"type": "text", "text": message}],
                    message,
                    "unknown_tool",
                )
                continue
            call = ToolCall(
                item.id,
                item.name,
                arguments_of(item.arguments),
                session=self.id,
                # the call journal's key (harness:store): the model's call id in this session,
                # under its turn and step (a scripted model's ids restart with its process)
                key=f"{self.id}/{step.turn}.{step.step}/{item.id}",
            )
            CallContext(call, "agent", self.client, session=self.id)
            run = Run(call)
            step.runs[item.id] = run
            runs.append(run)
        if runs:
            running = self.agent.running
            for run in runs:
                running[id(run.call)] = run
            try:
                results = await self.agent.ctx.tools.execute_many([run.call for run in runs])
                for run, result in zip(runs, results, strict=True):
                    run.result = result
            finally:
                for run in runs:
                    running.pop(id(run.call), None)
            if self._left_open():
                # the host is stopping: calls its stop cut off end ``cancelled`` here, which is
                # not their result (the journal has it); this raises the stop's cancellation
                # before any is recorded, so the next process runs them again by their keys
                await anyio.lowlevel.checkpoint()
        self._report(step)

    def _load_found(self, step: _Step, offered: dict[str, Any]) -> None:
        """Load the tools the step's ``search_tools`` calls found that its request did not
        offer: they are offered from the next request on, for the rest of the session (a
        ``tools/loaded`` event)."""
        found: list[str] = []
        for run in step.runs.values():
            result = run.result
            if run.call.name != SEARCH_TOOL or result is None or not result.ok:
                continue
            hits = result.result.get("tools") if isinstance(result.result, dict) else None
            for hit in hits if isinstance(hits, list) else ():
                name = hit.get("name") if isinstance(hit, dict) else None
                if isinstance(name, str) and name not in offered and name not in found:
                    found.append(name)
        self._load(step, found)

    def _load(self, step: _Step, found: list[str]) -> None:
        """Offer ``found`` (tools a search found) from the next request on, for the rest of
        the session: harness's ``search_tools``, or the provider API's own search."""
        found = [name for name in dict.fromkeys(found) if name not in self.loaded]
        if found:
            self.loaded.extend(found)
            self.record("tools/loaded", turn=step.turn, step=step.step, names=found)

    def _report(self, step: _Step, why: str = "") -> None:
        """Record a result for every call of the step not reported yet, in model order."""
        for item in step.calls:
            if item.id in step.reported:
                continue
            run = step.runs.get(item.id)
            result = step.early.get(item.id) or (run.result if run is not None else None)
            if result is None:
                message = f"Tool {item.name} was not run: {why or 'the turn ended'}"
                result = ToolResult(
                    item.id,
                    item.name,
                    None,
                    [{"type": "text", "text": message}],
                    message,
                    "cancelled",
                )
            duration = 0.0
            if run is not None and run.started:
                duration = ((run.ended or time.perf_counter()) - run.started) * 1000
            data = result.to_dict()
            step.reported.add(item.id)
            self.record("tool/result", id=item.id, result=data, duration_ms=round(duration, 3))
            self.history.append(tool_message(item.id, item.name, data))

    def _settle(self) -> None:
        """After a cancelled or failed step: keep streamed text, answer every call."""
        step = self._step
        if step is None:
            return
        self._step = None
        if not step.answered:
            text = "".join(step.text)
            if text:
                self.record("assistant/message", text=text, tool_calls=[])
                self.history.append(AssistantMessage(text))
        else:
            self._report(step, "the turn was cancelled")
        self.record("step/end", turn=step.turn, step=step.step, usage={})

    def _repair(self) -> None:
        """Close a turn a crash left open, so the history is valid for the model again."""
        open_turn = None
        pending: dict[str, str] = {}
        for event in self.events:
            kind = event.get("type")
            if kind == "turn/start":
                open_turn, pending = event.get("turn"), {}
            elif kind == "turn/end":
                open_turn, pending = None, {}
            elif kind == "assistant/message":
                pending = {
                    str(c.get("id")): str(c.get("name")) for c in event.get("tool_calls") or []
                }
            elif kind == "tool/result":
                pending.pop(str(event.get("id")), None)
        if open_turn is None:
            return
        for call_id, name in pending.items():
            message = f"Tool {name} did not finish: harness stopped during the turn"
            data = ToolResult(
                call_id, name, None, [{"type": "text", "text": message}], message, "cancelled"
            ).to_dict()
            self.record("tool/result", id=call_id, result=data, duration_ms=0.0)
            self.history.append(tool_message(call_id, name, data))
        self.record(
            "turn/end",
            turn=open_turn,
            reason="error",
            error="interrupted: harness stopped before this turn ended",
        )
