"""Config of ``harness:ray-executor``: where the executor runs and which tools ship there."""

from __future__ import annotations

import fnmatch
from typing import Literal

import pydantic

from ..tools.definition import ToolDefinition

Annotation = Literal["read_only", "destructive", "idempotent", "open_world"]


class ExecutorConfig(pydantic.BaseModel):
    """Which tools ship to a Ray executor, where it runs, and how its calls are stopped."""

    model_config = pydantic.ConfigDict(extra="forbid")

    address: str = "local"
    """``local``: start a Ray cluster on this machine (loopback only) for this host;
    ``auto``: the cluster this machine already belongs to; ``HOST:PORT``: that cluster's
    head (its GCS port, 6379 by default); ``ray://HOST:PORT``: a Ray Client server."""
    tools: list[str] = []
    """Tool names or globs (``*``, ``?``, ``[...]``) that ship."""
    annotations: dict[Annotation, bool] = {}
    """Also ship every tool whose annotations state all of these (``open_world: true``)."""
    kill: list[str] = []
    """Names or globs of shipped tools whose executor process may be killed when a call
    times out or is cancelled (a sync body cannot be stopped otherwise). They run on an
    executor of their own, restarted after each kill."""
    num_cpus: float = pydantic.Field(0, ge=0)
    """CPUs each executor actor reserves on the cluster."""
    num_gpus: float = pydantic.Field(0, ge=0)
    """GPUs each executor actor reserves (a body that needs one gets it)."""
    resources: dict[str, float] = {}
    """Custom Ray resources each executor actor reserves."""
    local_cpus: int = pydantic.Field(1, ge=1)
    """With ``address: local``: the CPUs of the local cluster."""
    connect_timeout: float = pydantic.Field(30, gt=0, allow_inf_nan=False)
    """Seconds to reach the cluster and start an executor before its calls fail."""
    cancel_grace: float = pydantic.Field(5, ge=0, allow_inf_nan=False)
    """Seconds a timed-out or cancelled call waits for its async body to stop remotely."""

    def ships(self, tool: ToolDefinition) -> bool:
        """Whether calls of ``tool`` run on the executor."""
        if any(fnmatch.fnmatchcase(tool.name, pattern) for pattern in self.tools):
            return True
        if not self.annotations:
            return False
        marks = tool.annotations
        return all(getattr(marks, key) is value for key, value in self.annotations.items())

    def killable(self, name: str) -> bool:
        """Whether the executor running ``name`` may be killed to stop a call."""
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in self.kill)
