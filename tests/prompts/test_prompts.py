"""The ``prompts`` service of a Host: registered by plugins as effects, listed, rendered."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from harness import Context, Host, define_prompt, prompt
from harness.errors import AccessDenied, ArgumentsError, ContentError, DefinitionError, NotFound
from harness.prompts import PromptArgument, PromptsService

from ..resources.conftest import docs_project

pytestmark = pytest.mark.anyio


@pytest.fixture
async def host(tmp_path: Path) -> AsyncIterator[Host]:
    async with Host(docs_project(tmp_path)) as running:
        yield running


async def test_every_host_lists_the_prompts_its_plugins_registered(host: Host) -> None:
    prompts = host.ctx.prompts
    assert isinstance(prompts, PromptsService)
    assert prompts.list() == ["summarize", "look"]
    summarize = prompts.get("summarize")
    assert summarize is not None
    assert summarize.description == "Summarize a topic."
    assert summarize.arguments == (
        PromptArgument("topic", "What to summarize.", required=True),
        PromptArgument("tone", "How it should sound.", required=False),
    )


async def test_render_a_string_and_messages_of_any_block(host: Host) -> None:
    prompts = host.ctx.prompts
    assert await prompts.render("summarize", {"topic": "MCP"}) == [
        {"role": "user", "content": {"type": "text", "text": "Summarize MCP, dry."}}
    ]
    assert await prompts.render("look") == [
        {
            "role": "user",
            "content": {"type": "image", "data": "iVBORw==", "mime_type": "image/png"},
        },
        {"role": "assistant", "content": {"type": "text", "text": "I see it."}},
        {
            "role": "user",
            "content": {
                "type": "resource",
                "uri": "docs://readme",
                "mime_type": "text/markdown",
                "text": "# Readme",
            },
        },
    ]


async def test_arguments_are_checked_and_every_problem_named(host: Host) -> None:
    with pytest.raises(ArgumentsError) as caught:
        await host.ctx.prompts.render("summarize", {"tone": 3, "extra": "x"})
    assert str(caught.value) == (
        "invalid arguments for prompt 'summarize' (it takes tone, topic): topic: required; "
        "tone: expected string, got int; extra: not an argument of this prompt"
    )
    with pytest.raises(NotFound) as unknown:
        await host.ctx.prompts.render("nope")
    assert str(unknown.value) == "prompt 'nope' not found (prompts: summarize, look)"


async def test_completions_get_the_prefix_and_the_other_arguments() -> None:
    seen: list[tuple[str, dict[str, str]]] = []

    def cities(prefix: str, args: dict[str, str]) -> list[str]:
        seen.append((prefix, args))
        return [city for city in ("paris", "park", "party", "rome") if city.startswith(prefix)]

    trip = define_prompt(
        name="trip",
        description="Plan a trip.",
        arguments={"city": {"required": True}, "month": {"type": "string"}},
        render=lambda args: f"Plan {args['city']}",
        complete={"city": cities},
    )
    async with Context() as root:
        await root.plugin(PromptsService)
        root.prompts.register(trip)
        found = await root.prompts.complete("trip", "city", "par", {"month": "May"})
        nothing = await root.prompts.complete("trip", "month", "M")
    assert found.values == ("paris", "park", "party")
    assert found.total == 3
    assert nothing.values == ()
    assert seen == [("par", {"month": "May"})]


async def test_the_policy_refuses_gets_by_name_glob(tmp_path: Path) -> None:
    async with Host(docs_project(tmp_path, policy="{ rules: { 'prompt:sum*': ask } }")) as host:
        with pytest.raises(AccessDenied) as denied:
            await host.ctx.prompts.render("summarize", {"topic": "x"})
        assert await host.ctx.prompts.render("look")
    assert str(denied.value) == (
        "denied: the policy asks before prompt:summarize (rule 'prompt:sum*'), and nobody "
        "is asked here"
    )


async def test_a_render_that_fails_or_returns_what_cannot_be_served() -> None:
    async with Context() as root:
        await root.plugin(PromptsService)
        root.prompts.register(
            define_prompt(name="boom", description="d", render=lambda args: 1 / 0)
        )
        root.prompts.register(
            define_prompt(
                name="odd",
                description="d",
                render=lambda args: [{"role": "system", "content": "x"}],
            )
        )
        with pytest.raises(ContentError) as boom:
            await root.prompts.render("boom")
        with pytest.raises(ContentError) as odd:
            await root.prompts.render("odd")
    assert str(boom.value) == "rendering prompt 'boom' failed: division by zero"
    assert str(odd.value) == (
        "prompt 'odd': message [0]: role must be 'user' or 'assistant', not 'system'"
    )


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda: define_prompt(name="has space", description="d", render=print),
            "prompt name 'has space' is invalid: use 1 to 128 letters, digits, '_', '-' or '.'",
        ),
        (
            lambda: define_prompt(
                name="p", description="d", render=print, arguments={"n": {"type": "number"}}
            ),
            "prompt 'p': arguments.n: prompt arguments are strings (type: string)",
        ),
        (
            lambda: define_prompt(
                name="p", description="d", render=print, arguments={"n": {"enum": ["a"]}}
            ),
            "prompt 'p': arguments.n has unknown keys ['enum']; a prompt argument is a string "
            "node with type, description and required",
        ),
        (
            lambda: prompt(lambda count: "x"),
            "prompt '<lambda>': give the function a docstring or pass description=",
        ),
    ],
)
def test_malformed_definitions_are_refused_when_defined(make: Any, message: str) -> None:
    with pytest.raises(DefinitionError) as caught:
        make()
    assert str(caught.value) == message


def test_prompt_arguments_must_be_strings() -> None:
    def count(n: int) -> str:
        """Count."""
        return str(n)

    with pytest.raises(DefinitionError) as caught:
        prompt(count)
    assert str(caught.value) == (
        "prompt 'count': argument 'n' must be annotated str (prompt arguments are strings)"
    )
