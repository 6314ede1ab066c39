# The two commands a new user needs: `make dev` and `make test`. Everything installs into .venv
# from the project's own pyproject.toml.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PYTEST_ARGS ?=
# The sandbox is a distribution of its own in this repository: installed from here in the same
# pip command as Capstan's extras (Capstan's distribution is `capstan-cloud`), so the extra
# `capstan-cloud[sandbox]` is satisfied by it, not by an index.
SANDBOX := -e ./packages/capstan-sandbox
SANDBOX_PYPROJECT := packages/capstan-sandbox/pyproject.toml
# Every install takes the versions CI tested: requirements.lock pins the whole tree (uv's
# resolver, `make lock`); pip reads it as constraints, so an extra installs only what it needs.
LOCK := requirements.lock
PIP_INSTALL := $(BIN)/pip install --quiet -c $(LOCK)
# Tests wait on the sandbox far more than they compute: four workers on two cores.
TEST_WORKERS ?= 4

.PHONY: lock dev test aws-smoke cli-processes chaos load scale fleet processes sandbox-alone wheel browser screenshots check format migrate bench fuzz clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(VENV)/.installed-dev: pyproject.toml $(SANDBOX_PYPROJECT) $(LOCK) | $(BIN)/python
	$(PIP_INSTALL) $(SANDBOX) -e '.[sandbox]'
	touch $@

$(VENV)/.installed-test: pyproject.toml $(SANDBOX_PYPROJECT) $(LOCK) | $(BIN)/python
	$(PIP_INSTALL) $(SANDBOX) -e '.[test]'
	touch $@ $(VENV)/.installed-dev

## make lock: resolve every extra's dependencies again into requirements.lock (uv, installed into
## .venv on demand); versions already pinned stay unless pyproject.toml asks otherwise
lock: | $(BIN)/python
	$(BIN)/pip install --quiet uv
	$(BIN)/uv pip compile pyproject.toml --all-extras --python-version 3.11 \
		--no-emit-package capstan-sandbox --output-file $(LOCK) --quiet

## make dev: create .venv, install Capstan with the sandbox extra, start the dev server
## (sandbox cloud and git host) on DEV_PORT (default 8000): `make dev DEV_PORT=8080`
DEV_PORT ?= 8000
dev: $(VENV)/.installed-dev
	$(BIN)/capstan server --dev --port $(DEV_PORT)

## make dev-reset: start the next `make dev` clean: remove its data directory (DEV_DATA_DIR,
## default $$CAPSTAN_DATA_DIR or .capstan: Capstan's database, the sandbox cloud's and git host's
## saved state, the dev secrets) without asking; refused while a dev server uses it
DEV_DATA_DIR ?= $(or $(CAPSTAN_DATA_DIR),.capstan)
.PHONY: dev-reset
dev-reset: | $(VENV)/.installed-dev
	$(BIN)/python -m capstan.dev_server reset $(DEV_DATA_DIR)

## make test: create .venv if needed, install the test dependencies, run the whole suite
test: $(VENV)/.installed-test
	$(BIN)/pytest -n $(TEST_WORKERS) --durations=15 $(PYTEST_ARGS)

## make aws-smoke: for operators: through the Capstan server the CLI is signed in to
## (CAPSTAN_URL/CAPSTAN_TOKEN or `capstan login`), deploy a web server, a worker, a static site, a
## cache and a bucket into the AWS account of your credentials (boto3's default chain), check each
## answers, delete everything, list leftovers by tag and print the timings; without credentials
## it says so and exits 0. AWS_SMOKE_ARGS passes options (`--help`)
AWS_SMOKE_ARGS ?=
aws-smoke: $(VENV)/.installed-dev
	$(BIN)/python -m capstan.aws_smoke $(AWS_SMOKE_ARGS)

$(VENV)/.installed-fuzz: pyproject.toml $(SANDBOX_PYPROJECT) $(LOCK) | $(BIN)/python
	$(PIP_INSTALL) $(SANDBOX) -e '.[test,fuzz]'
	touch $@ $(VENV)/.installed-test $(VENV)/.installed-dev

## make fuzz: schemathesis (every check) against a live `capstan server --dev` with real ids, for
## at most FUZZ_SECONDS (default 300); fails on any 5xx or schema violation
FUZZ_SECONDS ?= 300
fuzz: $(VENV)/.installed-fuzz
	FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_SEED=$(FUZZ_SEED) $(BIN)/python scripts/fuzz.py

## make load: the tests that bound a latency under a burst (40 parallel wrong sign-ins); run alone,
## one process, since a latency measured beside four test processes on two cores says little
load: $(VENV)/.installed-test
	$(BIN)/pytest -m load $(PYTEST_ARGS)

