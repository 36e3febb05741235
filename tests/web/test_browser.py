"""The console in headless Chromium, driven through its accessible names only."""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from .conftest import SHOTS, Served, make_project
from .plugins_src import EXTRA, KINDS, PIXEL, PNG

WAIT = 15_000  # ms: the longest any live update may take


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp("browser")
    config = make_project(folder, EXTRA, {"kinds.py": KINDS, "pixel.py": PIXEL})
    server = Served(config)
    yield server
    server.close()


@pytest.fixture
def page(browser: Any, served: Served) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1100, "height": 800})
    tab = context.new_page()
    tab.set_default_timeout(WAIT)
    errors: list[str] = []
    tab.on("pageerror", lambda error: errors.append(str(error)))
    yield tab
    context.close()
    assert errors == []


def shot(page: Any, name: str) -> None:
    """A screenshot for docs/web.md (kept when HARNESS_SCREENSHOTS is set, e.g. by make docs)."""
    if os.environ.get("HARNESS_SCREENSHOTS"):
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"web-{name}.png"))


def open_view(page: Any, served: Served, view: str) -> None:
    page.goto(served.base)
    page.get_by_text("live", exact=True).wait_for()
    page.get_by_role("link", name=view).click()
    page.get_by_role("heading", name=view, level=2).wait_for()
    page.evaluate("window.__marker = 'same page'")


def same_page(page: Any) -> bool:
    return bool(page.evaluate("window.__marker === 'same page'"))


def config_of(served: Served) -> Path:
    return served.config


def test_switching_an_entry_edits_the_config_and_the_tools_follow(
    page: Any, served: Served
) -> None:
    config = config_of(served)
    before = config.read_text()
    open_view(page, served, "Plugins")
    switch = page.get_by_role("checkbox", name="enabled echo")
    assert switch.is_checked()
    shot(page, "plugins")
    switch.uncheck()
    page.get_by_role("link", name="Tools").click()
    page.get_by_role("region", name="greet").wait_for()
    page.get_by_role("region", name="echo").wait_for(state="detached")
    text = config.read_text()
    assert re.search(r"- id: echo\n    name: ./plugins/echo.py\n    enabled: false\n", text)
    assert [line for line in text.splitlines() if "#" in line] == [
        line for line in before.splitlines() if "#" in line
    ]  # every comment kept
    page.get_by_role("link", name="Plugins").click()
    page.get_by_role("checkbox", name="enabled echo").check()
    page.get_by_role("link", name="Tools").click()
    page.get_by_role("region", name="echo").wait_for()
    assert config.read_text().replace("    enabled: true\n", "") == before
    assert same_page(page)
    page.get_by_role("link", name="Chat").click()
    notice = page.get_by_role("note")
    notice.get_by_text("No agent to chat with").wait_for()
    assert "harness:openai" in notice.inner_text()
    assert page.get_by_role("button", name="Send").is_hidden()


def test_editing_a_plugin_file_updates_the_tools_page(page: Any, served: Served) -> None:
    source = config_of(served).parent / "plugins" / "greet.py"
    original = source.read_text()
    open_view(page, served, "Tools")
    region = page.get_by_role("region", name="greet")
    region.get_by_text("Greet a person by name").wait_for()
    source.write_text(original.replace("Greet a person by name", "Welcome a person by name"))
    try:
        region.get_by_text("Welcome a person by name").wait_for()
    finally:
        source.write_text(original)
    region.get_by_text("Greet a person by name").wait_for()
    assert same_page(page)


