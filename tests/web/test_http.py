"""The console's HTTP API and its security, against a real ``harness run`` on 127.0.0.1."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import httpx2
import pytest

from .conftest import Served, make_project

JSON = {"Content-Type": "application/json"}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    config = make_project(tmp_path_factory.mktemp("http"))
    server = Served(config)
    yield server
    server.close()


def events(base: str, last: str | None, until: str) -> list[tuple[str, str, dict[str, object]]]:
    """The events of a stream opened after ``last``, up to the first ``until``: (id, type, data)."""
    # as Starlette reads it: a header's bytes are Latin-1 (so b"\xb2" arrives as "\u00b2")
    headers = {b"Last-Event-ID": last.encode("latin-1")} if last else {}
    out: list[tuple[str, str, dict[str, object]]] = []
    with (
        httpx2.Client(timeout=10) as client,
        client.stream("GET", base + "api/events", headers=headers) as response,
    ):
        assert response.headers["content-type"].startswith("text/event-stream")
        fields: dict[str, str] = {}
        for line in response.iter_lines():
            if line == "":
                if "data" in fields:
                    out.append((fields.get("id", ""), fields["event"], json.loads(fields["data"])))
                    if out[-1][1] == until:
                        return out
                fields = {}
            elif not line.startswith(":"):
                key, _, value = line.partition(": ")
                fields[key] = value
    return out


def test_the_page_and_its_files_are_served_with_a_strict_policy(served: Served) -> None:
    page = httpx2.get(served.base)
    assert page.status_code == 200
    assert '<script type="module" src="/static/main.js">' in page.text
    policy = page.headers["content-security-policy"]
    assert "script-src 'self'" in policy
    assert "img-src 'self' data: http: https:" in policy
    assert page.headers["x-content-type-options"] == "nosniff"
    for name in ("main.js", "api.js", "form.js", "render.js", "app.css"):
        assert httpx2.get(served.base + "static/" + name).status_code == 200
    static = Path(__file__).resolve().parents[2] / "harness" / "web" / "static"
    for file in static.iterdir():  # no CDN, no remote import: the page works offline
        text = file.read_text()
        assert not re.search(r"(src|href|from|import)\s*=?\s*[\"'(]?\s*(https?:)?//", text), file


def test_the_page_never_parses_data_as_html() -> None:
    static = Path(__file__).resolve().parents[2] / "harness" / "web" / "static"
    for file in static.glob("*.js"):
        source = file.read_text()
        for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
            assert sink not in source, f"{file.name} uses {sink}"
    assert 'if (key === "text") node.textContent = value;' in (static / "render.js").read_text()


def test_a_rendered_tag_comes_back_as_plain_text(served: Served) -> None:
    hostile = '<img src=x onerror="alert(1)">'
    done = httpx2.post(served.base + "api/tools/echo/call", json={"args": {"text": hostile}})
    assert done.headers["content-type"] == "application/json"
    assert done.json()["content"] == [{"type": "text", "text": f"Echo: {hostile}"}]


def test_plugins_problems_and_tools(served: Served) -> None:
    plugins = httpx2.get(served.base + "api/plugins").json()
    echo = next(entry for entry in plugins if entry["id"] == "echo")
    assert echo == {
        "id": "echo",
        "name": "./plugins/echo.py",
        "state": "active",
        "error": None,
        "group": None,
        "tools": ["echo"],
        "enabled": True,
        "problems": [],
    }
    add = next(entry for entry in plugins if entry["id"] == "add")
    assert add["group"] == "math"
    assert httpx2.get(served.base + "api/problems").json() == {"ok": True, "problems": []}
    tools = {tool["name"]: tool for tool in httpx2.get(served.base + "api/tools").json()}
    assert tools["echo"]["parameters"]["required"] == ["text"]
    assert tools["echo"]["owner"] == "plugin 'echo'"


def test_calls_return_the_tool_result(served: Served) -> None:
    url = served.base + "api/tools/add/call"
    done = httpx2.post(url, json={"args": {"a": 2, "b": 3}, "id": "c1"}).json()
    assert done["id"] == "c1"
    assert done["result"] == 5
    assert done["code"] is None
    assert done["duration_ms"] >= 0
    bad = httpx2.post(url, json={"args": {"a": "two", "b": 3}}).json()
    assert bad["code"] == "invalid_args"
    assert "a: expected number, got string" in bad["error"]
    unknown = httpx2.post(served.base + "api/tools/nope/call", json={"args": {}}).json()
    assert (unknown["code"], unknown["error"]) == ("unknown_tool", "Tool nope not found")


def test_malformed_requests_get_a_clear_error(served: Served) -> None:
    url = served.base + "api/tools/add/call"
    broken = httpx2.post(url, content=b"{not json", headers=JSON)
    assert broken.status_code == 400
    assert broken.json()["error"].startswith("the request body is not valid JSON")
    listed = httpx2.post(url, content=b"[1]", headers=JSON)
    assert listed.json() == {"error": "the request body must be a JSON object, not list"}
    extra = httpx2.post(url, json={"arguments": {}})
    assert extra.status_code == 400
    assert "unknown field(s) arguments" in extra.json()["error"]
    missing = httpx2.post(served.base + "api/plugins/ghost/disable", json={})
    assert missing.status_code == 404
    assert "no entry has id 'ghost'" in missing.json()["error"]
    assert httpx2.get(served.base + "api/nothing").status_code == 404
    huge = httpx2.post(url, content=b'{"args": "' + b"x" * (2 * 1024 * 1024) + b'"}', headers=JSON)
    assert huge.status_code == 413


def test_wrong_host_is_refused(served: Served) -> None:
    for path in ("", "api/plugins", "api/events"):
        refused = httpx2.get(served.base + path, headers={"Host": "evil.example:8765"})
        assert refused.status_code == 421
        assert refused.json() == {
            "error": "this server does not answer to the host 'evil.example:8765'"
        }


def test_cross_origin_and_non_json_posts_change_nothing(served: Served) -> None:
    config = served.config
    before = config.read_text()
    url = served.base + "api/plugins/echo/disable"
    foreign = httpx2.post(url, json={}, headers={"Origin": "http://evil.example"})
    assert foreign.status_code == 403
    assert foreign.json() == {"error": "cross-origin request from http://evil.example refused"}
    other_port = httpx2.post(url, json={}, headers={"Origin": "http://127.0.0.1:1"})
    assert other_port.status_code == 403
    site = httpx2.post(url, json={}, headers={"Sec-Fetch-Site": "cross-site"})
    assert site.status_code == 403
    for kind in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data"):
        form = httpx2.post(url, content=b"{}", headers={"Content-Type": kind})
        assert form.status_code == 415
        assert "must be JSON" in form.json()["error"]
    bare = httpx2.post(url)
    assert bare.status_code == 415
    assert config.read_text() == before
    deleted = httpx2.request("DELETE", served.base + "api/sessions/x")
    assert deleted.status_code == 415


def test_reads_from_another_page_are_refused_and_scripts_are_answered(served: Served) -> None:
    def get(path: str, **headers: str) -> int:
        return httpx2.get(served.base + path, headers=headers).status_code

    # a script (curl, a client library) sends neither Origin nor Sec-Fetch-*: no GET changes
    # state, so it is answered (the token is what keeps an unwelcome script out)
    assert get("api/tools") == 200
    assert get("api/tools", **{"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors"}) == 200
    assert get("", **{"Sec-Fetch-Site": "none", "Sec-Fetch-Mode": "navigate"}) == 200
    # another page's fetch or EventSource carries its Origin
    assert get("api/tools", Origin="http://evil.example") == 403
    assert get("api/events", Origin="null") == 403
    # its <img>, <script> and frames carry no Origin, but Sec-Fetch-Site says whose they are
    for site in ("cross-site", "same-site"):
        for mode, dest in (("no-cors", "image"), ("no-cors", "script"), ("navigate", "iframe")):
            headers = {"Sec-Fetch-Site": site, "Sec-Fetch-Mode": mode, "Sec-Fetch-Dest": dest}
            refused = httpx2.get(served.base + "api/plugins", headers=headers)
            assert refused.status_code == 403, headers
            assert refused.json()["error"].startswith(f"a {site} request (for a {dest})")
    # a link followed from another site opens the console in its own tab
    link = {
        "Sec-Fetch-Site": "cross-site",
        "Sec-Fetch-Mode": "navigate",
        "Sec-Fetch-Dest": "document",
    }
    assert get("", **link) == 200


def test_events_resume_after_the_last_id(served: Served) -> None:
    hello = events(served.base, None, "hello")
    assert hello[0][1] == "hello"
    start = hello[0][0]
    config = served.config
    original = config.read_text()
    assert httpx2.post(served.base + "api/plugins/greet/disable", json={}).json()["changed"]
    try:
        got = events(served.base, start, "plugins/change")
        kinds = [kind for _, kind, _ in got]
        assert kinds[0] == "hello"
        assert "reload/start" in kinds
        assert {"type": "tools/change", "kind": "removed", "name": "greet"} in [
            d for _, _, d in got
        ]
        numbers = [int(event_id.rsplit("-", 1)[1]) for event_id, kind, _ in got[1:]]
        assert numbers == list(range(numbers[0], numbers[0] + len(numbers)))
        assert numbers[0] == int(start.rsplit("-", 1)[1]) + 1
        # the same id again replays the same events: nothing is lost between connections
        assert events(served.base, start, "plugins/change")[1:] == got[1:]
    finally:
        httpx2.post(served.base + "api/plugins/greet/enable", json={})
    assert config.read_text().replace("    enabled: true\n", "") == original
    stale = events(served.base, "0000-5", "resync")
    assert [kind for _, kind, _ in stale] == ["hello", "resync"]


def test_a_malformed_last_event_id_is_no_id(served: Served) -> None:
    epoch = events(served.base, None, "hello")[0][0].rsplit("-", 1)[0]
    forged = [
        f"{epoch}-\u00b2",  # isdigit() is True, int() refuses it
        f"{epoch}-" + "9" * 5000,  # int() refuses over 4300 digits
        f"{epoch}-" + "9" * 20,
        f"{epoch}-",
        f"{epoch}--1",
        f"{epoch}-+5",
        f"{epoch}-0x10",
        "-5",
        "\u00b2",
    ]
    for value in forged:
        got = events(served.base, value, "hello")
        assert [kind for _, kind, _ in got] == ["hello"], value
        assert got[0][0].rsplit("-", 1)[0] == epoch
        # no id: the stream starts now, as it does without one (no resync)
        assert got[0][2] == {"type": "hello", "id": got[0][0]}
    # the query parameter carries any Unicode: Arabic-Indic digits are not an event number
    with httpx2.Client(timeout=10) as client:
        for value in (f"{epoch}-\u0661\u0662", f"{epoch}-\u00b2\u00b3"):
            url = served.base + "api/events?" + urlencode({"last_event_id": value})
            with client.stream("GET", url) as response:
                lines = response.iter_lines()
                assert next(lines) == "retry: 1000"
                assert next(lines).startswith(f"id: {epoch}-")
                assert next(lines) == "event: hello"
    # the stream still serves, and the server logged no error
    assert events(served.base, None, "hello")[0][1] == "hello"
    log = "".join(served.lines)
    assert "Traceback" not in log
    assert "ValueError" not in log


def test_chat_says_what_to_configure_without_a_model(served: Served) -> None:
    answer = httpx2.get(served.base + "api/sessions")
    assert answer.status_code == 503
    assert answer.json()["configure"] is True
    assert "harness:openai" in answer.json()["error"]


def test_token_beyond_loopback(tmp_path: Path) -> None:
    config = make_project(tmp_path)
    server = Served(config, "--host", "0.0.0.0", "--token", "s3cret")
    try:
        assert server.url == server.base  # its stderr is no terminal: no token in the log
        base = server.base.replace("0.0.0.0", "127.0.0.1")
        for path in ("", "api/plugins", "api/events"):
            missing = httpx2.get(base + path)
            assert missing.status_code == 401
            assert "unauthorized" in missing.json()["error"]
        assert (
            httpx2.get(base + "api/plugins", headers={"Authorization": "Bearer nope"}).status_code
            == 401
        )
        assert httpx2.post(base + "api/plugins/echo/disable", json={}).status_code == 401
        bearer = httpx2.get(base + "api/plugins", headers={"Authorization": "Bearer s3cret"})
        assert bearer.status_code == 200
        entry = httpx2.get(base + "?token=s3cret&x=1")
        assert entry.status_code == 303
        assert entry.headers["location"] == "/?x=1"
        cookie = entry.headers["set-cookie"]
        assert "HttpOnly" in cookie
        assert "SameSite=Strict" in cookie
        assert "s3cret" not in cookie
        name, value = cookie.split(";")[0].split("=", 1)
        with httpx2.Client(cookies={name: value}) as browser:
            assert browser.get(base + "api/tools").status_code == 200
        with httpx2.Client(cookies={name: "forged"}) as forger:
            assert forger.get(base + "api/tools").status_code == 401
        assert httpx2.get(base + "?token=wrong").status_code == 401
        # /mcp keeps its own gate: a bearer token, never the console's cookie
        mcp = httpx2.post(base + "mcp", json={}, cookies={name: value})
        assert mcp.status_code == 401
    finally:
        server.close()


def test_no_web_serves_mcp_only(tmp_path: Path) -> None:
    config = make_project(tmp_path)
    harness = str(Path(sys.executable).parent / "harness")
    process = subprocess.Popen(
        [harness, "run", "-c", str(config), "--port", "0", "--no-web", "--no-watch"],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stderr is not None
        server_lines = []
        url = ""
        for line in process.stderr:
            server_lines.append(line)
            found = re.search(r"serving MCP at (\S+)", line)
            if found:
                url = found.group(1)
                break
        assert url
        assert httpx2.get(url.removesuffix("mcp")).status_code == 404
        assert not any("web console" in line for line in server_lines)
    finally:
        process.terminate()
        process.wait(timeout=20)
        assert process.stderr is not None
        process.stderr.close()
