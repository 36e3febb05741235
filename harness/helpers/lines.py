"""Reading a range of lines from a file descriptor in bounded memory.

The file is read in fixed chunks, never a whole line at a time, so a huge file without
newlines costs one chunk plus what is kept (at most ``max_bytes``), not its size. Every byte
is checked to be UTF-8 text without NUL, as a whole read would.
"""

from __future__ import annotations

import codecs
import os
from dataclasses import dataclass

CHUNK = 1 << 16


class NotText(ValueError):
    """Raised when the file holds a NUL byte or is not UTF-8."""


@dataclass(frozen=True, slots=True)
class Lines:
    """The lines kept, how many lines the file has, and whether some were left out."""

    data: bytes
    total: int
    truncated: bool


def read_lines(fd: int, offset: int, limit: int | None, max_bytes: int) -> Lines:
    """Lines ``offset`` (1-based) to ``offset + limit - 1`` of ``fd``, at most ``max_bytes``.

    A wanted line that does not fit in what is left of ``max_bytes`` is left out (and
    ``truncated`` set); later lines that fit are still kept, as before the cut.
    """
    end = None if limit is None else offset + max(limit, 0)
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    kept = bytearray()
    current = bytearray()
    over = False  # the current wanted line no longer fits
    truncated = False
    line = 1  # the line the next byte belongs to
    last = b"\n"
    while True:
        chunk = os.read(fd, CHUNK)
        if not chunk:
            break
        if b"\x00" in chunk:
            raise NotText("NUL byte")
        try:
            decoder.decode(chunk)
        except UnicodeDecodeError as exc:
            raise NotText(str(exc)) from None
        last = chunk[-1:]
        at, size = 0, len(chunk)
        while at < size:
            if end is not None and line >= end:  # past the range: only count lines
                line += chunk.count(b"\n", at)
                break
            if line < offset:  # before the range: skip to the next line
                newline = chunk.find(b"\n", at)
                if newline == -1:
                    break
                line += 1
                at = newline + 1
                continue
            newline = chunk.find(b"\n", at)
            piece_end = size if newline == -1 else newline + 1
            if not over:
                if len(kept) + len(current) + piece_end - at > max_bytes:
                    over = True
                    current.clear()
                else:
                    current += chunk[at:piece_end]
            if newline == -1:
                break
            truncated |= over
            kept += current
            current.clear()
            over = False
            line += 1
            at = piece_end
    try:
        decoder.decode(b"", final=True)
    except UnicodeDecodeError as exc:
        raise NotText(str(exc)) from None
    if last != b"\n":  # a last line without a newline
        truncated |= over
        kept += current
        total = line
    else:
        total = line - 1
    return Lines(bytes(kept), total, truncated)
