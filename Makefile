# Two commands on a fresh machine: `make demo` and `make test`. Each builds .venv by itself.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test lint typecheck unit bench clean install check-deps conformance

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test,bench]'
	$(BIN)/python -m pip check
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/agent-stream demo

lint: $(STAMP)
	$(BIN)/ruff check $(wildcard agent_stream agents examples tests bench conformance)
	$(BIN)/mypy

typecheck: lint

unit: $(STAMP)
	$(BIN)/python -m pytest -q

# A dependency clash (e.g. a2a-sdk 1.x's protobuf against uagents') fails the build.
check-deps: $(STAMP)
	$(BIN)/python -m pip check

test: check-deps lint unit

# Third-party clients (Node and Python) read every wire over HTTP on 127.0.0.1.
conformance: $(STAMP)
	cd conformance && npm ci --no-audit --no-fund --loglevel=error
	$(BIN)/python conformance/run.py

bench: $(STAMP)
	@for b in bench/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis conformance/node_modules
