"""The guide's "write your first plugin" walkthrough works verbatim, and the README's taste."""

from __future__ import annotations

import ast
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HARNESS = str(Path(sys.executable).parent / "harness")
BLOCK = re.compile(r"<!-- (file: (?P<file>\S+)|run|output) -->\n```[a-z]*\n(?P<body>.*?)```", re.S)


def test_first_plugin_walkthrough(tmp_path: Path) -> None:
    guide = (ROOT / "docs" / "guide.md").read_text()
    section = guide[guide.index("## 3. Write your first plugin") : guide.index("## 4.")]
    steps = list(BLOCK.finditer(section))
    assert len(steps) >= 10
    output: str | None = None
    for step in steps:
        body = step.group("body")
        if step.group("file"):
            path = tmp_path / step.group("file")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(body)
        elif step.group(0).startswith("<!-- run"):
            argv = shlex.split(body.strip())
            assert argv[0] == "harness"
            result = subprocess.run(
                [HARNESS, *argv[1:]], cwd=tmp_path, capture_output=True, text=True, check=False
            )
            output = result.stdout + result.stderr
        else:
            assert output is not None
            assert output.strip().endswith(body.strip()), (body, output)
    assert "enabled: false" in (tmp_path / "cordis.yml").read_text()


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
