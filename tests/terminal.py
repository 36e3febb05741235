"""The real ``harness`` on a pseudo-terminal that is its controlling terminal: what a person
types goes in as keys (``\\r`` for Enter, ``\\x03`` for Ctrl-C, ``\\x1b\\r`` for Alt-Enter),
and the screen is read back without its escape sequences."""

from __future__ import annotations

import fcntl
import os
import re
import struct
import subprocess
import termios
import threading
import time
from pathlib import Path

from .helpers import HARNESS

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\x1b[=>]|\r")
UP = "\x1b[A"
ALT_ENTER = "\x1b\r"


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    # a pseudo-terminal answers no cursor position request (CPR) as a real one would:
    # prompt_toolkit's own switch says so, rather than waiting and printing a warning
    env.update(TERM="xterm", COLUMNS="100", LINES="40", PROMPT_TOOLKIT_NO_CPR="1")
    return env


class Terminal:
    """``harness ARGS`` on a pseudo-terminal of 100 columns and 40 lines."""

    def __init__(self, args: list[str], cwd: Path) -> None:
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 100, 0, 0))
        self.master = master

        def controlling_terminal() -> None:
            os.setsid()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        self.proc = subprocess.Popen(
            [HARNESS, *args],
            cwd=cwd,
            env=environment(),
            stdin=slave,
            stdout=slave,
            stderr=slave,
            preexec_fn=controlling_terminal,
            close_fds=True,
        )
        os.close(slave)
        self.closed = False
        self.output = ""
        self.changed = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 4096)
            except OSError:
                data = b""
            with self.changed:
                if not data:
                    self.changed.notify_all()
                    return
                self.output += ANSI.sub("", data.decode("utf-8", "replace"))
                self.changed.notify_all()

    def expect(self, text: str, after: int = 0, timeout: float = 30) -> int:
        """Wait until ``text`` appears past offset ``after``; return the offset after it."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while (at := self.output.find(text, after)) < 0:
                left = deadline - time.monotonic()
                if left <= 0 or (not self.reader.is_alive()):
                    raise AssertionError(
                        f"{text!r} did not appear; the terminal shows:\n" + self.output[after:]
                    )
                self.changed.wait(left)
        return at + len(text)

    def send(self, text: str) -> None:
        os.write(self.master, text.encode())

    def close(self) -> int:
        """Wait for the process to exit; its exit code."""
        try:
            return self.proc.wait(30)
        finally:
            self._release()

    def kill(self) -> None:
        """End the process if it still runs (a test that failed half-way)."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)
        self._release()

    def _release(self) -> None:
        if not self.closed:
            self.closed = True
            os.close(self.master)
