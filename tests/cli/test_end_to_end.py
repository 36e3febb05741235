"""End to end: the real ``harness`` executable on real files in temporary folders."""

from __future__ import annotations

import json
import signal
import stat
import subprocess
from pathlib import Path

import pytest

from ..helpers import HARNESS, entries, run_harness, tool_plugin, write


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A folder with three tool plugins and nothing else."""
    for name in ("alpha", "beta", "gamma"):
        tool_plugin(tmp_path / "plugins" / f"{name}.py", name)
    return tmp_path


def test_every_name_resolution_kind(project: Path) -> None:
    site = project / "site"
    write(
        site / "epdist_plugin.py",
        (project / "plugins" / "alpha.py").read_text().replace('"alpha"', '"from_ep"'),
    )
    write(
        site / "epdist-1.0.dist-info" / "METADATA",
        "Metadata-Version: 2.1\nName: epdist\nVersion: 1.0\n",
    )
    write(
        site / "epdist-1.0.dist-info" / "entry_points.txt",
        "[harness.plugins]\nep-tool = epdist_plugin\n",
    )
    write(site / "importable_pkg" / "__init__.py", "")
    tool_plugin(site / "importable_pkg" / "mod.py", "from_module")
    write(site / "importable_pkg" / "attr.py", "class Holder:\n    pass\n")
    (site / "importable_pkg" / "attr.py").write_text(
        (project / "plugins" / "beta.py").read_text().replace('"beta"', '"from_attr"')
        + "\nclass Holder:\n    plugin = __import__('sys').modules[__name__]\n"
    )
    write(project / "plugins" / "pkg" / "__init__.py", "from .impl import apply, inject\n")
    tool_plugin(project / "plugins" / "pkg" / "impl.py", "from_package")
    write(
        project / "other" / "alpha.py",
        (project / "plugins" / "alpha.py").read_text().replace('"alpha"', '"alpha2"'),
    )
    write(
        project / "cordis.yml",
        """
        insert:
          - { id: tools, name: "harness:tools" }
          - { id: file, name: ./plugins/alpha.py }
          - { id: same-file-name, name: other/alpha.py }
          - { id: package, name: ./plugins/pkg }
          - { id: entry-point, name: ep-tool }
          - { id: module, name: importable_pkg.mod }
          - { id: attribute, name: "importable_pkg.attr:Holder.plugin" }
          - { id: missing, name: no_such_module_anywhere }
        """,
    )
    env = {"PYTHONPATH": str(site)}
    found = entries(run_harness("plugins", "--json", cwd=project, env=env))
    assert {key: value["state"] for key, value in found.items()} == {
        "tools": "active",
        "file": "active",
        "same-file-name": "active",
        "package": "active",
        "entry-point": "active",
        "module": "active",
        "attribute": "active",
        "missing": "failed",
    }
    assert found["missing"]["error"] == (
        "cannot resolve 'no_such_module_anywhere': not a path, not harness:<builtin>, no "
        "'harness.plugins' entry point is named 'no_such_module_anywhere', and no module "
        "'no_such_module_anywhere' can be imported"
    )
    assert found["same-file-name"]["name"] == "other/alpha.py"
    tools = run_harness("tools", "--json", cwd=project, env=env)
    names = [item["function"]["name"] for item in json.loads(tools.stdout)]
    assert names == ["alpha", "alpha2", "from_package", "from_ep", "from_module", "from_attr"]


def test_patches_set_env_dotenv_and_groups(project: Path) -> None:
    write(project / ".env", "LABEL_FROM_DOTENV=dotenv\nOVERRIDDEN=dotenv\n")
    write(
        project / "cordis.yml",
        """
        insert:
          - id: a
            name: ./plugins/alpha.py
            config: { label: "${LABEL_FROM_DOTENV}" }
          - id: group
            enabled: ${GROUP_ON:-yes}
            insert:
              - id: b
                name: ./plugins/beta.py
                config: { label: "${OVERRIDDEN}" }
        """,
    )
    write(project / "patches" / "p1.yml", "- { id: b, config: { label: patched } }\n")
    write(project / "patches" / "p2.yml", "- { id: c, name: ../plugins/gamma.py }\n")

    def call(tool: str, *extra: str, env: dict[str, str] | None = None) -> str:
        result = run_harness(*extra, "call", tool, "{}", cwd=project, env=env)
        return result.stdout.strip() if result.returncode == 0 else f"exit {result.returncode}"

    assert call("alpha") == "dotenv:"
    assert call("beta", env={"OVERRIDDEN": "real-env"}) == "real-env:"
    assert call("beta", "--patch", "patches/p1.yml") == "patched:"
    assert call("gamma", "--patch", "patches/p1.yml", "--patch", "patches/p2.yml") == "gamma:"
    assert call("beta", "--set", "b.label=from-set", "--patch", "patches/p1.yml") == "from-set:"
    assert call("beta", env={"GROUP_ON": "off"}) == "exit 1"
    states = entries(run_harness("plugins", "--json", "--set", "group.enabled=false", cwd=project))
    assert {k: v["state"] for k, v in states.items()} == {
        "a": "active",
        "group": "disabled",
        "b": "disabled",
    }
    unknown = run_harness("--patch", "missing.yml", "plugins", cwd=project)
    assert unknown.returncode == 2
    assert unknown.stderr.startswith("ConfigError: config file not found: ")


def test_patch_for_unknown_id_is_a_usage_error(project: Path) -> None:
    write(project / "cordis.yml", "- { id: a, name: ./plugins/alpha.py }\n")
    write(project / "p.yml", "- { id: ghost, enabled: false }\n")
    result = run_harness("plugins", "--patch", "p.yml", cwd=project)
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"ConfigError: {project / 'p.yml'}:1: entry 'ghost': patch overrides unknown id "
        "'ghost' and gives no 'name' to add it; check the id, or add a name"
    )
    assert "Traceback" not in result.stderr
    debug = run_harness("plugins", "--patch", "p.yml", "--debug", cwd=project)
    assert "Traceback" in debug.stderr


def test_enable_disable_write_back_preserves_comments_and_layout(project: Path) -> None:
    text = (
        "# my tools\n"
        "insert:\n"
        "  - id: a            # the first one\n"
        "    name: ./plugins/alpha.py\n"
        "    config: {label: x}   # keep me\n"
        "  - { id: b, name: ./plugins/beta.py }   # flow style\n"
    )
    config = write(project / "cordis.yml", text)
    result = run_harness("disable", "a", cwd=project)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "a disabled in cordis.yml"
    assert config.read_text() == text.replace(
        "    name: ./plugins/alpha.py\n", "    name: ./plugins/alpha.py\n    enabled: false\n"
    )
    run_harness("disable", "b", cwd=project)
    assert (
        "  - { id: b, name: ./plugins/beta.py, enabled: false }   # flow style\n"
        in config.read_text()
    )
    assert entries(run_harness("plugins", "--json", cwd=project))["a"]["state"] == "disabled"
    assert run_harness("enable", "a", cwd=project).returncode == 0
    assert run_harness("enable", "b", cwd=project).returncode == 0
    assert config.read_text() == text  # a round trip gives back the original text
    assert run_harness("enable", "a", cwd=project).stdout.strip() == "a was already enabled"
    written = text.replace("{label: x}", "{label: x}\n    enabled: false")
    config.write_text(written)  # a switch the user wrote is flipped, not removed
    assert run_harness("enable", "a", cwd=project).returncode == 0
    assert config.read_text() == written.replace("enabled: false", "enabled: true")
    missing = run_harness("disable", "nope", cwd=project)
    assert missing.returncode == 2
    assert missing.stderr.strip() == "UnknownEntry: cordis.yml: no entry has id 'nope'"


def test_read_only_config_is_a_clear_error(project: Path) -> None:
    """A file without write bits is refused, even for root (who could write it anyway)."""
    config = write(project / "cordis.yml", "- { id: a, name: ./plugins/alpha.py }\n")
    config.chmod(stat.S_IRUSR | stat.S_IRGRP)
    result = run_harness("disable", "a", cwd=project)
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "ConfigError: cordis.yml is read-only: cannot change it (check its permissions)"
    )
    assert config.read_text() == "- { id: a, name: ./plugins/alpha.py }\n"


def test_check_reports_ten_kinds_of_problems_with_file_line_and_id(project: Path) -> None:
    write(
        project / "plugins" / "raises_on_import.py",
        "import os\nraise ImportError('no such thing')\n",
    )
    write(
        project / "plugins" / "apply_raises.py", "def apply(ctx):\n    raise RuntimeError('boom')\n"
    )
    write(
        project / "plugins" / "typed.py",
        "import pydantic\n\nclass Config(pydantic.BaseModel):\n    count: int\n\n"
        "def apply(ctx, config):\n    pass\n",
    )
    write(
        project / "cordis.yml",
        """
        insert:
          - id: healthy
            name: ./plugins/alpha.py
          - id: unknown-key
            name: ./plugins/beta.py
            colour: blue
          - id: healthy
            name: ./plugins/gamma.py
          - id: missing-file
            name: ./plugins/not_there.py
          - id: import-error
            name: ./plugins/raises_on_import.py
          - id: apply-error
            name: ./plugins/apply_raises.py
          - id: missing-service
            name: ./plugins/gamma.py
            inject: [database]
          - id: bad-config
            name: ./plugins/typed.py
            config: { count: many }
          - id: unset-env
            name: ./plugins/beta.py
            config: { label: "${HARNESS_TEST_UNSET_VARIABLE}" }
        """,
    )
    write(project / "bad.yml", "- { id: x, name: [oops\n")
    write(project / "unknown.yml", "- { id: ghost, config: {} }\n")
    result = run_harness(
        "check", "--json", "--patch", "bad.yml", "--patch", "unknown.yml", cwd=project
    )
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert report["ok"] is False
    found = {
        (Path(p["file"]).name, p["line"], p["entry"]): p["message"] for p in report["problems"]
    }
    keys = sorted(found, key=lambda key: (key[0], key[1] or 0))
    assert keys == [
        ("bad.yml", 2, None),
        ("cordis.yml", 6, "unknown-key"),
        ("cordis.yml", 7, "healthy"),
        ("cordis.yml", 10, "missing-file"),
        ("cordis.yml", 12, "import-error"),
        ("cordis.yml", 14, "apply-error"),
        ("cordis.yml", 16, "missing-service"),
        ("cordis.yml", 20, "bad-config"),
        ("cordis.yml", 23, "unset-env"),
        ("unknown.yml", 1, "ghost"),
    ]
    messages = list(found.values())
    assert found[("cordis.yml", 6, "unknown-key")].startswith("unknown key 'colour'")
    assert found[("cordis.yml", 7, "healthy")].startswith("duplicate id 'healthy'")
    assert found[("cordis.yml", 10, "missing-file")].startswith("plugin file not found: ")
    assert found[("cordis.yml", 12, "import-error")] == (
        "importing the plugin raised ImportError: no such thing "
        f"({project / 'plugins' / 'raises_on_import.py'}:2)"
    )
    assert found[("cordis.yml", 14, "apply-error")] == (
        f"apply raised RuntimeError: boom ({project / 'plugins' / 'apply_raises.py'}:2)"
    )
    assert "'database'" in found[("cordis.yml", 16, "missing-service")]
    assert found[("cordis.yml", 20, "bad-config")].startswith(
        "invalid config for plugin 'bad-config': count: "
    )
    assert "'HARNESS_TEST_UNSET_VARIABLE' is not set" in found[("cordis.yml", 23, "unset-env")]
    assert found[("bad.yml", 2, None)].startswith("YAML syntax error")
    assert "unknown id 'ghost'" in found[("unknown.yml", 1, "ghost")]
    assert all(messages)
    healthy = entries(run_harness("plugins", "--json", cwd=project))
    assert healthy["healthy"]["state"] == "active"
    text = run_harness("check", cwd=project)
    assert text.returncode == 1
    assert "problem: " in text.stderr


def test_check_passes_on_a_clean_config_and_reports_unreadable_yaml(project: Path) -> None:
    write(project / "cordis.yml", "- { id: a, name: ./plugins/alpha.py }\n")
    ok = run_harness("check", "--json", cwd=project)
    assert ok.returncode == 0
    assert json.loads(ok.stdout) == {"ok": True, "problems": []}
    write(project / "cordis.yml", "insert: [\n")
    broken = run_harness("check", "--json", cwd=project)
    assert broken.returncode == 1
    [problem] = json.loads(broken.stdout)["problems"]
    assert (problem["line"], problem["entry"]) == (2, None)
    assert run_harness("plugins", cwd=project).returncode == 2


def policy_plugin(path: Path) -> None:
    write(
        path,
        """
        from harness import Ask

        def apply(ctx):
            async def ask_everything(call, next):
                return Ask("the test asks")
            ctx.on("tools/pre-execute", ask_everything)
        """,
    )


def test_call_outputs_exit_codes_and_approval(project: Path) -> None:
    policy_plugin(project / "plugins" / "policy.py")
    write(
        project / "cordis.yml",
        "- { id: a, name: ./plugins/alpha.py }\n"
        "- { id: policy, name: ./plugins/policy.py, enabled: false }\n",
    )
    ok = run_harness("call", "alpha", '{"text": "hi"}', "--json", cwd=project)
    assert ok.returncode == 0
    assert json.loads(ok.stdout) == {
        "id": "cli",
        "name": "alpha",
        "ok": True,
        "result": "alpha:hi",
        "content": [{"type": "text", "text": "alpha:hi"}],
        "error": None,
        "code": None,
    }
    bad = run_harness("call", "alpha", '{"text": 5}', cwd=project)
    assert (bad.returncode, bad.stderr.strip()) == (
        1,
        "invalid_args: Invalid arguments for tool alpha: text: expected string, got integer",
    )
    malformed = run_harness("call", "alpha", "{not json", "--json", cwd=project)
    assert malformed.returncode == 1
    assert json.loads(malformed.stdout)["code"] == "invalid_args"
    assert run_harness("call", "nope", cwd=project).returncode == 1
    refused = run_harness(
        "--set", "policy.enabled=true", "call", "alpha", "{}", cwd=project, stdin=""
    )
    assert refused.returncode == 1
    assert refused.stderr.splitlines() == [
        "denied: Tool denied: the test asks (approval was refused)",
        "hint: this call needs approval and there is no terminal to ask; pass --yes",
    ]
    approved = run_harness(
        "--set", "policy.enabled=true", "call", "alpha", "{}", "--yes", cwd=project
    )
    assert (approved.returncode, approved.stdout.strip()) == (0, "alpha:")


def test_tools_formats_help_and_options_after_the_command(project: Path) -> None:
    write(project / "custom.yml", "- { id: a, name: ./plugins/alpha.py }\n")
    anthropic = run_harness(
        "tools", "--json", "--format", "anthropic", "-c", "custom.yml", cwd=project
    )
    assert json.loads(anthropic.stdout) == [
        {
            "name": "alpha",
            "description": "A test tool",
            "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}},
        }
    ]
    env_config = run_harness(
        "tools", "--json", "--format", "mcp", cwd=project, env={"HARNESS_CONFIG": "custom.yml"}
    )
    assert json.loads(env_config.stdout)[0]["inputSchema"]["type"] == "object"
    table = run_harness("-c", "custom.yml", "tools", cwd=project)
    assert "alpha" in table.stdout
    assert "plugin 'a'" in table.stdout
    helped = run_harness("--help", cwd=project)
    assert "Examples:" in helped.stdout
    assert "harness call add" in helped.stdout
    usage = run_harness("frobnicate", cwd=project)
    assert usage.returncode == 2


def test_run_serves_until_interrupted_then_disposes(project: Path) -> None:
    marker = project / "disposed.txt"
    write(
        project / "plugins" / "marker.py",
        f"""
        from pathlib import Path

        def apply(ctx):
            return lambda: Path({str(marker)!r}).write_text("bye")
        """,
    )
    write(
        project / "cordis.yml",
        "- { id: a, name: ./plugins/alpha.py }\n- { id: m, name: ./plugins/marker.py }\n",
    )
    with subprocess.Popen(
        [HARNESS, "run", "--no-watch", "--mcp", "none"],
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        assert process.stderr is not None
        assert process.stdout is not None
        try:
            line = process.stderr.readline()
            while "press Ctrl-C" not in line:
                assert line, "harness run ended early"
                line = process.stderr.readline()
            process.send_signal(signal.SIGINT)
            assert process.wait(timeout=30) == 0
        finally:
            process.kill()
        out = process.stdout.read()
    assert "alpha" in out
    assert "active" in out
    assert marker.read_text() == "bye"


@pytest.mark.parametrize(("answer", "code"), [("y", 0), ("n", 1)])
def test_call_asks_at_a_terminal_prompt(project: Path, answer: str, code: int) -> None:
    import os
    import pty
    import select

    policy_plugin(project / "plugins" / "policy.py")
    write(
        project / "cordis.yml",
        "- { id: a, name: ./plugins/alpha.py }\n- { id: policy, name: ./plugins/policy.py }\n",
    )
    leader, follower = pty.openpty()
    with subprocess.Popen(
        [HARNESS, "call", "alpha", '{"text": "t"}'],
        cwd=project,
        stdin=follower,
        stdout=follower,
        stderr=follower,
    ) as process:
        os.close(follower)
        seen = b""
        try:
            while b"[y/N]" not in seen:
                ready, _, _ = select.select([leader], [], [], 30)
                assert ready, f"no prompt; saw {seen!r}"
                seen += os.read(leader, 1024)
            assert b'Allow the tool call alpha({"text": "t"})? the test asks' in seen
            os.write(leader, f"{answer}\n".encode())
            assert process.wait(timeout=30) == code
            while True:
                ready, _, _ = select.select([leader], [], [], 1)
                if not ready:
                    break
                try:
                    chunk = os.read(leader, 1024)
                except OSError:
                    break
                if not chunk:
                    break
                seen += chunk
        finally:
            process.kill()
            os.close(leader)
    text = seen.decode()
    if code == 0:
        assert "alpha:t" in text
    else:
        assert "Tool denied: the test asks (approval was refused)" in text
