# Two entry points: `make run` (the main job) and `make test` (format, lint, types, tests).
# Both create .venv and install the project on first use; later runs reuse it.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test bench docs clean bytecode

$(STAMP): pyproject.toml
	@echo "Setting up $(VENV) (first run only; pip shows what it installs)..."
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --progress-bar on -e '.[dev]'
	touch $(STAMP)
	@echo "Installed: $(BIN)/harness"

# The bytecode of harness and the bundled plugins, compiled ahead as pip does for installed
# packages (an editable install is not compiled). Where PYTHONDONTWRITEBYTECODE is set Python
# never caches it and compiles every module from source on every start (about 50 ms of a
# `harness tools --json`). compileall writes regardless and only recompiles what changed
# (a hot reload drops the bytecode of the plugins it re-imports), so every target runs it.
bytecode: $(STAMP)
	@$(BIN)/python -m compileall -q harness plugins

# The clone's own project file, written once by `harness init` from the tracked template
# (harness/templates/cordis.yml). It is yours: git ignores it, and no test reads it.
cordis.yml: | $(STAMP)
	$(BIN)/harness init .

run: bytecode cordis.yml
	@echo "harness: the web console will be at http://127.0.0.1:8765/ (MCP at /mcp; Ctrl-C stops)"
	$(BIN)/harness run

test: bytecode
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/pytest

bench: bytecode
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	$(BIN)/python -m bench

# from a fresh project of the template (the clone's cordis.yml may say anything)
docs: bytecode
	project=$$(mktemp -d) && cp harness/templates/cordis.yml $$project/ && \
	  ln -s $(CURDIR)/plugins $$project/plugins && \
	  HARNESS_WORKSPACE=$$(mktemp -d) $(BIN)/harness -c $$project/cordis.yml \
	  --set files.enabled=true --set git.enabled=true tools --markdown > docs/tools.md

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis
	find harness plugins -name __pycache__ -prune -exec rm -rf {} +
