"""The agent loop's own cost per step and per turn, beside pydantic-ai and the OpenAI Agents SDK.

Every framework drives the same ``add(a, b)`` tool through the same scripted server
(``harness.testing.ScriptedServer`` on 127.0.0.1, its own thread): a turn is two steps —
a request answered by one tool call, then a request answered by text. Rounds interleave the
cases; each keeps its best round.

- *client CPU per turn*: CPU time of the calling thread for a whole turn (the server runs on
  another thread, so this is everything but the model: the SDK, the framework, harness's
  pipeline, its session log on disk and its events);
- *overhead per step*: client CPU per turn minus that of the bare openai SDK making the same
  two requests in a hand-written loop (streamed for harness, which streams; not streamed for
  the peers, whose default ``run`` does not), divided by the two steps.

Then: resuming a session whose log holds 1000 events (load, parse, rebuild the history).
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from harness import Host
from harness.testing import Reply, Rule, ScriptedServer, call

PLUGINS = Path(__file__).resolve().parents[1] / "plugins"
PLUGINS = Path(__file__).resolve().parents[1] / "plugins"
TURNS = 40
ROUNDS = 7
RULES = [
    Rule(Reply.calls(call("add", {"a": 2, "b": 3})), user="add"),
    Rule(Reply.say("2 + 3 = 5"), tool="add"),
]
PROMPT = "add 2 and 3"
SYSTEM = "You are a calculator."


async def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


async def _raw(client: Any, stream: bool) -> None:
    """The two requests of a turn with the bare SDK: the floor every framework stands on."""
    tools = [
        {
            "type": "function",
            "function": {
                "name": "add",
                "description": "Add two numbers.",
                "parameters": {
                    "type": "object",
                    "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                    "required": ["a", "b"],
                },
            },
        }
    ]
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": PROMPT},
    ]
    for _ in range(2):
        if stream:
            answer = await client.chat.completions.create(
                model="scripted",
                messages=messages,
                tools=tools,
                stream=True,
                stream_options={"include_usage": True},
            )
            calls: dict[int, dict[str, Any]] = {}
            text = []
            async for chunk in answer:
                for choice in chunk.choices:
                    if choice.delta.content:
                        text.append(choice.delta.content)
                    for piece in choice.delta.tool_calls or ():
                        slot = calls.setdefault(piece.index, {"id": "", "name": "", "args": ""})
                        slot["id"] = piece.id or slot["id"]
                        if piece.function is not None:
                            slot["name"] += piece.function.name or ""
                            slot["args"] += piece.function.arguments or ""
            found = list(calls.values())
        else:
            reply = await client.chat.completions.create(
                model="scripted", messages=messages, tools=tools
            )
            message = reply.choices[0].message
            found = [
                {"id": c.id, "name": c.function.name, "args": c.function.arguments}
                for c in message.tool_calls or ()
            ]
        if not found:
            return
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": c["id"],
                        "type": "function",
                        "function": {"name": c["name"], "arguments": c["args"]},
                    }
                    for c in found
                ],
            }
        )
        for item in found:
            value = await add(**json.loads(item["args"]))
            messages.append({"role": "tool", "tool_call_id": item["id"], "content": str(value)})


async def cases(url: str, folder: Path, stack: Any) -> tuple[dict[str, Any], Any]:
    from openai import AsyncOpenAI

    def client(**options: Any) -> AsyncOpenAI:
        # Closed before this benchmark's loop ends: an openai client left to the garbage
        # collector closes itself on whatever loop runs then (a later benchmark's), and that
        # task fails ("Task exception was never retrieved").
        made = AsyncOpenAI(base_url=url, api_key="bench", **options)
        stack.push_async_callback(made.close)
        return made

    raw_client = client(max_retries=0)
    found: dict[str, Any] = {
        "openai SDK by hand, streamed (floor for harness)": lambda: _raw(raw_client, True),
        "openai SDK by hand, not streamed (floor for peers)": lambda: _raw(raw_client, False),
    }

    config = folder / "cordis.yml"
    plugins = PLUGINS
    config.write_text(
        yaml.safe_dump(
            {
                "insert": [
                    {"id": "add", "name": str(plugins / "add.py")},
                    {
                        "id": "model",
                        "name": "harness:openai",
                        "config": {"model": "scripted", "base_url": url},
                    },
                    {
                        "id": "agent",
                        "name": "harness:agent",
                        "config": {"system": SYSTEM, "sessions": str(folder / "sessions")},
                    },
                ]
            }
        )
    )
    host = await stack.enter_async_context(Host(config))
    agent = host.ctx.agent

    async def harness_turn() -> None:
        async for _ in agent.session().send(PROMPT):
            pass

    found["harness Agent (session logged to disk)"] = harness_turn

    try:
        from pydantic_ai import Agent
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        model = OpenAIChatModel("scripted", provider=OpenAIProvider(openai_client=client()))
        pydantic_agent = Agent(model, system_prompt=SYSTEM, tools=[add])

        async def pydantic_turn() -> None:
            await pydantic_agent.run(PROMPT)

        found["pydantic-ai Agent.run"] = pydantic_turn
    except ImportError as exc:
        print(f"  (pydantic-ai left out: {exc}; pip install -e '.[bench]')")
    try:
        from agents import Agent as SdkAgent
        from agents import OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled

        set_tracing_disabled(True)  # no trace export to a remote service
        sdk_model = OpenAIChatCompletionsModel(model="scripted", openai_client=client())
        sdk_agent = SdkAgent(
            name="calc", instructions=SYSTEM, tools=[function_tool(add)], model=sdk_model
        )

        async def sdk_turn() -> None:
            await Runner.run(sdk_agent, PROMPT)

        found["OpenAI Agents SDK Runner.run"] = sdk_turn
    except ImportError as exc:
        print(f"  (openai-agents left out: {exc}; pip install -e '.[bench]')")
    return found, agent


async def measure(found: dict[str, Any]) -> dict[str, tuple[float, float]]:
    """Best (client CPU µs, wall µs) per turn of each case, interleaved rounds."""
    best = {label: (float("inf"), float("inf")) for label in found}
    for run in found.values():  # warm up: connections, imports, caches
        for _ in range(5):
            await run()
    for _ in range(ROUNDS):
        for label, run in found.items():
            cpu, wall = time.thread_time_ns(), time.perf_counter_ns()
            for _ in range(TURNS):
                await run()
            cpu_us = (time.thread_time_ns() - cpu) / TURNS / 1000
            wall_us = (time.perf_counter_ns() - wall) / TURNS / 1000
            best[label] = (min(best[label][0], cpu_us), min(best[label][1], wall_us))
    return best


async def resume(folder: Path, agent: Any) -> None:
    """Time resuming a session of 1000 events."""
    from harness.agent.log import dumps

    sessions = folder / "sessions"
    sessions.mkdir(exist_ok=True)
    events: list[dict[str, Any]] = []
    seq = 0

    def add_event(kind: str, **fields: Any) -> None:
        nonlocal seq
        seq += 1
        events.append(
            {
                "seq": seq,
                "time": "2026-12-01T10:00:00.000Z",
                "type": kind,
                "session": "bench-1000",
                **fields,
            }
        )

    turn = 0
    while len(events) < 1000:
        turn += 1
        add_event("turn/start", turn=turn, input=f"question {turn}: add 2 and 3")
        add_event("step/start", turn=turn, step=1)
        call_id = f"call_{turn}"
        add_event(
            "assistant/message",
            text="",
            tool_calls=[{"id": call_id, "name": "add", "args": {"a": 2, "b": 3}}],
        )
        add_event("tool/call", id=call_id, name="add", args={"a": 2, "b": 3})
        add_event(
            "tool/result",
            id=call_id,
            duration_ms=0.1,
            result={
                "id": call_id,
                "name": "add",
                "ok": True,
                "result": 5,
                "content": [{"type": "text", "text": "5"}],
                "error": None,
                "code": None,
            },
        )
        add_event("step/end", turn=turn, step=1, usage={"total_tokens": 120})
        add_event("step/start", turn=turn, step=2)
        add_event("assistant/message", text="2 + 3 = 5, as the tool says.", tool_calls=[])
        add_event("step/end", turn=turn, step=2, usage={"total_tokens": 140})
        add_event("turn/end", turn=turn, reason="done", error=None)
    events = events[:1000]
    events[-1] = {**events[-1], "type": "turn/end", "reason": "done", "error": None}
    path = sessions / "bench-1000.jsonl"
    path.write_text("".join(dumps(event) + "\n" for event in events))
    times, cpu = [], []
    for _ in range(20):
        agent._open.pop("bench-1000", None)
        start, start_cpu = time.perf_counter(), time.thread_time()
        session = agent.session("bench-1000")
        cpu.append((time.thread_time() - start_cpu) * 1000)
        times.append((time.perf_counter() - start) * 1000)
        session.close()
    print(
        f"resume a session of {len(events)} events ({path.stat().st_size // 1024} KiB, "
        f"a history of {len(session.history)} messages): best {min(times):.1f} ms wall, "
        f"{min(cpu):.1f} ms CPU; median {sorted(times)[len(times) // 2]:.1f} ms wall "
        "(target < 50 ms)"
    )


async def main() -> None:
    import contextlib

    with tempfile.TemporaryDirectory() as tmp, ScriptedServer(RULES, chunk_size=64) as server:
        folder = Path(tmp)
        async with contextlib.AsyncExitStack() as stack:
            found, agent = await cases(server.url, folder, stack)
            best = await measure(found)
            floor_stream = best["openai SDK by hand, streamed (floor for harness)"][0]
            floor_plain = best["openai SDK by hand, not streamed (floor for peers)"][0]
            print(f"{TURNS} turns x {ROUNDS} rounds; a turn = 2 steps (tool call, then text)")
            print(f"  {'case':<52} {'client CPU/turn':>16} {'wall/turn':>11} {'overhead/step':>14}")
            overheads: dict[str, float] = {}
            for label, (cpu, wall) in best.items():
                floor = floor_stream if label.startswith("harness") else floor_plain
                over = ""
                if not label.startswith("openai SDK"):
                    overheads[label] = (cpu - floor) / 2
                    over = f"{overheads[label]:11.0f} µs"
                print(f"  {label:<52} {cpu:13.0f} µs {wall:8.0f} µs {over:>14}")
            mine = next(v for k, v in overheads.items() if k.startswith("harness"))
            for label, value in overheads.items():
                if not label.startswith("harness"):
                    print(f"  {label}: overhead per step x{value / mine:.1f} harness's")
            await resume(folder, agent)
