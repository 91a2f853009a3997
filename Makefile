# selfmodel: `make report` sets everything up and writes build/report.html; `make test` runs the tests.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
OUT    ?= build
STAMP  := $(VENV)/.installed
PYTEST_ARGS ?=

.DEFAULT_GOAL := help
.PHONY: help install report test test-all test-slow lint data lock clean

help:  ## list the steps
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.lock
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $(STAMP)

install: $(STAMP)  ## create .venv with the locked dependencies and the package

report: $(STAMP)  ## run the whole pipeline on data_raw/ into build/ (report.html and report.pdf, results.json)
	$(BIN)/selfmodel run data_raw --out $(OUT)
	$(BIN)/selfmodel report --out $(OUT) --format pdf

test: $(STAMP)  ## fast tests plus the slow recovery tests that matter (what CI runs)
	$(BIN)/python -m pytest -q -m "not slow or ci" $(PYTEST_ARGS)

test-all: $(STAMP)  ## every test, slow statistical ones included
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

test-slow: $(STAMP)  ## only the slow statistical tests
	$(BIN)/python -m pytest -q -m slow $(PYTEST_ARGS)

lint: $(STAMP)  ## ruff and mypy
	$(BIN)/ruff check analysis models tests bench
	$(BIN)/mypy

data: $(STAMP)  ## regenerate the embedded default data set in data_raw/ (seeded)
	$(BIN)/selfmodel simulate --out data_raw

lock: $(STAMP)  ## rewrite requirements.lock from the current .venv
	$(BIN)/python -m pip freeze --exclude-editable | grep -v '^-e' > requirements.lock

clean:  ## remove build/ (keeps .venv)
	rm -rf $(OUT)
