"""``harness resources`` and ``harness prompts``, run as the real executable."""

from __future__ import annotations

import base64
import json
import os
import subprocess
from pathlib import Path

from ..helpers import HARNESS, run_harness
from ..resources.conftest import PNG, docs_project


def test_resources_lists_and_reads(tmp_path: Path) -> None:
    docs_project(tmp_path)
    listed = run_harness("resources", "--json", cwd=tmp_path)
    table = run_harness("resources", cwd=tmp_path, env={"COLUMNS": "200"})
    text = run_harness("resources", "docs://pages/install", cwd=tmp_path)
    as_json = run_harness("resources", "docs://logo", "--json", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout) == {
        "resources": [
            {
                "uri": "docs://readme",
                "name": "readme",
                "description": "The project's README.",
                "mimeType": "text/markdown",
            },
            {
                "uri": "docs://logo",
                "name": "logo",
                "description": "The logo.",
                "mimeType": "image/png",
                "icons": [
                    {
                        "src": "https://example.com/logo.png",
                        "mimeType": "image/png",
                        "sizes": ["48x48"],
                    }
                ],
            },
        ],
        "resourceTemplates": [
            {
                "uriTemplate": "docs://pages/{page}",
                "name": "page",
                "description": "One page of the docs, by name.",
                "mimeType": "text/markdown",
            }
        ],
    }
    assert table.returncode == 0, table.stderr
    assert "docs://pages/{page}" in table.stdout
    assert "The project's README." in table.stdout
    assert (text.returncode, text.stdout) == (0, "# Install\n")
    assert json.loads(as_json.stdout) == {
        "contents": [
            {
                "uri": "docs://logo",
                "mimeType": "image/png",
                "blob": base64.b64encode(PNG).decode(),
            }
        ]
    }


def test_a_blob_goes_to_a_redirected_output_as_bytes(tmp_path: Path) -> None:
    docs_project(tmp_path)
    environment = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    done = subprocess.run(
        [HARNESS, "resources", "docs://logo"],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, PNG), done.stderr


def test_a_failed_read_says_why_and_exits_1(tmp_path: Path) -> None:
    docs_project(tmp_path, policy="{ rules: { 'resource:docs://logo': deny } }")
    unknown = run_harness("resources", "docs://nope", cwd=tmp_path)
    denied = run_harness("resources", "docs://logo", cwd=tmp_path)
    assert (unknown.returncode, unknown.stdout) == (1, "")
    assert unknown.stderr == (
        "NotFound: resource 'docs://nope' not found: no resource has this URI and no template "
        "matches it\nhint: harness resources lists the URIs and templates\n"
    )
    assert denied.returncode == 1
    assert denied.stderr == (
        "AccessDenied: denied: the policy forbids resource:docs://logo "
        "(rule 'resource:docs://logo')\n"
    )


def test_prompts_lists_and_renders(tmp_path: Path) -> None:
    docs_project(tmp_path)
    listed = run_harness("prompts", "--json", cwd=tmp_path)
    table = run_harness("prompts", cwd=tmp_path, env={"COLUMNS": "200"})
    rendered = run_harness("prompts", "summarize", '{"topic": "tests"}', cwd=tmp_path)
    as_json = run_harness("prompts", "look", "--json", cwd=tmp_path)
    assert json.loads(listed.stdout) == [
        {
            "name": "summarize",
            "description": "Summarize a topic.",
            "arguments": [
                {"name": "topic", "description": "What to summarize.", "required": True},
                {"name": "tone", "description": "How it should sound.", "required": False},
            ],
        },
        {
            "name": "look",
            "description": "Look at the logo.",
            "arguments": [],
            "icons": [{"src": "data:image/png;base64,iVBORw==", "mimeType": "image/png"}],
        },
    ]
    assert "topic*, tone" in table.stdout
    assert (rendered.returncode, rendered.stdout) == (0, "user: Summarize tests, dry.\n")
    shown = json.loads(as_json.stdout)
    assert shown["description"] == "Look at the logo."
    assert [m["role"] for m in shown["messages"]] == ["user", "assistant", "user"]
    assert shown["messages"][1]["content"] == {"type": "text", "text": "I see it."}


def test_a_failed_render_says_why_and_exits_1(tmp_path: Path) -> None:
    docs_project(tmp_path)
    unknown = run_harness("prompts", "nope", cwd=tmp_path)
    missing = run_harness("prompts", "summarize", cwd=tmp_path)
    malformed = run_harness("prompts", "summarize", "{topic", cwd=tmp_path)
    assert unknown.returncode == 1
    assert unknown.stderr == (
        "NotFound: prompt 'nope' not found (prompts: summarize, look)\n"
        "hint: harness prompts lists the prompts and their arguments\n"
    )
    assert missing.returncode == 1
    assert missing.stderr == (
        "ArgumentsError: invalid arguments for prompt 'summarize' (it takes tone, topic): "
        "topic: required\n"
    )
    assert malformed.returncode == 1
    assert malformed.stderr.startswith("ArgumentsError: ARGS_JSON is not valid JSON (")
    assert malformed.stderr.endswith("\nhint: pass an object of strings\n")
