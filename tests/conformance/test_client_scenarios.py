"""The official conformance suite's client scenarios, with harness's gateway as the client.

Each scenario runs the pinned suite with ``client_driver.py`` as its client command: a
harness mounts the suite's server (``harness:mcp-client``) and does what the scenario asks
through its tools service; ``auth/*`` scenarios authorise with ``harness auth`` first. Every
scenario the suite scores for an era passes.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from .suite import ERAS, Suite, SuiteUnavailable, client_scenarios, install, run_client_scenario

DRIVER = f"{sys.executable} {Path(__file__).with_name('client_driver.py')}"
AUTH = [
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
]
PASSING = {
    "2025-11-25": [
        "initialize",
        "tools_call",
        "elicitation-sep1034-client-defaults",
        "sse-retry",
        *AUTH,
    ],
    "2026-07-28": [
        "tools_call",
        "request-metadata",
        *AUTH,
        "auth/resource-mismatch",
        "auth/offline-access-scope",
        "auth/offline-access-not-supported",
        "auth/authorization-server-migration",
        "auth/iss-supported",
        "auth/iss-not-advertised",
        "auth/iss-supported-missing",
        "auth/iss-wrong-issuer",
        "auth/iss-unexpected",
        "auth/iss-normalized",
        "auth/metadata-issuer-mismatch",
        "sep-2322-client-request-state",
        "http-standard-headers",
        "http-invalid-tool-headers",
        "http-custom-headers",
        "json-schema-ref-no-deref",
    ],
}


@pytest.fixture(scope="module")
def suite() -> Suite:
    try:
        return install()
    except SuiteUnavailable as exc:
        pytest.fail(str(exc))


@pytest.mark.parametrize(
    ("era", "scenario"), [(era, scenario) for era in ERAS for scenario in PASSING[era]]
)
def test_the_gateway_passes_the_client_scenario(suite: Suite, era: str, scenario: str) -> None:
    outcome = run_client_scenario(suite, era, scenario, DRIVER)
    assert outcome.ok, "\n".join([*outcome.failures, outcome.output[-3000:]])


@pytest.mark.parametrize("scenario", ["tools_call", "http-invalid-tool-headers"])
def test_with_protocol_auto_the_gateway_finds_the_2026_era(
    suite: Suite, scenario: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Unpinned, harness opens with the 2025-11-25 handshake, which these 2026-only servers
    refuse (tools_call: with an error) or answer at 2026-07-28 (http-invalid-tool-headers)."""
    monkeypatch.setenv("DRIVER_PROTOCOL", "auto")
    outcome = run_client_scenario(suite, "2026-07-28", scenario, DRIVER)
    assert outcome.ok, "\n".join([*outcome.failures, outcome.output[-3000:]])


@pytest.mark.parametrize("era", ERAS)
def test_every_scored_client_scenario_is_run(suite: Suite, era: str) -> None:
    assert sorted(client_scenarios(suite, era)) == sorted(PASSING[era])
