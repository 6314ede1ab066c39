# The two commands a new user needs: `make dev` and `make test`. Everything installs into .venv
# from the project's own pyproject.toml.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PYTEST_ARGS ?=
# Tests wait on the sandbox far more than they compute: four workers on two cores.
TEST_WORKERS ?= 4

.PHONY: dev test chaos check format migrate bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(VENV)/.installed-run: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@ $(VENV)/.installed-run

## make dev: create .venv, install Capstan, start the dev server (sandbox cloud and git host)
dev: $(VENV)/.installed-run
	$(BIN)/capstan server --dev

## make test: create .venv if needed, install the test dependencies, run the whole suite
test: $(VENV)/.installed-test
	$(BIN)/pytest -n $(TEST_WORKERS) $(PYTEST_ARGS)

## make chaos: the process-killing tests (kill -9 mid-deployment, two workers and a killed one)
chaos: $(VENV)/.installed-test
	$(BIN)/pytest -m chaos $(PYTEST_ARGS)

## make check: lint, format check and type check
check: $(VENV)/.installed-test
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy

format: $(VENV)/.installed-test
	$(BIN)/ruff check --fix src tests bench
	$(BIN)/ruff format src tests bench

## make bench: deploy N = 1, 10, 100 web servers against a zero-delay sandbox and print the figures
bench: $(VENV)/.installed-test
	$(BIN)/python bench/deploy.py

migrate: $(VENV)/.installed-run
	$(BIN)/capstan migrate

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
