"""How much of one upstream message harness reads: the size caps, applied while reading.

Every message an upstream sends is read into memory and parsed before anything can look at
it, so a cap checked afterwards (on the converted result) comes too late: a 50 MB answer
was read whole, parsed, and the call ended on its timeout. Both transports (:mod:`.stdio`,
:mod:`.http`) therefore count the bytes of each message as they arrive and stop at the cap
of the request it answers: ``max_list_bytes`` for ``tools/list``, ``max_result_bytes`` for
everything else. The request then fails at once with :func:`cut_message`, which the
connection turns into the call's ``tool_error``.
"""

from __future__ import annotations

from dataclasses import dataclass

CUT_CODE = -32042
"""The JSON-RPC error code of an answer harness stopped reading (harness's own)."""
CUT_MARK = "so harness stopped reading it"


@dataclass(frozen=True, slots=True)
class Caps:
    """The per-message byte caps of one connection."""

    result: int
    """``max_result_bytes``: any message but a ``tools/list`` answer."""
    listing: int
    """``max_list_bytes``: one ``tools/list`` answer (a page)."""

    def of(self, method: str | None) -> tuple[int, str]:
        """The cap of an answer to ``method``, and the config key that sets it."""
        if method == "tools/list":
            return self.listing, "max_list_bytes"
        return self.result, "max_result_bytes"

    @property
    def largest(self) -> int:
        """The largest cap: what a message of unknown purpose may reach while read."""
        return max(self.result, self.listing)


def cut_message(method: str | None, caps: Caps) -> str:
    """What a request whose answer was too large fails with (and what to do)."""
    limit, key = caps.of(method)
    what = "tools/list answer" if method == "tools/list" else "answer"
    advice = "" if method == "tools/list" else "ask for less (a narrower query, a page) or "
    return (
        f"the server's {what} is larger than {key} ({limit}), {CUT_MARK} there; {advice}raise {key}"
    )


def cut_reason(text: str) -> str | None:
    """The :func:`cut_message` inside an SDK error text, or None when it holds none."""
    if CUT_MARK not in text:
        return None
    start = text.find("the server's ")
    return text[start:] if start >= 0 else text
