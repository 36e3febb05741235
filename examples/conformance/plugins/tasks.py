"""The suite's tools for the MCP tasks extension (``tasks-*`` scenarios): a plain tool
(``greet``) and tools that run as tasks for a client that declared the extension.

``task="optional"`` lets a client without the extension call the tool as usual; ``"required"``
refuses it (-32021). Inside a task, an input (``ctx.ask``, ``ctx.inputs``) parks the task as
``input_required`` until the client answers with ``tasks/update``. With ``ask_first=True``
the first inputs are asked in the request instead (``InputRequiredResult``), and the call
becomes a task in the round that brings their answers.
"""

from __future__ import annotations

import anyio

from harness import CallContext, define_tool, tool

inject = ["tools"]


@tool
def greet(name: str) -> str:
    """Greet someone by name.

    Args:
        name: Who to greet
    """
    return f"Hello, {name}!"


@tool(task="optional")
async def slow_compute(seconds: float = 0, label: str = "") -> str:
    """Wait a number of seconds, then say so.

    Args:
        seconds: How long to compute
        label: A label echoed in the result
    """
    await anyio.sleep(seconds)
    return f"computed {label} in {seconds:g} s"


async def _fail(args: dict[str, object]) -> None:
    await anyio.sleep(1)
    raise RuntimeError("failing_job failed, as it always does")


failing_job = define_tool(
    name="failing_job",
    description="Fail after about a second (a tool error).",
    execute=_fail,
    task="required",
)

protocol_error_job = define_tool(
    name="protocol_error_job",
    description="Break its own output contract (the host cannot finish the call).",
    execute=lambda args: "not a number",
    output={"schema": {"type": "integer"}},
    task="required",
)


@tool(task="optional")
async def confirm_delete(filename: str, ctx: CallContext) -> str:
    """Ask for a confirmation, then (pretend to) delete a file.

    Args:
        filename: The file to delete
    """
    form = {"type": "object", "properties": {"confirm": {"type": "boolean"}}}
    answer = await ctx.ask(f"Delete {filename}?", form)
    confirmed = answer.action == "accept" and (answer.content or {}).get("confirm")
    return f"{'deleted' if confirmed else 'kept'} {filename}"


@tool(task="optional")
async def multi_input(ctx: CallContext) -> str:
    """Ask two questions at once."""
    form = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "confirm": {"type": "boolean"}},
    }
    answers = await ctx.inputs(
        first=ctx.Ask("First input?", form), second=ctx.Ask("Second input?", form)
    )
    names = [(answers[key].content or {}).get("name") for key in ("first", "second")]
    return "got " + " and ".join(map(str, names))


@tool(task="required", ask_first=True)
async def test_tool_with_task(ctx: CallContext) -> str:
    """Ask for a name, then greet it as a task."""
    form = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    answers = await ctx.inputs(user_name=ctx.Ask("What is your name?", form))
    name = (answers["user_name"].content or {}).get("name", "nobody")
    await anyio.sleep(0.2)  # the work a task is for
    return f"Hello, {name}, from a task!"


def apply(ctx):
    for definition in (
        greet,
        slow_compute,
        failing_job,
        protocol_error_job,
        confirm_delete,
        multi_input,
        test_tool_with_task,
    ):
        ctx.tools.register(definition)
