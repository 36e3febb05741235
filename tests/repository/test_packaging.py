"""The wheel carries the bundled plugins: pip install, then init and run in an empty folder."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import zipfile
from pathlib import Path

from ..helpers import ROOT, TEMPLATE, copy_of_checkout

KEYS = ("OPENAI_API_KEY", "DEEPSEEK_API_KEY", "ANTHROPIC_API_KEY", "OLLAMA_HOST")
"""What ``harness init`` looks at to choose a model provider."""
SKIP = ("HARNESS_", "VIRTUAL_ENV", "MAKELEVEL", "MAKEFLAGS", "MFLAGS", *KEYS)


def _env() -> dict[str, str]:
    # A parent make (``make test``) exports MAKELEVEL and MAKEFLAGS; without them a nested
    # ``make -n`` prints the plan alone, as it does for a person at a shell.
    env = {k: v for k, v in os.environ.items() if not k.startswith(SKIP)}
    env["OLLAMA_HOST"] = "127.0.0.1:9"  # no Ollama answers there: init finds no provider
    return env


def _run(*argv: str | Path, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(arg) for arg in argv],
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


DIRTY = """\
  - id: local-model               # a user's own edit of the clone's project file
    name: harness:openai
    config: { model: my-local-model, base_url: "http://10.1.2.3:8000/v1" }
"""


def test_wheel_install_then_init_and_run_in_an_empty_folder(tmp_path: Path) -> None:
    """Built from a clone whose own cordis.yml was edited (the way a user does), the wheel
    still carries the tracked template, and ``harness init`` writes exactly that."""
    dirty = copy_of_checkout(tmp_path / "harness")  # the clone, as the README names it
    (dirty / "cordis.yml").write_text(TEMPLATE.read_text().replace("enabled: false", "") + DIRTY)
    build, install = readme_install_commands()[1:]
    built = _run(sys.executable, "-m", *build.split(), cwd=tmp_path)  # the README's words
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp_path / "dist").glob(install.split()[-1].removeprefix("dist/"))
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        assert archive.read("harness/templates/cordis.yml") == TEMPLATE.read_bytes()
        leaked = [n for n in names if b"10.1.2.3" in archive.read(n)]
    assert leaked == []  # the clone's cordis.yml is in no file of the wheel
    assert [n for n in names if n.endswith("cordis.yml")] == ["harness/templates/cordis.yml"]
    assert "harness/cli/starter_files.py" in names
    assert [name for name in names if "chromium" in name] == []  # test support stays out
    venv = tmp_path / "venv"
    made = _run(sys.executable, "-m", "venv", venv, cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    installed = _run(venv / "bin" / "python", "-m", "pip", "install", "-q", wheel, cwd=tmp_path)
    assert installed.returncode == 0, installed.stderr
    harness = venv / "bin" / "harness"
    project = tmp_path / "empty"
    project.mkdir()

    init = _run(harness, "init", cwd=project)
    assert init.returncode == 0, init.stderr
    bundled = sorted(path.name for path in (ROOT / "plugins").glob("*.py"))
    assert init.stdout.splitlines() == [
        "wrote cordis.yml",
        "made plugins/",
        *(f"wrote plugins/{name}" for name in bundled),
        "made workspace/",
        "model: none found (set OPENAI_API_KEY, DEEPSEEK_API_KEY or ANTHROPIC_API_KEY, or "
        "start Ollama); the model and agent entries are off, and `harness chat --demo` needs none",
        "next: harness check, then harness run",
    ]
    assert (project / "cordis.yml").read_text() == TEMPLATE.read_text()
    assert (project / "workspace").is_dir()

    check = _run(harness, "check", cwd=project)
    assert check.returncode == 0, check.stderr
    assert check.stdout.splitlines()[-1] == "ok: no problems"
    listed = _run(harness, "tools", "--json", "--format", "mcp", cwd=project)
    assert listed.returncode == 0, listed.stderr
    assert '"name": "echo"' in listed.stdout
    added = _run(harness, "call", "add", '{"a": 1, "b": 2}', cwd=project)
    assert (added.returncode, added.stdout) == (0, "3\n"), added.stderr
    enabled = _run(
        harness,
        "--set",
        "git.enabled=true",
        "call",
        "git_log_reader",
        f'{{"repoPath": "{ROOT}", "maxCount": 1}}',
        cwd=project,
    )
    assert enabled.returncode == 0, enabled.stderr
    assert enabled.stdout.startswith("Last 1 commit(s)")

    # a second init keeps every file
    (project / "cordis.yml").write_text("insert: []\n")
    again = _run(harness, "init", cwd=project)
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[0] == "kept cordis.yml (it exists)"
    assert (project / "cordis.yml").read_text() == "insert: []\n"
    (project / "cordis.yml").write_text(TEMPLATE.read_text())

    # harness run serves until Ctrl-C, then exits 0
    env = _env()
    server = subprocess.Popen(
        [str(harness), "run", "--port", "0", "--no-watch"],
        cwd=project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stderr is not None
        seen: list[str] = []
        for line in server.stderr:
            seen.append(line)
            if line.startswith("serving MCP at http://127.0.0.1:"):
                break
        else:
            raise AssertionError("harness run stopped early: " + "".join(seen))
        server.send_signal(signal.SIGINT)
        out, err = server.communicate(timeout=60)
    finally:
        if server.poll() is None:
            server.kill()
    assert server.returncode == 0, "".join(seen) + err
    assert "echo" in out
    assert "harness stopped" in err


def readme_install_commands() -> list[str]:
    """The pip commands of the README's install outside a clone (comments dropped)."""
    readme = (ROOT / "README.md").read_text()
    block = readme[readme.index("Outside a clone, install the package") :]
    block = block[block.index("```sh") : block.index("```", block.index("```sh") + 5)]
    return [line.split("#")[0].strip() for line in block.splitlines() if line.startswith("pip ")]


