"""``harness:ray-executor``: run the calls of chosen tools on a Ray executor.

    - id: executor
      name: harness:ray-executor
      config:
        address: local              # or auto, HOST:PORT, ray://HOST:PORT
        tools: [render_video, "gpu_*"]
        annotations: { open_world: true }
        kill: [render_video]        # sync bodies whose executor may be killed to stop them

The entry listens on ``tools/execute``: a call of a tool it ships is sent to an executor (a
harness Host in a Ray actor, :mod:`.remote`) and its ``ToolResult`` comes back; every other
call goes to ``next()`` untouched. Policy and approvals stay in the host: ``tools/pre-execute``
has decided before this stage runs, so a denied call never leaves the host, and
``tools/post-execute`` and ``tools/result`` see the shipped call's result as any other.

The tool's timeout stays in the host; on expiry or cancellation the remote task is cancelled
(``ray.cancel``, sent even while the caller is being cancelled) and the call ends ``timeout``
or ``cancelled``, after an async body has stopped (within ``cancel_grace`` seconds). A
cluster that cannot be reached and an executor that dies mid-call end the call ``internal``,
with a message saying what happened; the executor is restarted for the next calls.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import importlib.util
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from ..errors import PluginError
from ..tools import traces
from ..tools.calls import ERROR_CODES, ToolCall, ToolResult
from ..tools.definition import ToolDefinition
from ..tools.kernel import timeout_result
from .config import ExecutorConfig
from .connection import Unreachable, connect, generation, head_gone, wait
from .remote import inside_executor

if TYPE_CHECKING:
    from ..context import Context

name = "ray-executor"
inject = {"tools": {"required": True}, "host": {"required": False}}
Config = ExecutorConfig

_log = logging.getLogger("harness.executor")


def apply(ctx: Context, config: ExecutorConfig) -> Any:
    """Ship the configured tools' calls (nothing, inside an executor)."""
    if inside_executor():
        return None
    if importlib.util.find_spec("ray") is None:
        raise PluginError(
            "harness:ray-executor needs Ray, which is not installed: "
            "pip install 'cordis-harness[ray]'"
        )
    host = ctx.get("host")
    if host is None:
        raise PluginError(
            "harness:ray-executor runs only in a Host (harness run, harness call, Host(...)): "
            "its executors load the host's own cordis.yml"
        )
    spec = (
        str(host.config_path.absolute()),
        [str(patch.absolute()) for patch in host.patches],
        list(host.overrides),
    )
    shipper = Shipper(ctx, config, spec, host)
    ctx.on("tools/execute", shipper.around)
    ctx.on("reload/done", shipper.restart)  # the host's plugin code changed: load it anew
    return shipper.close


