"""The guide's "write your first plugin" walkthrough works verbatim, and the README's taste."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ..helpers import HARNESS

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"<!-- (file: (?P<file>\S+)|run|output) -->\n```[a-z]*\n(?P<body>.*?)```", re.S)


def run_walkthrough(section: str, folder: Path) -> int:
    """Run a guide section's steps in ``folder``; return how many steps ran.

    ``<!-- file: PATH -->`` blocks are written, ``<!-- run -->`` blocks run in bash (with
    this venv's ``harness`` first on PATH), and each ``<!-- output -->`` block must be the
    whole output of the run before it (stdout and stderr as a terminal shows them, trailing
    spaces aside).
    """
    steps = list(BLOCK.finditer(section))
    skip = ("HARNESS_", "OPENAI_API_KEY", "DEEPSEEK_API_KEY", "ANTHROPIC_API_KEY", "COLUMNS")
    env = {k: v for k, v in os.environ.items() if not k.startswith(skip)}
    env["OLLAMA_HOST"] = "127.0.0.1:9"  # `harness init` finds no model provider, as documented
    env["PATH"] = f"{Path(HARNESS).parent}{os.pathsep}{env.get('PATH', '')}"
    output: str | None = None
    for step in steps:
        body = step.group("body")
        if step.group("file"):
            path = folder / step.group("file")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(body)
        elif step.group(0).startswith("<!-- run"):
            result = subprocess.run(
                ["bash", "-e", "-c", body],
                cwd=folder,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                timeout=120,
                check=False,
            )
            output = result.stdout
        else:
            assert output is not None
            shown = [line.rstrip() for line in output.strip("\n").splitlines()]
            assert shown == [line.rstrip() for line in body.strip("\n").splitlines()], output
            output = None
    return len(steps)


def guide_section(start: str, end: str) -> str:
    guide = (ROOT / "docs" / "guide.md").read_text()
    return guide[guide.index(start) : guide.index(end)]


def test_first_plugin_walkthrough(tmp_path: Path) -> None:
    section = guide_section("## 3. Write your first plugin", "### Your own tool beside")
    assert run_walkthrough(section, tmp_path) >= 10
    assert "enabled: false" in (tmp_path / "cordis.yml").read_text()


def test_seed_patch_walkthrough(tmp_path: Path) -> None:
    """The seed tutorial's scenario: a user's own git_log_reader, layered with --patch
    naming it by an absolute path, beside the bundled config of ``harness init``."""
    section = guide_section("### Your own tool beside", "## 4.")
    assert run_walkthrough(section, tmp_path) >= 8
    patch = (tmp_path / "scratch-plugin" / "cordis.yml").read_text()
    assert f"name: {tmp_path}/scratch-plugin/git_log_plugin.py" in patch


def test_readme_taste_runs() -> None:
    readme = (ROOT / "README.md").read_text()
    code = readme[readme.index("```python") + len("```python") :]
    code = code[: code.index("```")]
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Hello, Ada!\n"


@pytest.mark.parametrize("name", ["guide.md"])
def test_docs_python_blocks_compile(name: str) -> None:
    text = (ROOT / "docs" / name).read_text()
    for index, block in enumerate(re.findall(r"```python\n(.*?)```", text, re.S)):
        compile(block, f"{name}[{index}]", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
