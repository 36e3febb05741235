"""``harness chat`` in code mode, on a real pseudo-terminal: the program pauses at an ask."""

from __future__ import annotations

from pathlib import Path

from harness.testing import Reply, Rule, ScriptedServer

from ..terminal import Terminal
from .conftest import project

PROGRAM = """
first = await add(a=1, b=2)
try:
    greeting = await greet(name="Ada")
    print("greeted", greeting["greeting"])
except Exception as e:
    print("refused", str(e))
last = await add(a=first, b=10)
print("last", last)
"""


def test_an_ask_inside_a_program_is_answered_in_the_terminal(tmp_path: Path) -> None:
    rules = [
        Rule(Reply.program(PROGRAM), user="greet"),
        Rule(Reply.answer(lambda text: "OUT " + text.replace("\\n", " | ")), tool="run_code"),
    ]
    with ScriptedServer(rules) as server:
        extra = (
            "  - id: model\n    name: harness:openai\n"
            f"    config: {{model: scripted, base_url: '{server.url}'}}\n"
            "  - id: agent\n    name: harness:agent\n    config: {code_mode: true}\n"
        )
        config = project(tmp_path, extra=extra)
        term = Terminal(["-c", str(config), "chat"], tmp_path)
        try:
            at = term.expect("you>")
            term.send("greet Ada\r")
            at = term.expect("      ▸ add", at)  # the program's first call, nested
            at = term.expect("approval needed: greet", at)
            at = term.expect("[d]eny?", at)
            assert "last 13" not in term.output  # paused at the second call
            term.send("o\r")
            at = term.expect("greet · done", at)
            at = term.expect("OUT ", at)
            at = term.expect("greeted Hello, Ada! | last 13", at)
            at = term.expect("you>", at)
            term.send("greet Ada\r")
            at = term.expect("approval needed: greet", at)
            at = term.expect("[d]eny?", at)
            term.send("d\r")
            at = term.expect("reason (optional):", at)
            term.send("not now\r")
            at = term.expect("greet · denied", at)
            at = term.expect(
                "refused denied: Tool denied: the policy asks before greet runs (rule 'greet') "
                "(denied by the user: not now) | last 13",
                at,
            )
            at = term.expect("you>", at)
            term.send("\x04")
            assert term.close() == 0
        finally:
            if term.proc.poll() is None:
                term.proc.kill()
