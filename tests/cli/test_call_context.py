"""A running tool on the terminal (DESIGN §16): ``harness chat`` and ``harness call`` draw its
progress as a bar, show its log, and ask its question field by field (an enum as numbered
choices, a boolean as y/n, a number checked as one); ``--yes`` never answers a question; on a
pipe nothing extra reaches standard output. The real executable, on a pseudo-terminal and on
pipes, against the scripted OpenAI-compatible server."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.testing import Reply, Rule, ScriptedServer, call

from ..helpers import run_harness, write
from ..terminal import Terminal

TOOLS = '''
from harness import CallContext, tool

inject = ["tools"]


@tool
async def deploy(service: str, ctx: CallContext) -> str:
    """Deploy a service, asking where."""
    await ctx.progress(1, 3, "built")
    await ctx.log("info", f"built {service}", step=1)
    answer = await ctx.ask(
        "Where to?",
        {
            "region": {"type": "string", "enum": ["eu", "us"], "required": True},
            "replicas": {"type": "integer", "minimum": 1, "default": 1},
            "canary": {"type": "boolean"},
            "note": {"type": "string"},
        },
    )
    if not answer.accepted:
        return f"not deployed: {answer.action} ({answer.reason})"
    await ctx.progress(3, 3, "rolled out")
    got = answer.content
    return (
        f"deployed {service} to {got['region']} x{got.get('replicas')} "
        f"canary={got.get('canary')} note={got.get('note')} via {ctx.surface}"
    )


@tool
async def where(ctx: CallContext) -> list:
    """The caller's roots."""
    return [[root.uri, root.name] for root in await ctx.roots()]


@tool
async def summarize(text: str, ctx: CallContext) -> str:
    """One line about the text, from the caller's model."""
    return (await ctx.sample(text, max_tokens=20)).text


@tool
async def size(ctx: CallContext) -> str:
    """Ask for a size among titled choices."""
    answer = await ctx.ask(
        "Which size?",
        {
            "type": "object",
            "properties": {
                "tier": {
                    "type": "string",
                    "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}],
                },
                "zone": {"type": "string", "enum": ["a", "b"], "enumNames": ["Zone A", "Zone B"]},
                "extras": {"type": "array", "items": {"type": "string", "enum": ["gpu", "ssd"]}},
            },
            "required": ["tier", "zone"],
        },
    )
    return f"{answer.action} {answer.content}"


def apply(ctx):
    for made in (deploy, where, summarize, size):
        ctx.tools.register(made)