class Shipper:
    """Sends calls to this entry's executors and rebuilds their results."""

    def __init__(
        self,
        ctx: Context,
        config: ExecutorConfig,
        spec: tuple[str, list[str], list[str]],
        host: Any = None,
    ) -> None:
        self.ctx = ctx
        self.config = config
        self._spec = spec
        self._host = host
        """The host, whose config says where this entry is (for the problems' wording)."""
        self._generation = generation()
        self._executors: dict[str, tuple[Any, concurrent.futures.Future[Any]]] = {}
        self._suspect: dict[str, int | None] = {}
        """Executors that died or were killed, with the process they had: the next call
        waits until Ray restarted them in another process."""
        self._pids: dict[str, int] = {}
        self._decided: dict[str, tuple[ToolDefinition, bool]] = {}
        """Per tool name: the definition seen last and whether it ships (patterns cost
        about a microsecond; a re-registered tool is decided again)."""

    async def around(self, call: ToolCall, next: Any) -> ToolResult:
        tool = self.ctx.tools.get(call.name)
        if tool is None:
            return await next()  # type: ignore[no-any-return]
        decided = self._decided.get(call.name)
        if decided is None or decided[0] is not tool:  # a new or re-registered tool
            decided = self._decided[call.name] = (tool, self.config.ships(tool))
        if not decided[1]:
            return await next()  # type: ignore[no-any-return]
        return await self._ship(call, tool)

    def restart(self, *_: Any) -> None:
        """Let the executors go; the next calls start new ones."""
        executors, self._executors = self._executors, {}
        self._suspect.clear()
        self._pids.clear()
        self._decided.clear()
        for handle, _ready in executors.values():
            _kill(handle, restart=False)

    def close(self) -> None:
        self.restart()

    # -- one call ------------------------------------------------------------------------

    async def _ship(self, call: ToolCall, tool: ToolDefinition) -> ToolResult:
        kind = "kill" if self.config.killable(call.name) else "shared"
        try:
            with anyio.fail_after(self.config.connect_timeout):
                handle = await self._executor(kind)
        except TimeoutError:
            return await self._head_lost(call) or self._failed(
                call,
                f"its Ray executor did not start within {self.config.connect_timeout:g} "
                f"seconds (address {self.config.address})",
            )
        except Exception as exc:
            _log.warning("Ray executor for %r unavailable", call.name, exc_info=exc)
            return await self._head_lost(call) or self._failed(
                call, f"its Ray executor is unavailable: {_reason(exc)}"
            )
        timeout = tool.timeout if tool.timeout is not None else self.ctx.tools.config.timeout
        # the trace goes on in the executor: its spans (if it traces) are this call's children
        ref = handle.run.remote(call.id, call.name, call.args, traces.carrier())
        future = ref.future()
        try:
            with anyio.move_on_after(timeout if timeout is not None else float("inf")) as scope:
                data = await wait(future)
            if scope.cancelled_caught:
                await self._stop(ref, future, tool, kind, handle)
                return await self._head_lost(call) or timeout_result(call, timeout)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):  # the cancel is sent whatever happens
                await self._stop(ref, future, tool, kind, handle)
            raise
        except Exception as exc:
            self._suspect[kind] = self._pids.get(kind)
            return await self._head_lost(call) or self._lost(call, exc)
        result = _rebuild(call, data)
        if result.code == "timeout" and kind == "kill" and not tool.is_async:
            self._kill(kind, handle)  # the executor's own deadline fired first
        return result

    async def _executor(self, kind: str) -> Any:
        await wait(connect(self.config))
        if self._generation != generation():  # a lost connection ended: its actors are gone
            self.restart()
            self._generation = generation()
        held = self._executors.get(kind)
        if held is None or (held[1].done() and held[1].exception() is not None):
            import ray

            from .remote import Executor

            actor = ray.remote(Executor).options(
                num_cpus=self.config.num_cpus,
                num_gpus=self.config.num_gpus,
                resources=dict(self.config.resources),
                max_restarts=-1,  # restarted after a kill or a crash, for the next calls
                max_task_retries=0,  # a call is never run twice
            )
            handle: Any = actor.remote(*self._spec)
            held = (handle, handle.ready.remote().future())
            self._executors[kind] = held
        info = await wait(held[1])
        self._pids.setdefault(kind, info["pid"])
        if kind in self._suspect:
            self._pids[kind] = await _alive(held[0], self._suspect[kind])
            del self._suspect[kind]
        return held[0]

    async def _stop(
        self,
        ref: Any,
        future: concurrent.futures.Future[Any],
        tool: ToolDefinition,
        kind: str,
        handle: Any,
    ) -> None:
        """Cancel the remote task; wait for an async body to stop, or kill the executor."""
        import ray

        try:
            ray.cancel(ref)
        except Exception as exc:
            _log.warning("could not cancel the Ray task of %r: %s", tool.name, exc)
        if kind == "kill" and not tool.is_async:
            self._kill(kind, handle)
            return
        if tool.is_async and self.config.cancel_grace > 0:
            with anyio.move_on_after(self.config.cancel_grace):
                with contextlib.suppress(Exception):  # cancelled, as asked
                    await wait(future)

    def _kill(self, kind: str, handle: Any) -> None:
        """Kill an executor to stop a sync body; Ray restarts it for the next calls."""
        self._suspect[kind] = self._pids.get(kind)
        _kill(handle, restart=True)

    # -- results -------------------------------------------------------------------------

    async def _head_lost(self, call: ToolCall) -> ToolResult | None:
        """The result of a call that failed because the cluster's head is gone, if it is."""
        with anyio.CancelScope(shield=True):  # a quick TCP probe, bounded
            gone = await head_gone(min(self.config.connect_timeout, 5.0))
        if gone is None:
            return None
        problem = (
            f"the Ray cluster's head is gone: {gone}; no call ships until it answers again "
            "(start the head again, or point `address` at a running cluster): each call "
            "tries to reconnect"
        )
        entry, place = _where(self._host, self.ctx)
        _log.error("problem: %s: entry %r: %s", place, entry, problem)
        return self._failed(call, problem)

    def _failed(self, call: ToolCall, why: str) -> ToolResult:
        entry, place = _where(self._host, self.ctx)
        where = f"entry {entry!r} at {place}"
        return ToolResult.failure(
            call, "internal", f"Tool {call.name} could not run: {why} ({where})"
        )

    def _lost(self, call: ToolCall, exc: Exception) -> ToolResult:
        import ray.exceptions

        _log.warning("shipped call %s of %r failed", call.id, call.name, exc_info=exc)
        if isinstance(exc, ray.exceptions.RayActorError | ray.exceptions.ActorUnavailableError):
            why = (
                "its Ray executor died during the call; it is restarted for the next calls "
                "(see the host log)"
            )
        else:
            why = f"its Ray executor failed: {_reason(exc)}"
        return ToolResult.failure(call, "internal", f"Tool {call.name} did not finish: {why}")


