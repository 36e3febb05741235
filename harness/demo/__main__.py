"""``python -m harness.demo``: serve the demo model (scripted rules, not a language model)
on 127.0.0.1 until Ctrl-C, and print its URL and the model entry that uses it.

``--port N`` (default: any free port), ``--project DIR`` (the repository "recent commits"
reads, default the current folder). ``harness chat --demo`` and ``harness run --demo`` do all
of this for you; this is for pointing another OpenAI-compatible client at the demo.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from .model import DEMO_MODEL, DemoServer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m harness.demo",
        description=f"Serve the {DEMO_MODEL}, an OpenAI-compatible chat completions server on "
        "127.0.0.1, until Ctrl-C.",
    )
    parser.add_argument("--port", type=int, default=0, help="the port (default: any free one)")
    parser.add_argument(
        "--project", type=Path, default=Path("."), help="the repository commits are read from"
    )
    args = parser.parse_args(argv)
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    server = DemoServer(args.project.resolve(), port=args.port)
    try:
        server.start()
    except RuntimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"{DEMO_MODEL}, serving at {server.url}", flush=True)
    print(
        "use it from cordis.yml:\n"
        "  - id: model\n"
        "    name: harness:openai\n"
        f"    config: {{ model: demo, base_url: {server.url} }}\n"
        "Ctrl-C stops",
        flush=True,
    )
    stop.wait()
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
