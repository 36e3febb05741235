"""The suite's tools that need the client while they run: progress, logs, sampling,
elicitation (with defaults and every kind of enum), roots, and the 2026-07-28 input rounds.

Each takes the call's context (a parameter annotated ``CallContext``) and asks through it;
harness sends the requests on the client's stream over 2025-11-25, and as
``InputRequiredResult`` rounds with a sealed ``requestState`` over 2026-07-28. The keys given
to ``ctx.inputs`` are the keys of the requests on the wire. Over 2026-07-28 the body runs
again from its start in each round, so what comes before an input is safe to repeat.
"""

from __future__ import annotations

import json

import anyio

from harness import CallContext, tool

inject = ["tools"]


def named(schema: dict[str, object], *required: str) -> dict[str, object]:
    """A form's JSON Schema object with these properties."""
    form: dict[str, object] = {"type": "object", "properties": schema}
    if required:
        form["required"] = list(required)
    return form


@tool
async def test_tool_with_progress(ctx: CallContext) -> str:
    """Report progress 0, 50 and 100 of 100, about 50 ms apart."""
    for done in (0, 50, 100):
        await ctx.progress(done, 100)
        if done < 100:
            await anyio.sleep(0.05)
    return "Progress reported: 0, 50, 100 of 100"


@tool
async def test_tool_with_logging(ctx: CallContext) -> str:
    """Log three entries at info, about 50 ms apart."""
    await ctx.log("info", "Tool execution started")
    await anyio.sleep(0.05)
    await ctx.log("info", "Tool processing data")
    await anyio.sleep(0.05)
    await ctx.log("info", "Tool execution completed")
    return "Logged three entries"


@tool
async def test_sampling(prompt: str, ctx: CallContext) -> str:
    """Ask the client's model to answer a prompt.

    Args:
        prompt: The prompt to send to the LLM
    """
    sampled = await ctx.sample(prompt, max_tokens=100)
    return f"LLM response: {sampled.text}"


@tool
async def test_elicitation(message: str, ctx: CallContext) -> str:
    """Ask the user for a username and an email address.

    Args:
        message: The message to show the user
    """
    answer = await ctx.ask(
        message,
        named(
            {
                "username": {"type": "string", "description": "User's response"},
                "email": {"type": "string", "description": "User's email address"},
            },
            "username",
            "email",
        ),
    )
    return f"User response: action={answer.action}, content={json.dumps(answer.content)}"


@tool
async def test_elicitation_sep1034_defaults(ctx: CallContext) -> str:
    """Ask with a form whose fields all have defaults (SEP-1034)."""
    answer = await ctx.ask(
        "Please review and update the form fields with defaults",
        named(
            {
                "name": {"type": "string", "description": "User name", "default": "John Doe"},
                "age": {"type": "integer", "description": "User age", "default": 30},
                "score": {"type": "number", "description": "User score", "default": 95.5},
                "status": {
                    "type": "string",
                    "description": "User status",
                    "enum": ["active", "inactive", "pending"],
                    "default": "active",
                },
                "verified": {"type": "boolean", "description": "Verified", "default": True},
            }
        ),
    )
    return f"Elicitation completed: action={answer.action}, content={json.dumps(answer.content)}"


def _choices(prefix: str, *titles: str) -> list[dict[str, str]]:
    return [{"const": f"{prefix}{n}", "title": title} for n, title in enumerate(titles, 1)]


@tool
async def test_elicitation_sep1330_enums(ctx: CallContext) -> str:
    """Ask with a form holding each of the five kinds of enum (SEP-1330)."""
    options = ["option1", "option2", "option3"]
    answer = await ctx.ask(
        "Please select options from the enum fields",
        named(
            {
                "untitledSingle": {"type": "string", "enum": options},
                "titledSingle": {
                    "type": "string",
                    "oneOf": _choices("value", "First Option", "Second Option", "Third Option"),
                },
                "legacyEnum": {
                    "type": "string",
                    "enum": ["opt1", "opt2", "opt3"],
                    "enumNames": ["Option One", "Option Two", "Option Three"],
                },
                "untitledMulti": {"type": "array", "items": {"type": "string", "enum": options}},
                "titledMulti": {
                    "type": "array",
                    "items": {
                        "anyOf": _choices("value", "First Choice", "Second Choice", "Third Choice")
                    },
                },
            }
        ),
    )
    return f"Elicitation completed: action={answer.action}, content={json.dumps(answer.content)}"


