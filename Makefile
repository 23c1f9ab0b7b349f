# Two commands on a fresh machine: `make demo` and `make test`. Each builds .venv by itself, from
# the committed lock (uv.lock, `uv sync --frozen`): the same versions today and next month.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# uv, pinned, installed by pip beside the checkout (.tools/): it builds .venv from uv.lock.
UV_VERSION := 0.13.9
TOOLS  := .tools
UV     := $(TOOLS)/bin/uv
# The demo's environment (the library and the command line, no extras or tool groups), and the
# whole dev/test environment on top of it (every extra and dependency group).
LEAN_STAMP := $(VENV)/.installed-lean
STAMP  := $(VENV)/.installed
NODE_STAMP := conformance/node_modules/.installed
# uv uses the interpreter make was given and never downloads one.
export UV_PYTHON_DOWNLOADS := never
export UV_PROJECT_ENVIRONMENT := $(VENV)
# Installed packages are byte-compiled once, at install: with PYTHONDONTWRITEBYTECODE set (as on
# CI) every process would otherwise compile uagents, pydantic and the rest from source again.
export UV_COMPILE_BYTECODE := 1

# The chunker's modules, which the editable install also compiles (Cython, hatch_build.py).
SPEEDUPS := $(foreach m,buffer sentences scanner policy chunker,\
	agent_stream/chunking/$(m).py agent_stream/chunking/$(m).pxd)
# uv hides a build's output when it succeeds: say it when the compiled chunker was not built.
CHECK_SPEEDUPS := $(BIN)/python -c 'import agent_stream.chunking._compiled.chunker' 2>/dev/null \
	|| echo "make: the compiled chunker was not built (make speedups-verbose says why);" \
	"the interpreted one is used"
# The editable install is rebuilt (the chunker compiled in place) whenever .venv is synced.
SYNC := $(UV) sync --frozen --python $(PYTHON) --reinstall-package agent-stream

.PHONY: demo test lint typecheck unit bench clean install check-deps conformance system-deps \
	speedups speedups-verbose docs docs-serve docs-images lock check-lock python-version dist \
	dist-check

# One clear line for a Python older than the supported minimum (not a resolver's dump).
python-version:
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null || { \
	  echo "make: agent_stream needs Python >= 3.10; $(PYTHON) is" \
	    "$$($(PYTHON) -c 'import platform; print(platform.python_version())' 2>/dev/null \
	    || echo missing): run make PYTHON=python3.11 (or another >= 3.10)"; exit 1; }

$(UV): | python-version
	$(PYTHON) -m pip install -q --disable-pip-version-check --no-warn-script-location \
	  --target $(TOOLS) 'uv==$(UV_VERSION)'

# A stale lock (pyproject.toml changed, uv.lock did not) names the command that refreshes it.
check-lock: $(UV)
	@$(UV) lock --check --python $(PYTHON) -q 2>/dev/null || { \
	  echo "make: uv.lock does not match pyproject.toml: run 'make lock' and commit uv.lock"; \
	  exit 1; }

# Refresh the lock after changing a dependency in pyproject.toml.
lock: $(UV)
	$(UV) lock --python $(PYTHON)

# --inexact: the demo's sync removes nothing the whole environment installed.
$(LEAN_STAMP): uv.lock pyproject.toml hatch_build.py $(SPEEDUPS) | $(UV)
	$(SYNC) --inexact --no-default-groups
	@$(CHECK_SPEEDUPS)
	touch $(LEAN_STAMP)

$(STAMP): uv.lock pyproject.toml hatch_build.py $(SPEEDUPS) | $(UV)
	$(SYNC) --all-extras --all-groups
	@$(CHECK_SPEEDUPS)
	touch $(STAMP) $(LEAN_STAMP)

install: $(STAMP)

# Rebuild only the compiled chunker, in place (the editable install again); -verbose shows the
# build's output, and why it fell back to the interpreted chunker if it did.
speedups: $(UV)
	$(UV) sync --frozen --inexact --python $(PYTHON) --no-default-groups \
	  --reinstall-package agent-stream
	@$(CHECK_SPEEDUPS)

speedups-verbose: $(UV)
	$(UV) sync --frozen --inexact --python $(PYTHON) --no-default-groups \
	  --reinstall-package agent-stream -v 2>&1 | grep -iE 'agent_stream|cython|error|warning'

demo: $(LEAN_STAMP)
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
# One pytest worker per core and two more (pytest-xdist; PYTEST_WORKERS=0 runs them in this
# process): many tests wait on real agents, servers and timeouts with a core idle, and the extra
# workers fill it (on two cores with nothing else running: 4 min 45 s with three, 4 min 13 s
# with four; the CPUs were 58% busy with two).
# PYTHONDONTWRITEBYTECODE is cleared: pytest keeps each test module's rewritten bytecode (in the
# ignored __pycache__ folders) instead of rewriting every module in every worker on every run.
PYTEST_WORKERS ?= $(shell $(PYTHON) -c 'import os; print(len(os.sched_getaffinity(0)) + 2)' 2>/dev/null || echo auto)
unit: $(STAMP) system-deps $(NODE_STAMP)
	PYTHONDONTWRITEBYTECODE= AGENT_STREAM_REQUIRE_SPEEDUPS=1 $(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist worksteal --durations=15

# A dependency clash fails the build; so does a lock that no longer matches pyproject.toml.
check-deps: check-lock $(STAMP)
	$(UV) pip check --python $(BIN)/python

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

# An sdist and a wheel into dist/, checked by twine; dist-check installs each in a clean venv.
dist: $(STAMP)
	rm -rf dist
	$(UV) build --python $(PYTHON) --out-dir dist
	$(BIN)/twine check --strict dist/*

dist-check: dist
	$(BIN)/python tests/packaging/check_dist.py dist

clean:
	rm -rf $(VENV) $(TOOLS) dist .pytest_cache .mypy_cache .ruff_cache .hypothesis conformance/node_modules
	rm -f agent_stream/chunking/_compiled/*.so
