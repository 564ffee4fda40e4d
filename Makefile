# The two commands a newcomer runs: `make demo` and `make test`. Both build .venv from scratch if missing.
#
# Installing prints one line per step; pip's own output goes to .venv/install.log and is shown only when a
# step fails. Exact versions come from constraints.txt (CI is reproducible); pyproject.toml keeps ranges.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_STAMP := $(VENV)/.installed-demo
LOG := $(VENV)/install.log
PIP := $(BIN)/python -m pip --disable-pip-version-check

# `$(QUIETLY) command...`: run the command with its output appended to the log; on failure show the log's tail.
QUIETLY = sh -c 'log="$$1"; shift; "$$@" >>"$$log" 2>&1 && exit 0; status=$$?; \
	echo "    failed (exit $$status); the end of $$log:"; tail -n 40 "$$log"; exit $$status' quietly $(LOG)

.PHONY: demo test lint bench clean kafka services docs docs-build pyflink-tests

$(BIN)/python:
	@echo "==> creating $(VENV) with $$($(PYTHON) --version)"
	@$(PYTHON) -m venv $(VENV)
	@echo "==> installing pip and setuptools"
	@$(QUIETLY) $(PIP) install -c constraints.txt --upgrade pip setuptools

# No build isolation: setuptools comes from constraints.txt too, and no throwaway build environment is made.
$(STAMP): $(BIN)/python pyproject.toml constraints.txt
	@echo "==> installing fluvial and its dependencies (pinned by constraints.txt; log: $(LOG))"
	@$(QUIETLY) $(PIP) install -c constraints.txt --no-build-isolation -e '.[test]'
	@touch $(STAMP)
	@echo "==> $(VENV) is ready"

# The demo needs fluvial and its dependencies alone; the test extra (Ray, pyarrow: hundreds of MB) is for `make test`.
$(DEMO_STAMP): $(BIN)/python pyproject.toml constraints.txt
	@echo "==> installing fluvial and what the demo needs (pinned by constraints.txt; log: $(LOG))"
	@$(QUIETLY) $(PIP) install -c constraints.txt --no-build-isolation -e .
	@touch $(DEMO_STAMP)

demo: $(DEMO_STAMP)
	$(BIN)/python examples/word_count.py
	@echo "==> a live job for 20 s: open the dashboard's address (below) while it runs"
	$(BIN)/fluvial run --web examples/live_clicks.py

# Two workers (pytest-xdist): half the suite waits on sockets, processes and servers, so a 2-core machine runs it
# in well under the time of one; the tests of one session server (Kafka, PostgreSQL) share a worker. The tests on
# the session's Ray cluster run afterwards in one process, alone (marker `ray_cluster`, tests/conftest.py).
PYTEST_WORKERS ?= 2
test: $(STAMP)
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadgroup -m "not ray_cluster"
	$(BIN)/python -m pytest -m ray_cluster

# `make lint` (CI runs it before the tests): ruff's rules of pyproject.toml on the whole tree, then mypy on fluvial
# (strict on runtime, cluster, checkpoint, state), each package held to the errors it still has (.ci/typecheck.py).
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python .ci/typecheck.py

# A Kafka broker in the foreground for trying the Kafka examples (prints its bootstrap address; Ctrl-C stops it).
kafka: $(STAMP)
	$(BIN)/python -m services.kafka

bench: $(STAMP)
	$(BIN)/python -m bench

# PyFlink 2.3's own JVM-free DataStream tests on fluvial (downloads them once into ~/.cache/fluvial; minutes).
# `make pyflink-tests ARGS="--source ~/flink"` takes them from a Flink checkout instead.
pyflink-tests: $(STAMP)
	$(BIN)/python -m bench.pyflink_tests $(ARGS)

# `make services`: the real servers the connector examples talk to, on 127.0.0.1 with free ports and temporary
# data, until Ctrl-C (services/__main__.py prints where each listens). One line per server.
SERVICES += postgres
SERVICES += nats mosquitto

services: $(STAMP)
	$(BIN)/python -m services $(SERVICES)

# The documentation site (docs/, mkdocs.yml): `make docs` serves it at http://127.0.0.1:8000 while you edit;
# `make docs-build` builds it strictly into site/ (a broken link or reference fails), as CI does. Its packages
# are the `docs` extra, installed into the same .venv on first use (make demo and make test never need them).
DOCS_STAMP := $(VENV)/.docs-installed

$(DOCS_STAMP): $(STAMP)
	@echo "==> installing the docs extra (MkDocs, Material, mkdocstrings; log: $(LOG))"
	@$(QUIETLY) $(PIP) install -c constraints.txt --no-build-isolation -e '.[docs]'
	@touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve --dev-addr 127.0.0.1:8000

docs-build: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

clean:
	rm -rf $(VENV) build site *.egg-info
