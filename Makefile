# Two entry points: `make run` (the main job) and `make test` (format, lint, types, tests).
# `make run` installs the runtime alone into .venv on first use; `make test` adds the
# development tools (pytest, ruff, mypy, Playwright, Ray, ...) once, to the same .venv.
# Later runs reuse both: a stamp file per step, remade when pyproject.toml changes.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev

.PHONY: run test dev bytecode compile bench docs clean

$(BIN)/python:
	@echo "Setting up $(VENV) (first run only; pip shows what it installs)..."
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# the runtime: what `harness run`, `harness chat` and the console need
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --progress-bar on -e .
	touch $(STAMP)
	@echo "Installed: $(BIN)/harness"

# the development tools on top (the `dev` extra): the first `make test` only
$(DEV_STAMP): $(STAMP)
	@echo "Adding the development tools to $(VENV) (first make test only; pip shows what it installs)..."
	$(BIN)/python -m pip install --progress-bar on -e '.[dev]'
	touch $(DEV_STAMP)

# The bytecode of harness and the bundled plugins, compiled ahead as pip does for installed
# packages (an editable install is not compiled). Where PYTHONDONTWRITEBYTECODE is set Python
# never caches it and compiles every module from source on every start (about 50 ms of a
# `harness tools --json`). compileall writes regardless and only recompiles what changed
# (a hot reload drops the bytecode of the plugins it re-imports), so every target runs it.
compile: $(STAMP)
	@$(BIN)/python -m compileall -q harness plugins

# A working copy's setup without running anything: the development tools and the bytecode.
# `bytecode` is the same, under the name older setup notes use.
dev bytecode: $(DEV_STAMP) compile

# The clone's own project file, written once by `harness init` from the tracked template
# (harness/templates/cordis.yml). It is yours: git ignores it, and no test reads it.
cordis.yml: | $(STAMP)
	$(BIN)/harness init .

run: compile cordis.yml
	@echo "harness: the web console will be at http://127.0.0.1:8765/ (MCP at /mcp; Ctrl-C stops)"
	$(BIN)/harness run

test: $(DEV_STAMP) compile
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/pytest

bench: $(DEV_STAMP) compile
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	$(BIN)/python -m bench

# from a fresh project of the template (the clone's cordis.yml may say anything)
docs: compile
	project=$$(mktemp -d) && cp harness/templates/cordis.yml $$project/ && \
	  ln -s $(CURDIR)/plugins $$project/plugins && \
	  HARNESS_WORKSPACE=$$(mktemp -d) $(BIN)/harness -c $$project/cordis.yml \
	  --set files.enabled=true --set git.enabled=true tools --markdown > docs/tools.md

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis
	find harness plugins -name __pycache__ -prune -exec rm -rf {} +
