"""A project whose plugin registers resources and prompts, for the tests of both."""

from __future__ import annotations

from pathlib import Path

from ..helpers import ROOT, write

PNG = bytes.fromhex("89504e470d0a1a0a0000000d49484452")
"""The first bytes of a PNG: a blob that is not text."""

DOCS = '''
from harness import define_resource, prompt, resource

inject = ["resources", "prompts"]
PAGES = {"intro": "# Intro", "install": "# Install", "index": "# Index"}


def pages(prefix, args):
    return [name for name in PAGES if name.startswith(prefix)]


@resource("docs://readme", mime_type="text/markdown")
def readme() -> str:
    """The project's README."""
    return "# Readme"


@resource("docs://pages/{page}", mime_type="text/markdown", complete={"page": pages})
async def page(page: str) -> str:
    """One page of the docs, by name."""
    from harness.errors import NotFound

    if page not in PAGES:
        raise NotFound(f"no page named {page!r}")
    return PAGES[page]


logo = define_resource(
    uri="docs://logo",
    name="logo",
    description="The logo.",
    mime_type="image/png",
    read=lambda params: bytes.fromhex("89504e470d0a1a0a0000000d49484452"),
    icons=[{"src": "https://example.com/logo.png", "mimeType": "image/png", "sizes": ["48x48"]}],
)


def tones(prefix, args):
    return [tone for tone in ("dry", "warm") if tone.startswith(prefix)]


@prompt(complete={"tone": tones})
def summarize(topic: str, tone: str = "dry") -> str:
    """Summarize a topic.

    Args:
        topic: What to summarize.
        tone: How it should sound.
    """
    return f"Summarize {topic}, {tone}."


@prompt(icons=[{"src": "data:image/png;base64,iVBORw==", "mimeType": "image/png"}])
def look() -> list:
    """Look at the logo."""
    return [
        {"role": "user", "content": {"type": "image", "data": bytes.fromhex("89504e47"),
                                     "mime_type": "image/png"}},
        {"role": "assistant", "content": "I see it."},
        {"role": "user", "content": {"type": "resource", "uri": "docs://readme",
                                     "mime_type": "text/markdown", "text": "# Readme"}},
    ]


def apply(ctx):
    for item in (readme, page, logo):
        ctx.resources.register(item)
    ctx.prompts.register(summarize)
    ctx.prompts.register(look)
'''


def docs_project(folder: Path, policy: str | None = None) -> Path:
    """``cordis.yml`` with the docs plugin (and the bundled policy with ``policy`` as its
    config, a YAML flow mapping); returns the config's path."""
    write(folder / "plugins" / "docs.py", DOCS)
    entries = ["  - { id: docs, name: ./plugins/docs.py }"]
    if policy is not None:
        write(folder / "plugins" / "policy.py", (ROOT / "plugins" / "policy.py").read_text())
        entries.insert(0, f"  - {{ id: policy, name: ./plugins/policy.py, config: {policy} }}")
    return write(folder / "cordis.yml", "insert:\n" + "\n".join(entries) + "\n")
