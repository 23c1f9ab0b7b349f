# Two commands on a fresh machine: `make demo` and `make test`. Each builds .venv by itself.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
NODE_STAMP := conformance/node_modules/.installed

# The chunker's modules, which the editable install also compiles (Cython, hatch_build.py).
SPEEDUPS := $(foreach m,buffer sentences scanner policy chunker,\
	agent_stream/chunking/$(m).py agent_stream/chunking/$(m).pxd)
# pip hides a build's output when it succeeds: say it when the compiled chunker was not built.
CHECK_SPEEDUPS := $(BIN)/python -c 'import agent_stream.chunking._compiled.chunker' 2>/dev/null \
	|| echo "make: the compiled chunker was not built (pip install -v -e . says why);" \
	"the interpreted one is used"

.PHONY: demo test lint typecheck unit bench clean install check-deps conformance system-deps \
	speedups docs docs-serve docs-images

# The editable install also compiles $(SPEEDUPS) in place (hatch_build.py), so it reruns when
# one of them or the hook changes.
$(STAMP): pyproject.toml hatch_build.py $(SPEEDUPS)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[all]' --group dev --group bench --group docs
	$(BIN)/python -m pip check
	@$(CHECK_SPEEDUPS)
	touch $(STAMP)

install: $(STAMP)

# Rebuild only the compiled chunker, in place: the editable install again, without the
# dependencies (the full install when there is none yet or pyproject.toml changed).
speedups:
	@if [ ! -f $(STAMP) ] || [ pyproject.toml -nt $(STAMP) ]; then \
	  $(MAKE) --no-print-directory install; \
	else \
	  echo "$(BIN)/python -m pip install -q --no-deps -e ."; \
	  $(BIN)/python -m pip install -q --no-deps -e . && touch $(STAMP) && { $(CHECK_SPEEDUPS); }; \
	fi

demo: $(STAMP)
	$(BIN)/agent-stream demo

LINTED := $(wildcard agent_stream agents examples tests bench conformance docs) hatch_build.py

lint: $(STAMP)
	$(BIN)/ruff check $(LINTED)
	$(BIN)/ruff format --check $(LINTED)
	$(BIN)/mypy
	$(BIN)/lint-imports --no-logo

typecheck: lint

# Debian packages some tests use: chromium (the gateway's page, headless, driven by Playwright)
# and redis-server (the gateway's Redis resume store). Installed with apt-get when missing; where
# that cannot be done (no root, no apt-get) those tests skip and say why.
system-deps:
	@missing=""; \
	command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
	command -v redis-server >/dev/null 2>&1 || missing="$$missing redis-server"; \
	command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ] || missing="$$missing haproxy"; \
	if [ -n "$$missing" ]; then \
	  if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	    echo "apt-get install$$missing"; \
	    (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing) \
	      >/dev/null || echo "make: could not install$$missing; the tests that need it skip"; \
	  else echo "make: cannot install$$missing (no root or no apt-get); those tests skip"; fi; \
	fi

# The Node clients (pinned in conformance/package-lock.json) that the conformance suite and the
# gateway tests run against our wires.
$(NODE_STAMP): conformance/package-lock.json
	cd conformance && npm ci --no-audit --no-fund --loglevel=error
	touch $(NODE_STAMP)

# AGENT_STREAM_REQUIRE_SPEEDUPS: the tests fail if the compiled chunker was not built.
# One pytest worker per core (pytest-xdist; PYTEST_WORKERS=0 runs them in this process): most
# tests wait on real agents and servers, so two workers halve the run on two cores.
PYTEST_WORKERS ?= auto
unit: $(STAMP) system-deps $(NODE_STAMP)
	AGENT_STREAM_REQUIRE_SPEEDUPS=1 $(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist worksteal --durations=15

# A dependency clash (e.g. a2a-sdk 1.x's protobuf against uagents') fails the build.
check-deps: $(STAMP)
	$(BIN)/python -m pip check

test: check-deps lint unit

# Third-party clients (Node and Python) read every wire over HTTP on 127.0.0.1.
conformance: $(STAMP) $(NODE_STAMP)
	$(BIN)/python conformance/run.py

bench: $(STAMP)
	@for b in bench/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

# The documentation site, into site/: strict, so a broken link, a missing reference or a
# docstring the API reference cannot read fails the build. The limits, CLI and wire tables are
# generated from the code at build time (docs/hooks.py).
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

docs-serve: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve

# The pictures of docs/images/, made from the real programs (the web page in headless chromium,
# the terminal rendering recorded by rich).
docs-images: $(STAMP) system-deps
	$(BIN)/python docs/images/make_images.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis conformance/node_modules
	rm -f agent_stream/chunking/_compiled/*.so
