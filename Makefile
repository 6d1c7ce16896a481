# Two commands do all set-up on a fresh Debian machine (Python 3.11, as root):
#   make demo   - virtual environment, toolwire with the `demo` extra (openai, the simulator's
#                 server, rich), then `toolwire demo`: an agent through the real openai client,
#                 a cut stream refused, a retry replayed from the store (offline, under 30 s)
#   make test   - everything the tests need (Debian's postgresql, redis-server and tmux too), then
#                 ruff check, ruff format --check, mypy --strict on src/, lint-imports, and the
#                 whole pytest suite (pytest-xdist, two workers per core)
# make test-fast is the same lint and the suite without the tests marked `slow` (the property
# tests over the whole corpus, the fuzzers, the schedule and model explorations).
# make bench prints toolwire's figures against the competitors measured in the same run.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: demo test test-fast lint lock lock-check docs-envs compare-latest pytest pytest-fast test-pythons bench system-deps clean

# Every environment of the tests and benchmarks is installed from a lock made by `make lock`
# (locks/*.txt, compiled from pyproject.toml by uv), so a fresh machine tests exactly what was
# tested; users' installs keep pyproject.toml's ranges. uv lives in a venv of its own, pinned
# here; scripts/lockfile.py checks that a synced venv holds exactly what its lock names.
UV_VERSION := 0.13.10
UV := .venv-uv/bin/uv
LOCKS := locks

$(UV):
	$(PYTHON) -m venv .venv-uv || (apt-get update && apt-get install -y python3-venv && $(PYTHON) -m venv .venv-uv)
	.venv-uv/bin/python -m pip install --quiet "uv==$(UV_VERSION)"

# sync VENV LOCK: the venv holds exactly the lock's distributions (anything else is removed),
# then toolwire itself, editable, without dependencies
define sync
	[ -x $(1)/bin/python ] || $(UV) venv --quiet --seed --python $(PYTHON) $(1)
	$(UV) pip sync --quiet --python $(1)/bin/python $(2)
	$(UV) pip install --quiet --python $(1)/bin/python --no-deps -e .
endef

$(BIN)/python: | $(UV)
	$(UV) venv --quiet --seed --python $(PYTHON) $(VENV)

# the demo venv is the test venv: the demo's extra, at the versions the lock names
$(VENV)/.demo-installed: pyproject.toml $(LOCKS)/dev.txt | $(BIN)/python
	$(UV) pip install --quiet --python $(BIN)/python -c $(LOCKS)/dev.txt -e '.[demo]'
	touch $@

$(VENV)/.dev-installed: pyproject.toml $(LOCKS)/dev.txt | $(BIN)/python
	$(call sync,$(VENV),$(LOCKS)/dev.txt)
	touch $@

# The benchmark's competitors live in their own venv and lock: instructor pins an older
# openai than the competitor tests of `make test` are written against.
BENCH_VENV := .venv-bench
$(BENCH_VENV)/.bench-installed: pyproject.toml $(LOCKS)/bench.txt | $(UV)
	$(call sync,$(BENCH_VENV),$(LOCKS)/bench.txt)
	touch $@

# Made by hand after a change of pyproject.toml's dependencies, or to take newer releases:
# each lock is universal (markers for every Python and platform from its lowest version) and
# stamped with the digest of the tables it came from, so a stale lock fails `make test`.
# A refreshed lock lands only with a green `make test` (CONTRIBUTING.md).
LOCK_ARGS ?= --upgrade
COMPILE = $(UV) pip compile --quiet pyproject.toml --all-extras --universal \
	--custom-compile-command "make lock" $(LOCK_ARGS)
