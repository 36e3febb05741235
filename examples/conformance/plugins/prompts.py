"""The suite's prompts: test_simple_prompt, test_prompt_with_arguments (whose arguments
complete), test_prompt_with_embedded_resource, test_prompt_with_image, and
test_input_required_result_prompt, which asks the user (it takes the request's context)."""

from __future__ import annotations

import base64

from harness import CallContext, define_prompt, prompt

inject = ["prompts"]

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
WORDS = ("paris", "park", "party", "test", "testing", "tests")


def words(prefix: str, args: dict[str, str]) -> list[str]:
    """Words that begin with what was typed, for completion."""
    return [word for word in WORDS if word.startswith(prefix)]


@prompt(title="Simple Test Prompt")
def test_simple_prompt() -> str:
    """A simple prompt without arguments"""
    return "This is a simple prompt for testing."


@prompt(title="Prompt With Arguments", complete={"arg1": words, "arg2": words})
def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
    """A prompt with required arguments

    Args:
        arg1: First test argument
        arg2: Second test argument
    """
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


test_prompt_with_embedded_resource = define_prompt(
    name="test_prompt_with_embedded_resource",
    title="Prompt With Embedded Resource",
    description="A prompt that includes an embedded resource",
    arguments={
        "resourceUri": {
            "type": "string",
            "required": True,
            "description": "URI of the resource to embed",
        }
    },
    render=lambda args: [
        {
            "role": "user",
            "content": {
                "type": "resource",
                "uri": args["resourceUri"],
                "mime_type": "text/plain",
                "text": "Embedded resource content for testing.",
            },
        },
        {"role": "user", "content": "Please process the embedded resource above."},
    ],
)


@prompt(title="Prompt With Image")
def test_prompt_with_image() -> list[dict[str, object]]:
    """A prompt that includes image content"""
    return [
        {"role": "user", "content": {"type": "image", "data": PNG, "mime_type": "image/png"}},
        {"role": "user", "content": "Please analyze the image above."},
    ]


@prompt(title="Prompt That Asks")
async def test_input_required_result_prompt(ctx: CallContext) -> str:
    """A prompt that asks the user for its context first"""
    form = {
        "type": "object",
        "properties": {"context": {"type": "string"}},
        "required": ["context"],
    }
    answers = await ctx.inputs(user_context=ctx.Ask("What context should the prompt use?", form))
    context = (answers["user_context"].content or {}).get("context")
    return f"Use this context: {context}"


def apply(ctx):
    for definition in (
        test_simple_prompt,
        test_prompt_with_arguments,
        test_prompt_with_embedded_resource,
        test_prompt_with_image,
        test_input_required_result_prompt,
    ):
        ctx.prompts.register(definition)