## make scale: the tests of many resources at once (twenty projects with a web server and a cache
## each in one account, under AWS's default quotas) and of a project's network moving to the
## shared VPC while probed (two generations of its services, two minutes)
scale: $(VENV)/.installed-test
	$(BIN)/pytest -n 2 -m scale $(PYTEST_ARGS)

## make fleet: 200 web servers deployed at once in one account, then resyncing, under AWS's API
## rate limits as the sandbox enforces them (minutes: the deploy is paced by those rates); one
## test, one process. `make fleet PYTEST_ARGS=-s` prints its throttles and passes
fleet: $(VENV)/.installed-test
	$(BIN)/pytest -m fleet $(PYTEST_ARGS)

## make processes: whole topologies of separate processes (an API server and two `capstan worker`
## processes over PostgreSQL; a dev worker joining `capstan server --dev`; `make aws-smoke`'s
## module run against `capstan server --dev` and the sandbox cloud)
processes: $(VENV)/.installed-test
	$(BIN)/pytest -n 2 -m processes $(PYTEST_ARGS)

## make sandbox-alone: `pip install ./packages/capstan-sandbox` into a fresh virtualenv (no
## Capstan), then start its sandbox cloud and call it with boto3 (packages from the index)
sandbox-alone: $(VENV)/.installed-test
	$(BIN)/pytest -m sandbox_alone -p no:cacheprovider $(PYTEST_ARGS)

## make wheel: build Capstan's wheel (the distribution `capstan-cloud`), install it into a fresh
## virtualenv (packages from the index, as requirements.lock pins them) and run `capstan` there
wheel: $(VENV)/.installed-test
	$(BIN)/pytest -m wheel -p no:cacheprovider $(PYTEST_ARGS)

## make cli-processes: the CLI's tests with every command through the installed `capstan` entry
## point in its own process (make test runs most of them in-process, which is faster)
cli-processes: $(VENV)/.installed-test
	CAPSTAN_TEST_CLI_PROCESSES=1 $(BIN)/pytest -n 2 tests/cli tests/plans/test_cli.py \
		tests/plans/test_databases.py $(PYTEST_ARGS)

## make chaos: the process-killing tests (kill -9 mid-deployment, two workers and a killed one)
chaos: $(VENV)/.installed-test
	$(BIN)/pytest -m chaos $(PYTEST_ARGS)

$(VENV)/.installed-browser: pyproject.toml $(SANDBOX_PYPROJECT) $(LOCK) | $(BIN)/python
	$(PIP_INSTALL) $(SANDBOX) -e '.[browser]'
	touch $@ $(VENV)/.installed-test $(VENV)/.installed-dev

## make browser: the dashboard's tests in headless Chromium against a live `capstan server --dev`
## (Debian's chromium: `apt-get install -y chromium`; without it they skip and say so)
browser: $(VENV)/.installed-browser
	$(BIN)/pytest -m browser -p no:cacheprovider $(PYTEST_ARGS)

## make screenshots: the dashboard's main pages at 1280 px and 390 px into docs/screenshots/
screenshots: $(VENV)/.installed-browser
	CAPSTAN_SCREENSHOTS=docs/screenshots $(BIN)/pytest -m browser -p no:cacheprovider \
		tests/dashboard/test_screenshots.py $(PYTEST_ARGS)

## make check: lint, format check, type check and the import layers (pyproject.toml's contracts)
check: $(VENV)/.installed-test
	$(BIN)/ruff check src packages tests bench scripts
	$(BIN)/ruff format --check src packages tests bench scripts
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache
	$(BIN)/python scripts/import_cycles.py capstan_sandbox
	$(BIN)/python scripts/check_lock.py
	$(BIN)/python scripts/lint_role.py

format: $(VENV)/.installed-test
	$(BIN)/ruff check --fix src packages tests bench scripts
	$(BIN)/ruff format src packages tests bench scripts

## make bench: deploy N = 1, 10, 100 web servers against a zero-delay sandbox, the create request's
## CPU alone (bench/creates.py), then the API against a bare FastAPI floor with wrk
## (bench/api.py), a listing of none and of 20 web servers (bench/listing.py),
## concurrent PATCHes (bench/writes.py), metrics and cost reads beside a plain read
## (bench/reads.py), and the idle server's CPU, empty and with 10,000 settled resources
## (bench/idle.py); each prints its figures and ratios
bench: $(VENV)/.installed-test
	$(BIN)/python bench/deploy.py
	$(BIN)/python bench/creates.py
	$(BIN)/python bench/api.py
	$(BIN)/python bench/listing.py
	$(BIN)/python bench/writes.py
	$(BIN)/python bench/reads.py
	$(BIN)/python bench/idle.py
	$(BIN)/python bench/sandbox_calls.py

migrate: $(VENV)/.installed-dev
	$(BIN)/capstan migrate

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