def test_running_tools_from_their_forms(page: Any, served: Served) -> None:
    open_view(page, served, "Tools")
    echo = page.get_by_role("region", name="echo")
    hostile = '<img src=x onerror="window.__xss = 1">'
    echo.get_by_label("text", exact=True).fill(hostile)
    echo.get_by_role("button", name="Run").click()
    result = echo.get_by_role("region", name="result")
    result.get_by_text("done").wait_for()
    assert result.locator("pre.block-text").inner_text() == f"Echo: {hostile}"
    assert result.locator("img").count() == 0
    assert json.loads(result.locator("pre.json").inner_text()) == {"text": f"Echo: {hostile}"}
    shot(page, "tools")

    add = page.get_by_role("region", name="add")
    add.get_by_label("a", exact=True).fill("two")
    add.get_by_label("b", exact=True).fill("3")
    add.get_by_role("button", name="Run").click()
    failed = add.get_by_role("region", name="result")
    failed.get_by_text("error code: invalid_args").wait_for()
    assert "a: expected number, got string" in failed.inner_text()
    add.get_by_label("a", exact=True).fill("2")
    add.get_by_role("button", name="Run").click()
    failed.get_by_text("done").wait_for()
    assert json.loads(failed.locator("pre.json").inner_text()) == 5

    kinds = page.get_by_role("region", name="kinds")
    kinds.get_by_label("word", exact=True).fill("hi")
    kinds.get_by_label("count", exact=True).fill("3")
    kinds.get_by_label("ratio", exact=True).fill("0.5")
    kinds.get_by_label("flag", exact=True).check()
    kinds.get_by_label("color", exact=True).select_option("green")
    kinds.get_by_role("button", name="Add to tags").click()
    kinds.get_by_label("tags[0]", exact=True).fill("a")
    kinds.get_by_role("button", name="Add to tags").click()
    kinds.get_by_label("tags[1]", exact=True).fill("b")
    kinds.get_by_label("point.x", exact=True).fill("1.5")
    kinds.get_by_label("extra", exact=True).fill('{"deep": [1, null]}')
    kinds.get_by_label("either", exact=True).select_option("integer")
    kinds.get_by_label("either value", exact=True).fill("7")
    kinds.get_by_role("button", name="Run").click()
    answer = kinds.get_by_role("region", name="result")
    answer.get_by_text("done").wait_for()
    assert json.loads(answer.locator("pre.json").inner_text()) == {
        "word": "hi",
        "count": 3,
        "ratio": 0.5,
        "flag": True,
        "color": "green",
        "tags": ["a", "b"],
        "point": {"x": 1.5},
        "extra": {"deep": [1, None]},
        "either": 7,
    }
    kinds.get_by_label("extra", exact=True).fill("{broken")
    kinds.get_by_role("button", name="Run").click()
    answer.get_by_text("extra: not valid JSON").wait_for()

    pixel = page.get_by_role("region", name="pixel")
    pixel.get_by_role("button", name="Run").click()
    shown = pixel.get_by_role("region", name="result")
    shown.get_by_text("done").wait_for()
    sources = shown.locator("img").evaluate_all("images => images.map(image => image.src)")
    assert sources == [f"data:image/png;base64,{PNG}", "http://127.0.0.1:9/pixel.png"]
    shown.get_by_text("image not shown: only data: and http(s) image URLs are displayed").wait_for()
    assert shown.locator("pre.block-text").inner_text() == "<b>not bold</b>"
    assert shown.locator("b").count() == 0
    assert page.evaluate("window.__xss") is None


def test_an_ask_tool_is_approved_and_denied_in_its_card(page: Any, served: Served) -> None:
    workspace = config_of(served).parent / "workspace"
    open_view(page, served, "Tools")
    write = page.get_by_role("region", name="write_text_file")
    write.get_by_label("path", exact=True).fill("approved.txt")
    write.get_by_label("content", exact=True).fill("line\u202eevil")
    write.get_by_role("button", name="Run").click()
    result = write.get_by_role("region", name="result")
    result.get_by_text("waiting for approval").wait_for()
    assert "\\u{202e}" in result.inner_text()  # the hidden character is shown, not obeyed
    shot(page, "approval")
    result.get_by_role("button", name="Allow once").click()
    result.get_by_text("done").wait_for()
    assert (workspace / "approved.txt").read_text() == "line\u202eevil"

    write.get_by_label("path", exact=True).fill("denied.txt")
    write.get_by_role("button", name="Run").click()
    result.get_by_role("button", name="Deny").wait_for()
    result.get_by_label("Reason", exact=True).fill("not today")
    result.get_by_role("button", name="Deny").click()
    result.get_by_text("error code: denied").wait_for()
    assert "not today" in result.inner_text()
    assert not (workspace / "denied.txt").exists()


