"""Which model provider ``harness init`` finds, and the ``cordis.yml`` section it writes for it.

Looked for in order: ``OPENAI_API_KEY``, ``DEEPSEEK_API_KEY``, ``ANTHROPIC_API_KEY`` (in the
environment, or in a ``.env`` in the target folder), then an Ollama answering
``GET /api/tags`` at ``$OLLAMA_HOST`` (default ``127.0.0.1:11434``; half a second at most).
The first found gets the model and agent entries, switched on; with none, the template's own
section is kept: the same entries switched off, with a comment saying what to do. A key is
never written into the file: the entry names its variable, read when the host starts.
"""

from __future__ import annotations

import json
import os
import re
import urllib.request
from dataclasses import dataclass
from pathlib import Path

SECTION_MARK = "  # The model and the agent loop,"
"""The line the template's model section starts with (it runs to the end of the file)."""
KEYS = ("OPENAI_API_KEY", "DEEPSEEK_API_KEY", "ANTHROPIC_API_KEY")
OLLAMA_DEFAULT = "127.0.0.1:11434"
OLLAMA_MODEL = "qwen3:8b"
MAX_TAGS_BYTES = 1 << 20
SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,199}")
"""A model name or address written into the file as it is (anything else is not used: what
a server answers must not be able to write YAML)."""


@dataclass(frozen=True)
class Found:
    """A provider ``init`` found: how to say it, and the entry it writes."""

    what: str
    """For the report: ``OPENAI_API_KEY is set``, ``Ollama answers at ...``."""
    label: str
    """The provider and model: ``OpenAI (gpt-4.1-mini)``."""
    entry: str
    """The ``- id: model`` entry, indented for the ``assistant`` group."""


def find_provider(folder: Path) -> Found | None:
    """The first provider this machine offers, or None."""
    env = {**_dotenv(folder / ".env"), **{k: v for k, v in os.environ.items() if v}}
    if env.get("OPENAI_API_KEY"):
        return Found(
            "OPENAI_API_KEY is set",
            "OpenAI (gpt-4.1-mini)",
            _openai(
                "${HARNESS_MODEL:-gpt-4.1-mini}",
                "${HARNESS_BASE_URL:-https://api.openai.com/v1}",
                "${OPENAI_API_KEY}",
            ),
        )
    if env.get("DEEPSEEK_API_KEY"):
        return Found(
            "DEEPSEEK_API_KEY is set",
            "DeepSeek (deepseek-chat)",
            _openai(
                "${HARNESS_MODEL:-deepseek-chat}",
                "https://api.deepseek.com/v1",
                "${DEEPSEEK_API_KEY}",
            ),
        )
    if env.get("ANTHROPIC_API_KEY"):
        return Found(
            "ANTHROPIC_API_KEY is set",
            "Anthropic (claude-sonnet-4-5)",
            "      - id: model\n"
            "        name: harness:anthropic       # the Messages API (docs/agent.md)\n"
            "        config:\n"
            "          model: ${HARNESS_MODEL:-claude-sonnet-4-5}\n"
            "          api_key: ${ANTHROPIC_API_KEY}\n",
        )
    address = ollama_address(env.get("OLLAMA_HOST", ""))
    models = ollama_models(address)
    if models is not None:
        model = models[0] if models else OLLAMA_MODEL
        pull = "" if models else f"  # none pulled yet: ollama pull {OLLAMA_MODEL}"
        return Found(
            f"Ollama answers at {address}",
            f"Ollama ({model})",
            _openai(f"${{HARNESS_MODEL:-{model}}}", f"http://{address}/v1", "", pull),
        )
    return None


def model_section(template: str, found: Found | None) -> str:
    """``template`` with its model section for ``found`` (kept as it is for None)."""
    if found is None or SECTION_MARK not in template:
        return template
    head, tail = template.split(SECTION_MARK, 1)
    agent = tail[tail.index("      - id: agent\n") :]
    return (
        head
        + "  # The model and the agent loop, for `harness chat` and the console's Chat\n"
        + f"  # (docs/agent.md). `harness init` wrote this entry because {found.what}\n"
        + "  # (the key stays in the environment: the entry names its variable).\n"
        + "  # No key at hand? `harness chat --demo` talks to a scripted demo model.\n"
        + "  - id: assistant\n"
        + "    insert:\n"
        + found.entry
        + agent
    )


def ollama_address(value: str) -> str:
    """``host:port`` of Ollama from ``$OLLAMA_HOST`` (as Ollama reads it)."""
    value = value.strip().removeprefix("http://").removeprefix("https://").rstrip("/")
    if not value:
        return OLLAMA_DEFAULT
    host, _, port = value.rpartition(":") if ":" in value else (value, ":", "11434")
    if host in ("", "0.0.0.0"):  # a server's bind-all address: clients use loopback
        host = "127.0.0.1"
    address = f"{host}:{port or '11434'}"
    return address if SAFE_NAME.fullmatch(address) else OLLAMA_DEFAULT


def ollama_models(address: str, timeout: float = 0.5) -> list[str] | None:
    """The models an Ollama at ``address`` has pulled, or None when none answers."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(f"http://{address}/api/tags", timeout=timeout) as answer:
            body = json.loads(answer.read(MAX_TAGS_BYTES))
    except (OSError, ValueError):
        return None
    listed = body.get("models") if isinstance(body, dict) else None
    if not isinstance(listed, list):
        return None
    names = (m.get("name") for m in listed if isinstance(m, dict))
    return [name for name in names if isinstance(name, str) and SAFE_NAME.fullmatch(name)]


def _openai(model: str, base_url: str, api_key: str, note: str = "") -> str:
    key = f"          api_key: {api_key}\n" if api_key else "          api_key: ''\n"
    return (
        "      - id: model\n"
        "        name: harness:openai          # any OpenAI-compatible server (docs/agent.md)\n"
        "        config:\n"
        f"          model: {model}{note}\n"
        f"          base_url: {base_url}\n" + key
    )


def _dotenv(path: Path) -> dict[str, str]:
    if not path.is_file():
        return {}
    from dotenv import dotenv_values

    return {k: v for k, v in dotenv_values(path).items() if v}
