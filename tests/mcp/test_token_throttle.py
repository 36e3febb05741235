"""The wrong-token throttle of ``harness run`` (:mod:`harness.mcp.auth`), on its own clock.

The HTTP behaviour (401, then 429 with Retry-After, per address, shared by /mcp and the
console) is tested against a real server in ``tests/web/test_token.py``.
"""

from __future__ import annotations

from harness.mcp.auth import TokenThrottle, bearer_token, client_key


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_ten_free_failures_then_lock_outs_that_double_up_to_fifteen_minutes() -> None:
    clock = Clock()
    throttle = TokenThrottle(clock=clock)
    for number in range(9):
        assert throttle.attempt("a", f"guess-{number}", "right") is False
    assert throttle.attempt("a", "right", "right") is True
    assert throttle.attempt("a", "guess-9", "right") is False  # the tenth: locked from now
    waits = []
    for number in range(8):
        assert throttle.attempt("a", "right", "right") == throttle.retry_after("a")
        wait = throttle.retry_after("a")
        assert wait is not None
        waits.append(wait)
        clock.now += wait  # the lock ends; the next guess is checked, and doubles it
        assert throttle.attempt("a", f"later-{number}", "right") is False
    assert waits == [60, 120, 240, 480, 900, 900, 900, 900]
    assert throttle.attempt("b", "right", "right") is True  # other addresses are unaffected


def test_an_address_is_forgotten_an_hour_after_its_last_failure() -> None:
    clock = Clock()
    throttle = TokenThrottle(clock=clock)
    for number in range(10):
        throttle.attempt("a", f"guess-{number}", "right")
    clock.now += 3600
    throttle.attempt("b", "guess", "right")  # each failure sweeps the quiet ones
    assert len(throttle) == 1
    assert throttle.retry_after("a") is None


def test_a_wrong_value_sent_again_is_no_new_guess() -> None:
    """A stale token in a client's config, retried forever, costs its address one failure:
    it neither locks that address out nor the right token sent from it."""
    throttle = TokenThrottle(clock=Clock())
    for _ in range(100):
        assert throttle.attempt("a", "stale", "right") is False
    assert throttle.attempt("a", "right", "right") is True
    for number in range(8):  # with the stale one, nine of the ten free guesses
        assert throttle.attempt("a", f"guess-{number}", "right") is False
    assert throttle.attempt("a", "stale", "right") is False
    assert throttle.attempt("a", "guess-8", "right") is False  # the tenth distinct one
    assert throttle.attempt("a", "right", "right") == 60


def test_memory_is_bounded_whatever_the_addresses() -> None:
    throttle = TokenThrottle(max_addresses=100, clock=Clock())
    for number in range(10_000):
        throttle.attempt(f"10.0.{number // 256}.{number % 256}", "guess", "right")
    assert len(throttle) == 100


def test_addresses_and_schemes() -> None:
    assert client_key({"client": ("203.0.113.7", 5000)}) == "203.0.113.7"
    assert client_key({"client": ("2001:db8:1:2:3:4:5:6", 5000)}) == "2001:db8:1:2::/64"
    assert client_key({"client": ("2001:db8:1:2:ffff::1", 1)}) == "2001:db8:1:2::/64"
    assert client_key({"client": ("::ffff:192.0.2.1", 1)}) == "192.0.2.1"
    # one machine may send from any loopback address: all of them are one client
    for loopback in ("127.0.0.1", "127.0.0.2", "127.255.1.9", "::1", "::ffff:127.0.0.3"):
        assert client_key({"client": (loopback, 1)}) == "loopback"
    assert client_key({"client": None}) == "unknown"
    assert bearer_token("bearer T") == "T"
    assert bearer_token(b"BEARER \t T ") == "T"
    assert bearer_token("Basic T") is None
    assert bearer_token("Bearer") is None
    assert bearer_token(None) is None