class Proxy:
    """A TCP proxy on 127.0.0.1 whose connections the test can cut, as a network drop would."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.sockets: list[socket.socket] = []
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target))
            with self.lock:
                self.sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                with contextlib.suppress(OSError):
                    end.shutdown(socket.SHUT_RDWR)

    def drop(self) -> None:
        with self.lock:
            dropped, self.sockets = self.sockets, []
        for end in dropped:
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)
            end.close()

    def close(self) -> None:
        self.listener.close()
        self.drop()


def test_a_dropped_stream_resumes_and_misses_nothing(browser: Any, served: Served) -> None:
    port = int(served.base.rsplit(":", 1)[1].strip("/"))
    proxy = Proxy(port)
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(WAIT)
    try:
        base = f"http://127.0.0.1:{proxy.port}/"
        page.goto(base + "#/plugins")
        page.get_by_text("live", exact=True).wait_for()
        switch = page.get_by_role("checkbox", name="enabled greet")
        assert switch.is_checked()
        page.route("**/api/events*", lambda route: route.abort())  # hold the reconnection
        proxy.drop()
        page.get_by_text(re.compile("reconnecting|disconnected")).wait_for()
        # while the page is away: a change made elsewhere
        assert httpx2.post(served.base + "api/plugins/greet/disable", json={}).json()["changed"]
        page.unroute("**/api/events*")
        page.get_by_text("live", exact=True).wait_for()
        switch.wait_for(state="attached")
        page.wait_for_function(
            "() => !document.querySelector('[aria-label=\"enabled greet\"]').checked"
        )
        ids = page.locator("#activity li").evaluate_all(
            "items => items.map(item => item.dataset.id)"
        )
        numbers = [int(value.rsplit("-", 1)[1]) for value in ids]
        assert numbers == list(range(numbers[0], numbers[0] + len(numbers)))
        texts = page.locator("#activity li").evaluate_all(
            "items => items.map(item => item.textContent)"
        )
        print(ids, texts)
        assert any("tools/change" in text for text in texts)
    finally:
        httpx2.post(served.base + "api/plugins/greet/enable", json={})
        context.close()
        proxy.close()


def test_the_console_works_from_the_keyboard(page: Any, served: Served) -> None:
    page.goto(served.base)
    page.get_by_text("live", exact=True).wait_for()
    names = []
    for _ in range(8):
        page.keyboard.press("Tab")
        names.append(page.evaluate("document.activeElement.textContent"))
        if names[-1] == "Tools":
            break
    assert names[-3:] == ["Chat", "Plugins", "Tools"]  # after the skip link
    page.keyboard.press("Enter")
    page.wait_for_function("document.activeElement.id === 'tools-title'")
    field = page.get_by_role("region", name="echo").get_by_label("text", exact=True)
    field.focus()
    page.keyboard.type("typed")
    page.keyboard.press("Enter")  # submits the tool's form: Run
    result = page.get_by_role("region", name="echo").get_by_role("region", name="result")
    result.get_by_text("Echo: typed", exact=True).wait_for()


class HostilePage:
    """Another site on this machine (``localhost``, not ``127.0.0.1``) serving one page."""

    def __init__(self, html: str) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        body = html.encode()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/html")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://localhost:{self.server.server_address[1]}/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


def test_another_site_cannot_read_the_console(browser: Any, served: Served) -> None:
    api = served.base  # http://127.0.0.1:PORT/: another site than http://localhost:...
    hostile = HostilePage(
        f"""<!doctype html><title>elsewhere</title>
        <script>
          window.settled = 0;
          const done = () => {{ window.settled += 1; }};
        </script>
        <img src="{api}api/tools?as=img" onload="done()" onerror="done()">
        <script src="{api}api/plugins?as=script" onload="done()" onerror="done()"></script>
        <link rel="stylesheet" href="{api}static/app.css?as=style" onload="done()"
              onerror="done()">
        <iframe src="{api}?as=frame" onload="done()"></iframe>
        <a id="go" href="{api}?as=link">the console</a>
        <script>
          fetch("{api}api/problems?as=no-cors", {{mode: "no-cors"}}).then(done, done);
          fetch("{api}api/tools?as=cors").then(done, done);
          const events = new EventSource("{api}api/events?as=events");
          events.onerror = () => {{ events.close(); done(); }};
          events.onopen = () => {{ events.close(); done(); }};
        </script>"""
    )
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(WAIT)
    # the network's own view: what Chromium sent, and the status of responses the page
    # may not read (blocked by ORB or CORS)
    devtools = context.new_cdp_session(page)
    devtools.send("Network.enable")
    sent_by_id: dict[str, dict[str, str]] = {}
    status_by_id: dict[str, int] = {}
    ids: dict[str, str] = {}

    def kind(request_id: str) -> str | None:
        found = re.search(r"[?&]as=([a-z-]+)", ids.get(request_id, ""))
        return found.group(1) if found else None

    def will_send(event: dict[str, Any]) -> None:
        ids[event["requestId"]] = event["request"]["url"]

    def headers_sent(event: dict[str, Any]) -> None:  # may come before will_send
        sent_by_id[event["requestId"]] = {
            key.lower(): value for key, value in event["headers"].items()
        }

    def answered(event: dict[str, Any]) -> None:
        status_by_id[event["requestId"]] = event["statusCode"]

    devtools.on("Network.requestWillBeSent", will_send)
    devtools.on("Network.requestWillBeSentExtraInfo", headers_sent)
    devtools.on("Network.responseReceivedExtraInfo", answered)
    kinds = ("img", "script", "style", "frame", "no-cors", "cors", "events")
    try:
        page.goto(hostile.url)
        page.wait_for_function(f"window.settled === {len(kinds)}")
        sent = {kind(key): value for key, value in sent_by_id.items() if kind(key)}
        statuses = {kind(key): value for key, value in status_by_id.items() if kind(key)}
        assert statuses == dict.fromkeys(kinds, 403), statuses
        for name in ("img", "script", "style", "frame", "no-cors"):
            # no Origin on these: Sec-Fetch-Site is what tells them apart
            assert "origin" not in sent[name], (name, sent[name])
            assert sent[name]["sec-fetch-site"] == "cross-site"
        for name in ("cors", "events"):
            assert sent[name]["origin"] == hostile.url.rstrip("/")
        # following a link is not reading: the console opens in its own tab
        with page.expect_navigation():
            page.click("#go")
        assert page.url == f"{api}?as=link"
        page.get_by_text("live", exact=True).wait_for()
    finally:
        context.close()
        hostile.close()
