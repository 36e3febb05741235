"""Importing harness pauses the cyclic garbage collector and files what the import made with
the oldest generation, leaving the process's collector as it found it: on if it was on, off
if it was off, nothing left frozen, the caller's frozen objects still frozen, and garbage
made before the import still collected. Each case runs in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def run_python(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_the_collector_stays_on_and_nothing_stays_frozen() -> None:
    out = run_python(
        """
        import gc, weakref

        class Node:
            pass

        node = Node()
        node.self = node  # a cycle: only the cyclic collector frees it
        gone = weakref.ref(node)
        del node
        import harness
        print(gc.isenabled(), gc.get_freeze_count(), gone() is not None)
        gc.collect()
        print(gone() is None)
        """
    )
    assert out.split() == ["True", "0", "True", "True"]


def test_a_paused_collector_stays_paused() -> None:
    out = run_python(
        """
        import gc
        gc.disable()
        import harness
        print(gc.isenabled(), harness.Host.__name__)
        """
    )
    assert out.split() == ["False", "Host"]


def test_objects_the_caller_froze_stay_frozen() -> None:
    out = run_python(
        """
        import gc
        kept = [[] for _ in range(1000)]  # tracked objects of the caller's, frozen
        gc.freeze()
        frozen = gc.get_freeze_count()
        import harness
        # frozen ones freed meanwhile leave the count; unfreezing would empty it
        print(frozen > 1000, frozen - 100 < gc.get_freeze_count() <= frozen, gc.isenabled())
        """
    )
    assert out.split() == ["True", "True", "True"]


def test_a_failed_import_puts_the_collector_back() -> None:
    out = run_python(
        """
        import builtins, gc
        real = builtins.__import__

        def refuse(name, *args, **kwargs):
            if name == "yaml":
                raise ImportError("no yaml here")
            return real(name, *args, **kwargs)

        builtins.__import__ = refuse
        try:
            import harness
        except ImportError as exc:
            print(exc, gc.isenabled(), gc.get_freeze_count(), sep="|")
        """
    )
    assert out == "no yaml here|True|0"