lock: | $(UV)
	mkdir -p $(LOCKS)
	$(COMPILE) --python-version 3.11 --group pyproject.toml:dev -o $(LOCKS)/dev.txt
	$(COMPILE) --python-version 3.10 --group pyproject.toml:test -o $(LOCKS)/test.txt
	$(COMPILE) --python-version 3.11 --group pyproject.toml:test --group pyproject.toml:bench \
		-o $(LOCKS)/bench.txt
	for lock in $(LOCKS)/*.txt; do $(PYTHON) scripts/lockfile.py stamp $$lock || exit 1; done

demo: $(VENV)/.demo-installed
	$(BIN)/toolwire demo

# Debian's PostgreSQL and Redis servers (the test suite starts throwaway instances itself)
# and tmux (the replay tests read the live terminal view off a tmux screen).
system-deps:
	@if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || ! command -v redis-server >/dev/null 2>&1 \
		|| ! command -v tmux >/dev/null 2>&1; then \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql redis-server tmux; \
	fi

lint: $(VENV)/.dev-installed
	$(BIN)/ruff check src tests benchmarks docs scripts
	$(BIN)/ruff format --check src tests benchmarks docs scripts
	$(BIN)/mypy --strict src/toolwire
	$(BIN)/lint-imports

# Each xdist worker is a session of its own: it starts its own throwaway PostgreSQL and Redis
# (tests/servers.py, free ports, private directories), so workers share no server or file.
# --dist loadfile keeps a module on one worker: its module-scoped simulators and servers start
# once, and the truncation sweep's totals see the whole module. Two workers per core: many
# tests wait (on subprocesses, servers, timeouts), and with one worker per core the cores sat
# a third idle; tests/conftest.py hands out the modules holding slow tests first.
PYTEST_WORKERS ?= $(shell echo $$(( 2 * $$(nproc 2>/dev/null || echo 1) )))
XDIST := -n $(PYTEST_WORKERS) --dist loadfile
lock-check: $(VENV)/.dev-installed
	$(BIN)/python scripts/lockfile.py check $(LOCKS)/dev.txt

# one venv per docs page, holding only the page's own `pip install` line (at the lock's
# versions), for tests/project/test_docs_install.py: a dependency a page forgets fails there
docs-envs: $(VENV)/.dev-installed | $(UV)
	$(BIN)/python scripts/docs_envs.py --uv $(UV) --python $(PYTHON)

pytest: lock-check docs-envs system-deps
	$(BIN)/pytest $(XDIST)

pytest-fast: lock-check system-deps
	$(BIN)/pytest $(XDIST) -m "not slow"

test: lint pytest

test-fast: lint pytest-fast

# The oldest and newest supported Pythons as well (CI runs this after `make test`), each in
# its own venv, wherever this machine has them (on PATH or under pyenv); a missing one is
# reported and skipped, since the stated machine only promises Python 3.11. The competitor
# tests (marker `compare`) state facts about other libraries, not about the Python running
# them: they run once, in `make test`, and these venvs do without the compare group. The
# SIGKILL sweep kills 100 conversations per store once, in `make test`; here 20 per store.
OTHER_PYTHONS ?= 3.10 3.13
test-pythons: system-deps | $(UV)
	@for v in $(OTHER_PYTHONS); do \
		py=$$(ls -d $$HOME/.pyenv/versions/$$v.*/bin/python$$v 2>/dev/null | tail -n 1); \
		[ -n "$$py" ] || py=$$(command -v python$$v); \
		if [ -z "$$py" ] || ! $$py --version >/dev/null 2>&1; then \
			echo "== python$$v not found on this machine: skipped"; continue; fi; \
		echo "== pytest on $$($$py --version)"; \
		[ -x .venv-$$v/bin/python ] || $(UV) venv --quiet --seed --python $$py .venv-$$v || exit 1; \
		$(UV) pip sync --quiet --python .venv-$$v/bin/python $(LOCKS)/test.txt && \
		$(UV) pip install --quiet --python .venv-$$v/bin/python --no-deps -e . && \
		.venv-$$v/bin/python scripts/lockfile.py check $(LOCKS)/test.txt && \
		TOOLWIRE_CRASH_KILLS=$${TOOLWIRE_CRASH_KILLS:-20} \
			.venv-$$v/bin/pytest -p no:cacheprovider -q $(XDIST) -m 'not compare' || exit 1; \
	done

# The competitor tests on the newest releases, in a venv of their own that ignores the lock:
# prints the locked and newest version of each competitor and every README claim that a newer
# release changed. Not part of `make test` or CI (it depends on what was released today).
compare-latest: system-deps | $(UV)
	[ -x .venv-latest/bin/python ] || $(UV) venv --quiet --seed --python $(PYTHON) .venv-latest
	$(UV) pip install --quiet --python .venv-latest/bin/python --refresh --upgrade \
		-r pyproject.toml --all-extras --group pyproject.toml:dev
	$(UV) pip install --quiet --python .venv-latest/bin/python --no-deps -e .
	.venv-latest/bin/python scripts/compare_latest.py

bench: $(BENCH_VENV)/.bench-installed
	$(BENCH_VENV)/bin/python scripts/lockfile.py check $(LOCKS)/bench.txt
	$(BENCH_VENV)/bin/python -m benchmarks $(BENCH_ARGS)

clean:
	rm -rf $(VENV) $(BENCH_VENV) .venv-3.* .venv-uv .venv-latest .venv-docs .pytest_cache .mypy_cache .ruff_cache .hypothesis
