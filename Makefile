# memsync — every target works on a fresh machine with only python3, pip and make.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install mnem-sdk chromium demo test lint typecheck pytest bench breakcheck integration clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[mem0,dev]"
	touch $(STAMP)

# The real mnem SDK (mnem-agents 0.0.7), built offline from ../shared/mnem-sdk into the venv,
# then mnem's own agent clients on top of it: mnem-langgraph and mnem-mcp depend on
# mnem-agents, which pip cannot build here, so they go in with --no-deps (their other
# dependencies, langgraph and mcp, are in the dev extra).
# build.sh exit 3 (no Rust toolchain) or no ../shared: the reason goes to $(SDK_SKIP) and the
# real-SDK tests skip with it, the demo falls back to a second Mem0 store and says why, the
# bench skips its mnem rows with it. Any other failure stops here. test, demo and bench all
# build it this one way.
SDK_BUILD := ../shared/mnem-sdk/build.sh
SDK_SKIP := $(VENV)/mnem-sdk-unavailable
# mnem's own clients for agents, on top of the built SDK (they require mnem-agents, which pip
# cannot build here): the tests run them beside memsync's served store.
MNEM_CLIENTS := mnem-mcp==0.0.1 mnem-langgraph==0.0.1

mnem-sdk: $(STAMP)
	@rm -f $(SDK_SKIP)
	@if [ ! -f $(SDK_BUILD) ]; then \
	    echo "!!! mnem SDK: $(SDK_BUILD) not found; the real-SDK tests will SKIP, make demo syncs into a second Mem0 store, make bench skips its real-mnem rows" >&2; \
	    echo "$(SDK_BUILD) not found" > $(SDK_SKIP); \
	else \
	    rc=0; bash $(SDK_BUILD) $(BIN)/python || rc=$$?; \
	    if [ $$rc -eq 3 ]; then \
	        echo "!!! mnem SDK: build.sh exit 3 (no Rust toolchain >= 1.85); the real-SDK tests will SKIP, make demo syncs into a second Mem0 store, make bench skips its real-mnem rows" >&2; \
	        echo "build.sh exit 3: no Rust toolchain >= 1.85 here" > $(SDK_SKIP); \
	    elif [ $$rc -ne 0 ]; then \
	        echo "!!! mnem SDK: build.sh failed (exit $$rc)" >&2; exit $$rc; \
	    else \
	        $(BIN)/python -m pip install --quiet --no-deps $(MNEM_CLIENTS) || exit $$?; \
	    fi; \
	fi

# The status page's browser tests drive Debian's headless Chromium (never a downloaded one).
# Missing, it is installed where apt-get can (root); elsewhere this stops with what to run.
chromium:
	@if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then \
	    if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	        echo "installing Debian's chromium and chromium-driver for the browser tests" >&2; \
	        apt-get update -qq && apt-get install -y -qq chromium chromium-driver >/dev/null; \
	    else \
	        echo "!!! the browser tests need chromium and chromium-driver: sudo apt-get install chromium chromium-driver" >&2; \
	        exit 1; \
	    fi; \
	fi

demo: $(STAMP) mnem-sdk
	$(BIN)/python -m memsync.demo

# ruff, then the import contract (pyproject.toml [tool.importlinter]): an import that climbs a
# layer fails the build.
lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/lint-imports --no-cache

typecheck: $(STAMP)
	$(BIN)/mypy

pytest: $(STAMP) mnem-sdk chromium
	$(BIN)/python -m pytest -q

test: lint typecheck pytest

bench: $(STAMP) mnem-sdk
	$(BIN)/python bench/run_all.py

# Each test of tests/breakcheck/'s table, run once with what it guards broken in a scratch copy
# of the tree: a test that still passes is NOT CAUGHT (exit 1). Not part of `make test`: it
# runs every listed test again, once per break. BREAKS="word ..." runs only the entries whose
# name or test holds a word.
breakcheck: $(STAMP) mnem-sdk chromium
	PYTHONPATH=src:. $(BIN)/python -m tests.breakcheck $(BREAKS)

integration: $(STAMP)
	bash tests/integration/run.sh

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build src/*.egg-info
