"""Run the pinned conformance suite's server scenarios against ``harness run``.

    python -m tests.conformance                     # the starter project, both eras
    python -m tests.conformance -c DIR/cordis.yml   # a project of your own (copied first)
    python -m tests.conformance --era 2026-07-28 -v # one era, each failure's checks

Each scenario gets a fresh ``harness run`` on a copy of the project (no state carried from
one scenario to the next, as the suite expects). It prints one line per scenario and the
passed count per era, and exits 1 when any scenario failed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

from ..helpers import project_copy
from ..processes import start_harness_run, stop
from .suite import ERAS, install, run_server_scenario, server_scenarios


def _project(config: Path | None, into: Path) -> Path:
    if config is None:
        return project_copy(into)
    shutil.copytree(
        config.parent, into, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".harness")
    )
    return into / config.name


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.conformance")
    parser.add_argument("-c", "--config", type=Path, help="the project's cordis.yml")
    parser.add_argument("--era", choices=ERAS, action="append", help="default: both")
    parser.add_argument("--scenario", action="append", help="only these scenarios")
    parser.add_argument("-v", "--verbose", action="store_true", help="print failed checks")
    options = parser.parse_args(argv)
    suite = install()
    failed = 0
    for era in options.era or ERAS:
        scenarios = [s for s in server_scenarios(suite, era) if s in (options.scenario or [s])]
        passed = 0
        for scenario in scenarios:
            with tempfile.TemporaryDirectory(prefix="conformance-project-") as folder:
                config = _project(options.config, Path(folder) / "project")
                process, port = start_harness_run(config.parent, dict(os.environ))
                try:
                    outcome = run_server_scenario(
                        suite, era, scenario, f"http://127.0.0.1:{port}/mcp"
                    )
                finally:
                    stop(process)
            passed += outcome.ok
            print(f"{era} {'pass' if outcome.ok else 'FAIL'} {scenario}", flush=True)
            if options.verbose:
                for failure in outcome.failures:
                    print(f"    {failure}")
        failed += len(scenarios) - passed
        print(f"{era}: {passed}/{len(scenarios)} server scenarios passed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
