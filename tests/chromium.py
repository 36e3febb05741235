"""Debian's Chromium, headless: where it is and the flags it is launched with.

Shared by the browser tests (``tests/web``) and the web benchmark (``bench/web.py``), which
drive the web console through Playwright with this browser (never a downloaded one). It is
test support, so it lives here, outside the wheel.
"""

from __future__ import annotations

CHROMIUM = "/usr/bin/chromium"
"""Debian's ``chromium`` package puts the browser here."""

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)
"""Headless, no sandbox (tests run as root in containers), no GPU, and nothing that phones
home or updates itself while a test or a benchmark runs."""