def _where(host: Any, ctx: Context) -> tuple[str, str]:
    """This plugin's entry id and ``FILE:LINE`` in the host's config."""
    entry = ctx.fiber.name if ctx.fiber is not None else "?"
    loaded = getattr(host, "loaded", None)
    for plan in loaded.plans if loaded is not None else ():
        if plan.id == entry:
            place = plan.entry.where_of("name")
            file = Path(place.file).absolute()
            return entry, f"{file}:{place.line}" if place.line else str(file)
    config = getattr(host, "config_path", None)
    return entry, str(config.absolute()) if config is not None else "its config"


def _rebuild(call: ToolCall, data: Any) -> ToolResult:
    """The executor's ``ToolResult.to_dict()`` as a ToolResult again."""
    try:
        code = data["code"]
        if code is not None and code not in ERROR_CODES:
            raise ValueError(f"unknown code {code!r}")
        content = data["content"]
        error = data["error"]
        if not isinstance(content, list) or not (error is None or isinstance(error, str)):
            raise ValueError("content must be a list and error a string or null")
        return ToolResult(call.id, call.name, data["result"], content, error, code)
    except (KeyError, TypeError, ValueError) as exc:
        _log.error("the executor sent a malformed result for %r: %s", call.name, exc)
        return ToolResult.failure(
            call,
            "internal",
            f"Tool {call.name} did not finish: its executor sent a malformed "
            "result (see the host log)",
        )


async def _alive(handle: Any, gone: int | None) -> int:
    """Wait until Ray has restarted an executor in a process other than ``gone``; its pid.

    The caller bounds the wait.
    """
    import ray.exceptions

    while True:
        try:
            info = await wait(handle.ready.remote().future())
            if info["pid"] != gone:
                return int(info["pid"])
        except (ray.exceptions.ActorUnavailableError, ray.exceptions.RayActorError):
            pass  # restarting
        await anyio.sleep(0.1)  # ask again shortly


def _kill(handle: Any, *, restart: bool) -> None:
    try:
        import ray

        ray.kill(handle, no_restart=not restart)
    except Exception as exc:
        _log.warning("could not kill a Ray executor: %s", exc)


def _reason(exc: BaseException) -> str:
    """The first line of what went wrong, without Ray's traceback."""
    if isinstance(exc, Unreachable):
        return str(exc)
    cause = getattr(exc, "cause", None)
    if isinstance(cause, BaseException):
        exc = cause
    text = str(exc).strip().splitlines()
    return text[-1] if text else type(exc).__name__