def test_the_readme_installs_from_a_clone_while_the_package_is_not_on_pypi(
    tmp_path: Path,
) -> None:
    """``cordis-harness`` is not on the package index yet: the README installs from a clone
    or a wheel built from it (the wheel test above runs those two commands as written)."""
    from_clone, build, install = readme_install_commands()
    assert (from_clone, build, install) == (
        "pip install ./harness",
        "pip wheel --no-deps -w dist ./harness",
        "pip install dist/cordis_harness-*.whl",
    )
    copy_of_checkout(tmp_path / "harness")
    planned = _run(
        sys.executable, "-m", *from_clone.split(), "--no-deps", "--dry-run", cwd=tmp_path
    )
    assert planned.returncode == 0, planned.stderr
    assert "Would install cordis-harness-" in planned.stdout


def test_first_make_run_says_what_it_installs(tmp_path: Path) -> None:
    venv = tmp_path / "fresh-venv"
    plan = _run("make", "-n", f"VENV={venv}", "run", cwd=ROOT)
    assert plan.returncode == 0, plan.stderr
    lines = plan.stdout.splitlines()
    assert lines[0] == f'echo "Setting up {venv} (first run only; pip shows what it installs)..."'
    install = next(line for line in lines if "pip install" in line and "-e" in line)
    assert "--quiet" not in install
    assert "--progress-bar on" in install
    assert lines[-1] == f"{venv}/bin/harness run"


def _installs(plan: subprocess.CompletedProcess[str]) -> list[str]:
    """What a ``make -n`` plan installs into the project's venv: the pip targets."""
    assert plan.returncode == 0, plan.stderr
    return [line.split(" -e ", 1)[1] for line in plan.stdout.splitlines() if " -e " in line]


def test_make_run_installs_the_runtime_and_make_test_adds_the_dev_tools(tmp_path: Path) -> None:
    """``make run`` installs the runtime alone (about 210 MB, against 745 MB with the
    development tools); ``make test`` adds the ``dev`` extra once, to a venv made by either,
    with pip's progress shown; later runs install nothing."""
    venv = tmp_path / "fresh-venv"
    assert _installs(_run("make", "-n", f"VENV={venv}", "run", cwd=ROOT)) == ["."]
    first = _run("make", "-n", f"VENV={venv}", "test", cwd=ROOT)
    assert _installs(first) == [".", "'.[dev]'"]
    dev = next(line for line in first.stdout.splitlines() if "'.[dev]'" in line)
    assert ("--progress-bar on" in dev, "--quiet" in dev) == (True, False)

    # a venv that `make run` made: `make test` adds the development tools, nothing else
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").touch()
    (venv / ".installed").touch()
    after_run = _run("make", "-n", f"VENV={venv}", "test", cwd=ROOT)
    assert _installs(after_run) == ["'.[dev]'"]
    assert "Setting up" not in after_run.stdout
    (venv / ".installed-dev").touch()
    assert _installs(_run("make", "-n", f"VENV={venv}", "test", cwd=ROOT)) == []
    assert _installs(_run("make", "-n", f"VENV={venv}", "run", cwd=ROOT)) == []


def test_make_run_writes_the_clones_cordis_yml_once(tmp_path: Path) -> None:
    """A fresh clone has no cordis.yml (git ignores it: it is the user's); the first ``make
    run`` writes it with ``harness init`` from the template, later ones keep the user's."""
    clone = copy_of_checkout(tmp_path / "clone")
    assert not (clone / "cordis.yml").exists()
    venv = tmp_path / "fresh-venv"
    first = _run("make", "-n", f"VENV={venv}", "run", cwd=clone)
    assert first.returncode == 0, first.stderr
    assert f"{venv}/bin/harness init ." in first.stdout.splitlines()
    (clone / "cordis.yml").write_text("insert: []\n")
    later = _run("make", "-n", f"VENV={venv}", "run", cwd=clone)
    assert later.returncode == 0, later.stderr
    assert "harness init" not in later.stdout
    for path in ("cordis.yml", ".harness/sessions/x.jsonl"):
        ignored = subprocess.run(["git", "-C", str(ROOT), "check-ignore", "-q", path])
        assert ignored.returncode == 0, f"{path} is not ignored"
    assert "cordis.yml" not in _tracked()  # only the template is tracked
    assert "harness/templates/cordis.yml" in _tracked()


def _tracked() -> list[str]:
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files"], capture_output=True, text=True, check=True
    )
    return listed.stdout.splitlines()