'''


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    rules = [
        Rule(Reply.calls(call("deploy", {"service": "api"})), user="deploy the api"),
        Rule(Reply.say("The api is deployed."), tool="deploy"),
    ]
    with ScriptedServer(rules) as scripted:
        yield scripted


def project(folder: Path, server: ScriptedServer | None = None) -> Path:
    write(folder / "tools.py", TOOLS)
    model = ""
    if server is not None:
        model = f"""
          - id: model
            name: harness:openai
            config: {{model: scripted, base_url: "{server.url}"}}
          - id: agent
            name: harness:agent
        """
    return write(
        folder / "cordis.yml",
        f"""
        insert:
          - id: tools
            name: {folder / "tools.py"}
        """
        + model,
    )


def test_harness_chat_draws_progress_shows_logs_and_asks_the_form(
    tmp_path: Path, server: ScriptedServer
) -> None:
    config = project(tmp_path, server)
    term = Terminal(["-c", str(config), "chat", "--no-watch"], tmp_path)
    try:
        at = term.expect("you>")
        term.send("deploy the api\r")
        at = term.expect("1/3 built", at)  # the bar, drawn while the call runs
        at = term.expect('info built api {"step": 1}', at)
        at = term.expect("question from deploy", at)
        at = term.expect("Where to?", at)
        at = term.expect("region [1) eu  2) us] (required):", at)
        term.send("\r")  # required: asked again
        at = term.expect("region is required", at)
        at = term.expect("region [1) eu  2) us] (required):", at)
        term.send("2\r")
        at = term.expect("replicas (a whole number) [default: 1]:", at)
        term.send("many\r")
        at = term.expect("replicas takes a whole number, such as 3", at)
        at = term.expect("replicas (a whole number) [default: 1]:", at)
        term.send("2\r")
        at = term.expect("canary [y/n]:", at)
        term.send("y\r")
        at = term.expect("note:", at)
        term.send("after lunch\r")
        at = term.expect("deployed api to us x2 canary=True note=after lunch via agent", at)
        at = term.expect("The api is deployed.", at)
        at = term.expect("you>", at)
        term.send("/quit\r")
        assert term.close() == 0
    finally:
        term.kill()
    # the log entry is in the session's log; the progress is not
    session = re.search(r"session (\S+)", term.output)
    assert session is not None
    shown = run_harness("-c", str(config), "sessions", "show", session.group(1), cwd=tmp_path)
    assert 'info built api {"step": 1}' in shown.stdout
    events = run_harness(
        "-c", str(config), "sessions", "show", session.group(1), "--json", cwd=tmp_path
    )
    kinds = [event["type"] for event in json.loads(events.stdout)]
    assert kinds.count("tool/log") == 1
    assert "tool/progress" not in kinds


def test_harness_call_draws_a_bar_and_asks_on_a_terminal_even_with_yes(tmp_path: Path) -> None:
    config = project(tmp_path)
    args = ["-c", str(config), "call", "deploy", '{"service": "db"}', "--yes"]
    term = Terminal(args, tmp_path)
    try:
        at = term.expect("1/3 built")
        at = term.expect('deploy: info: built db {"step": 1}', at)
        at = term.expect("deploy asks: Where to?", at)
        at = term.expect("region [1) eu  2) us] (required):", at)
        term.send("1\r")
        at = term.expect("replicas (a whole number) [default: 1]:", at)
        term.send("\r")  # the default
        at = term.expect("canary [y/n]:", at)
        term.send("maybe\r")
        at = term.expect("answer y or n", at)
        term.send("n\r")
        at = term.expect("note:", at)
        term.send("\r")  # optional: left out
        term.expect("deployed db to eu x1 canary=False note=None via cli", at)
        assert term.close() == 0
    finally:
        term.kill()


def test_harness_call_offers_titled_choices_by_number_or_title(tmp_path: Path) -> None:
    config = project(tmp_path)
    term = Terminal(["-c", str(config), "call", "size"], tmp_path)
    try:
        at = term.expect("tier [1) Small  2) Large] (required):")
        term.send("Large\r")
        at = term.expect("zone [1) Zone A  2) Zone B] (required):", at)
        term.send("3\r")
        at = term.expect("choose 1 to 2, or one of the values listed", at)
        term.send("1\r")
        at = term.expect("extras [1) gpu  2) ssd] (several: 1,2):", at)
        term.send("2, gpu\r")
        term.expect("accept {'tier': 'l', 'zone': 'a', 'extras': ['ssd', 'gpu']}", at)
        assert term.close() == 0
    finally:
        term.kill()


def test_harness_call_declines_at_the_end_of_input(tmp_path: Path) -> None:
    config = project(tmp_path)
    term = Terminal(["-c", str(config), "call", "deploy", '{"service": "db"}'], tmp_path)
    try:
        at = term.expect("region [1) eu  2) us] (required):")
        term.send("\x04")  # Ctrl-D
        term.expect("not deployed: decline (None)", at)
        assert term.close() == 0
    finally:
        term.kill()


def test_harness_call_on_pipes_prints_nothing_extra_and_yes_never_answers_a_question(
    tmp_path: Path,
) -> None:
    project(tmp_path)
    done = run_harness("call", "deploy", '{"service": "db"}', "--yes", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "not deployed: cancel (nobody can answer tool deploy's question: harness call has no "
        "terminal to ask on (--yes answers approvals, never a tool's question))\n"
    )
    assert 'deploy: info: built db {"step": 1}' in done.stderr
    assert "━" not in done.stderr  # no bar off a terminal
    assert "1/3" not in done.stderr


def test_harness_call_offers_the_project_folder_as_its_root_and_no_model(tmp_path: Path) -> None:
    project(tmp_path)
    done = run_harness("call", "where", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["result"] == [[tmp_path.resolve().as_uri(), tmp_path.name]]
    sampled = run_harness("call", "summarize", '{"text": "x"}', cwd=tmp_path)
    assert sampled.returncode == 1
    assert sampled.stderr.strip().endswith(
        "tool_error: tool summarize asked the caller for sampling (a completion from its "
        "model), and the caller (cli) cannot give it"
    )