NAME = named({"name": {"type": "string"}}, "name")


@tool
async def test_input_required_result_elicitation(ctx: CallContext) -> str:
    """Ask the user's name, then greet them."""
    answers = await ctx.inputs(user_name=ctx.Ask("What is your name?", NAME))
    return f"Hello, {(answers['user_name'].content or {}).get('name')}!"


@tool
async def test_input_required_result_sampling(ctx: CallContext) -> str:
    """Ask the client's model for the capital of France."""
    ask = ctx.Sample.of("What is the capital of France?", 100)
    answers = await ctx.inputs(capital_question=ask)
    return f"The model said: {answers['capital_question'].text}"


@tool
async def test_input_required_result_list_roots(ctx: CallContext) -> str:
    """List the client's roots."""
    answers = await ctx.inputs(client_roots=ctx.Roots())
    return "Roots: " + ", ".join(root.uri for root in answers["client_roots"])


@tool
async def test_input_required_result_request_state(ctx: CallContext) -> str:
    """Ask for a confirmation; the answer comes back with the sealed request state."""
    form = named({"ok": {"type": "boolean"}}, "ok")
    answers = await ctx.inputs(confirm=ctx.Ask("Please confirm", form))
    return f"state-ok: confirmed={(answers['confirm'].content or {}).get('ok')}"


@tool
async def test_input_required_result_tampered_state(ctx: CallContext) -> str:
    """Ask for a confirmation; an edited request state is refused."""
    form = named({"ok": {"type": "boolean"}}, "ok")
    answers = await ctx.inputs(confirm=ctx.Ask("Please confirm", form))
    return f"confirmed={(answers['confirm'].content or {}).get('ok')}"


@tool
async def test_input_required_result_multiple_inputs(ctx: CallContext) -> str:
    """Ask for a name, a greeting from the client's model and the roots, in one round."""
    answers = await ctx.inputs(
        user_name=ctx.Ask("What is your name?", NAME),
        greeting=ctx.Sample.of("Generate a greeting", 50),
        client_roots=ctx.Roots(),
    )
    name = (answers["user_name"].content or {}).get("name")
    roots = ", ".join(root.uri for root in answers["client_roots"])
    return f"{answers['greeting'].text} {name} (roots: {roots})"


@tool
async def test_input_required_result_multi_round(ctx: CallContext) -> str:
    """Ask a name, then a favourite colour, in two rounds."""
    first = await ctx.inputs(step1=ctx.Ask("Step 1: What is your name?", NAME))
    color = named({"color": {"type": "string"}}, "color")
    second = await ctx.inputs(step2=ctx.Ask("Step 2: What is your favorite color?", color))
    name = (first["step1"].content or {}).get("name")
    return f"{name} likes {(second['step2'].content or {}).get('color')}"


@tool
async def test_input_required_result_capabilities(ctx: CallContext) -> str:
    """Ask the user and the client's model in one round: a client without elicitation is
    sent the sampling request alone (its question is answered here: cancel)."""
    answers = await ctx.inputs(
        user_name=ctx.Ask("What is your name?", NAME),
        greeting=ctx.Sample.of("Generate a greeting", 50),
    )
    return f"{answers['greeting'].text} (the question: {answers['user_name'].action})"


@tool
async def test_missing_capability(ctx: CallContext) -> str:
    """Needs the client's sampling: a client that did not declare it gets -32021."""
    sampled = await ctx.sample("Say hello", max_tokens=20)
    return sampled.text


def apply(ctx):
    for definition in (
        test_tool_with_progress,
        test_tool_with_logging,
        test_sampling,
        test_elicitation,
        test_elicitation_sep1034_defaults,
        test_elicitation_sep1330_enums,
        test_input_required_result_elicitation,
        test_input_required_result_sampling,
        test_input_required_result_list_roots,
        test_input_required_result_request_state,
        test_input_required_result_tampered_state,
        test_input_required_result_multiple_inputs,
        test_input_required_result_multi_round,
        test_input_required_result_capabilities,
        test_missing_capability,
    ):
        ctx.tools.register(definition)
