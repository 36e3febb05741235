"""The web console: live events fanned out to 1, 10 and 50 pages; tool result to card in the DOM.

1. **Fan-out.** One in-process ``harness run`` server (Host, console, MCP, uvicorn on
   127.0.0.1) and N event-stream clients (``GET /api/events``, httpx, in the same process and
   event loop: a page's EventSource does the same work). 2000 events are published; the
   time runs from the first publish until every client has parsed the last one. Reports
   events per second per page and delivered in total (wall time, one run per N).
2. **Result to card.** Headless Chromium (Debian's package) on the Chat page, a scripted
   model (``harness.testing``) asking for one ``echo`` call per turn, ``harness run`` in its
   own process. Each ``tool/result`` event carries the server's wall time (``time``, ms); a
   MutationObserver in the page notes when that call's card says ``done``. Reports the
   median and worst of 20 turns (ms).
"""

from __future__ import annotations

import re
import statistics
import time
from functools import partial
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import anyio
import anyio.lowlevel
import httpx2

from harness import Host
from harness.mcp import McpSurface
from harness.web import WebConsole, console_app
from tests.chromium import CHROMIUM, FLAGS

from .harness_run import harness_run

EVENTS = 2000
PAGES = (1, 10, 50)
TURNS = 20
ROOT = Path(__file__).resolve().parents[1]


async def serve(config: Path, body: Any) -> Any:
    """Run ``body(base_url, console, host)`` against a served console."""
    async with Host(config) as host:
        console = WebConsole(host)
        console.attach()
        surface = McpSurface(host.ctx)
        surface.attach()
        urls: list[str] = []
        ready = anyio.Event()

        def on_ready(url: str) -> None:
            urls.append(url.removesuffix("mcp"))
            ready.set()

        def wrap(app: Any) -> Any:
            return console_app(console, app, "127.0.0.1", None)

        async with anyio.create_task_group() as group:
            group.start_soon(partial(surface.serve_http, "127.0.0.1", 0, None, on_ready, wrap))
            await ready.wait()
            try:
                return await body(urls[0], console, host)
            finally:
                console.hub.drop_streams()
                group.cancel_scope.cancel()


class Pages:
    """N event-stream clients counting the benchmark's events."""

    def __init__(self, count: int) -> None:
        self.counts = [0] * count
        self.finished = anyio.Event()
        self.last = 0.0

    async def read(self, index: int, client: httpx2.AsyncClient, base: str) -> None:
        async with client.stream("GET", base + "api/events") as response:
            async for line in response.aiter_lines():
                if line != "event: bench":
                    continue
                self.counts[index] += 1
                if self.counts[index] == EVENTS:
                    if all(count == EVENTS for count in self.counts):
                        self.last = time.perf_counter()
                        self.finished.set()
                    return


async def fan_out(base: str, console: WebConsole, host: Host) -> dict[int, tuple[float, float]]:
    out: dict[int, tuple[float, float]] = {}
    for count in PAGES:
        pages = Pages(count)
        async with httpx2.AsyncClient(timeout=60) as client, anyio.create_task_group() as group:
            for index in range(count):
                group.start_soon(pages.read, index, client, base)
            while console.hub.streams < count:  # noqa: ASYNC110 (a counter, not an event)
                await anyio.sleep(0.01)
            start = time.perf_counter()
            for number in range(EVENTS):
                console.hub.publish("bench", {"n": number, "text": "x" * 64})
                if number % 50 == 0:
                    await anyio.lowlevel.checkpoint()  # let the streams drain
            with anyio.fail_after(120):
                await pages.finished.wait()
        elapsed = pages.last - start
        out[count] = (EVENTS / elapsed, EVENTS * count / elapsed)
    return out


def result_to_card(base: str) -> list[float]:
    """Per turn: ms from the server's ``tool/result`` (its ``time``) to a ``done`` card."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=list(FLAGS))
        page = browser.new_page()
        page.add_init_script(CAPTURE)
        page.goto(base + "#/chat")
        page.get_by_text("live", exact=True).wait_for()
        page.get_by_role("button", name="New session").click()
        for turn in range(TURNS):
            page.get_by_role("textbox", name="Message").fill(f"run {turn}")
            page.get_by_role("button", name="Send").click()
            page.get_by_role("log", name="conversation").get_by_text(
                f"ok {turn}", exact=True
            ).wait_for()
        emitted, seen = page.evaluate("() => [window.__emitted, window.__done]")
        browser.close()
    return [seen[call_id] - emitted[call_id] for call_id in emitted if call_id in seen]


# Before the page's scripts: note each tool/result's server time, and when its card is done.
CAPTURE = """
window.__emitted = {}; window.__done = {};
const add = EventSource.prototype.addEventListener;
EventSource.prototype.addEventListener = function (type, listener, options) {
  if (type !== "tool/result") return add.call(this, type, listener, options);
  return add.call(this, type, (message) => {
    const data = JSON.parse(message.data);
    window.__emitted[data.id] = Date.parse(data.time);
    listener(message);
  }, options);
};
new MutationObserver(() => {
  for (const card of document.querySelectorAll("article[data-call]")) {
    const id = card.dataset.call;
    if (!(id in window.__done) && card.querySelector(".status").textContent === "done")
      window.__done[id] = Date.now();
  }
}).observe(document, { subtree: true, childList: true, characterData: true });
"""


def served_card_latency(config: Path) -> list[float]:
    """``harness run`` in its own process (as people run it), the browser in this one."""
    with harness_run(config) as base:
        return result_to_card(base)


async def main() -> None:
    from harness.testing import Reply, Rule, ScriptedServer, call

    rules = [
        Rule(Reply.calls(call("echo", {"text": f"turn {n}"})), user=re.compile(rf"^run {n}$"))
        for n in range(TURNS)
    ] + [Rule(Reply.say(f"ok {n}"), result=re.compile(rf"turn {n}\b")) for n in range(TURNS)]
    with TemporaryDirectory() as folder, ScriptedServer(rules) as model:
        config = Path(folder) / "cordis.yml"
        config.write_text(
            "insert:\n"
            f"  - {{ id: echo, name: {ROOT / 'plugins' / 'echo.py'} }}\n"
            "  - id: model\n    name: harness:openai\n"
            f"    config: {{ model: scripted, base_url: '{model.url}' }}\n"
            f"  - id: agent\n    name: harness:agent\n    config: {{ sessions: null }}\n"
        )
        rates = await serve(config, fan_out)
        latencies = await anyio.to_thread.run_sync(served_card_latency, config)
    print("live events delivered (2000 events; wall time)")
    for pages, (per_page, total) in rates.items():
        print(
            f"  {pages:>3} page(s): {per_page:>9,.0f} events/s per page  {total:>10,.0f} in total"
        )
    print(f"tool result -> card in the DOM ({len(latencies)} turns, Chromium)")
    print(f"  median {statistics.median(latencies):.1f} ms   worst {max(latencies):.1f} ms")
