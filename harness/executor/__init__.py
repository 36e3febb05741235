"""Tool execution beyond one machine: ship chosen tools' calls to Ray executors.

``harness:ray-executor`` (:mod:`.plugin`) wraps ``tools/execute`` in the host; the executor
side (:mod:`.remote`) is a harness Host in a Ray actor. See docs/distributed.md.
"""

from . import plugin

__all__ = ["plugin"]
