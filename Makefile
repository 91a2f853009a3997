# selfmodel: `make report` sets everything up and writes build/report.html; `make test` runs the tests.
# The interpreter the venv is made from: Python >= 3.12 (PyMC 6 needs it; the lock is made on
# 3.12). `make PYTHON=/path/to/python install` chooses one; otherwise the first of python3.12,
# pyenv's newest 3.12.x, python3.13, pyenv's newest 3.13.x, python3 that is >= 3.12.
PYENV_ROOT ?= $(HOME)/.pyenv
PY_CANDIDATES = python3.12 $(lastword $(sort $(wildcard $(PYENV_ROOT)/versions/3.12.*/bin/python))) \
                python3.13 $(lastword $(sort $(wildcard $(PYENV_ROOT)/versions/3.13.*/bin/python))) python3
PYTHON ?= $(shell for p in $(PY_CANDIDATES); do \
            "$$p" -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1 \
            && { command -v "$$p"; break; }; done)
VENV   := .venv
BIN    := $(VENV)/bin
OUT    ?= build
STAMP  := $(VENV)/.installed
REPORT_CELLS := $(VENV)/typecheck/self_modeling_cells.py
PYTEST_ARGS ?=
# pytest-xdist workers, one per CPU; each test file runs whole on one worker (its module
# fixtures are made once). TEST_WORKERS=0 runs the tests in this process, one after another.
TEST_WORKERS ?= $(shell nproc 2>/dev/null || echo 2)
XDIST  = -n $(TEST_WORKERS) --dist loadfile

.DEFAULT_GOAL := help
.PHONY: help install report test test-ci test-all test-slow lint data lock clean bench bench-quick validate operating-characteristics-data pipeline-operating-characteristics

help:  ## list the steps
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml requirements.lock
	@test -n "$(PYTHON)" || { echo "make: no Python >= 3.12 found (tried: $(PY_CANDIDATES));" \
	  "install one (e.g. pyenv install 3.12) or pass PYTHON=/path/to/python3.12" >&2; exit 2; }
	@"$(PYTHON)" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null || { echo \
	  "make: PYTHON=$(PYTHON) is not a Python >= 3.12 (PyMC 6 needs it); pass another PYTHON=" >&2; exit 2; }
	$(PYTHON) -m venv --clear $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.lock
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $(STAMP)

install: $(STAMP)  ## create .venv with the locked dependencies and the package

report: $(STAMP)  ## run the whole pipeline on data_raw/ into build/ (report.html and report.pdf, results.json)
	$(BIN)/selfmodel run data_raw --out $(OUT)
	$(BIN)/selfmodel report --out $(OUT) --format pdf

# The test layers (README "Tests"; markers in pyproject.toml): the fast layer has none of the
# markers slow, ci, e2e and compiles no model (tests/conftest.py fails a fast test that does);
# CI runs it, then the `ci` tests and the `e2e` tests that are not `slow`.
FAST_TESTS := not (slow or ci or e2e)
CI_TESTS   := ci or (e2e and not slow)

test: $(STAMP)  ## the fast tests: no model compiled, no report rendered (CI runs it first)
	$(BIN)/python -m pytest -q $(XDIST) -m "$(FAST_TESTS)" $(PYTEST_ARGS)

test-ci: $(STAMP)  ## the slower tests CI runs after `make test`: fits (ci) and end-to-end (e2e)
	$(BIN)/python -m pytest -q $(XDIST) -m "$(CI_TESTS)" $(PYTEST_ARGS)

test-slow: $(STAMP)  ## only the long statistical tests (slow; most are not in CI)
	$(BIN)/python -m pytest -q $(XDIST) -m slow $(PYTEST_ARGS)

test-all: $(STAMP)  ## every test, all layers
	$(BIN)/python -m pytest -q $(XDIST) $(PYTEST_ARGS)

lint: $(STAMP)  ## ruff and mypy
	$(BIN)/ruff check analysis models tests bench validation
	@# mypy sees the installed layout: selfmodel = analysis/, selfmodel.models = models/
	rm -rf $(VENV)/typecheck && mkdir -p $(VENV)/typecheck/selfmodel
	ln -s $(CURDIR)/analysis/* $(CURDIR)/models $(CURDIR)/reports $(VENV)/typecheck/selfmodel/
	$(BIN)/mypy
	PYTHONPATH=$(VENV)/typecheck $(BIN)/lint-imports --no-cache
	@# the report's code cells, extracted by the renderer's own .qmd reader into one module
	$(BIN)/python -c 'import sys; from pathlib import Path; from selfmodel.report.render_qmd import QmdDoc; \
	  sys.stdout.write(QmdDoc.read(Path("reports/self_modeling.qmd")).python_source())' > $(REPORT_CELLS)
	$(BIN)/ruff check $(REPORT_CELLS)
	$(BIN)/mypy $(REPORT_CELLS)

data: $(STAMP)  ## regenerate the embedded default data set in data_raw/ (seeded)
	$(BIN)/selfmodel simulate --out data_raw

lock: $(STAMP)  ## rewrite requirements.lock from the current .venv
	$(BIN)/python -m pip freeze --exclude-editable | grep -v '^-e' > requirements.lock

bench: $(STAMP)  ## run every benchmark (2-3 h on 2 cores) and regenerate docs/performance.md
	$(BIN)/python bench/bench_ingest.py --sizes 1000000 10000000 --readers ingest polars --profile
	$(BIN)/python bench/bench_ingest.py --readers reduce --name ingest_reduce
	$(BIN)/python bench/bench_ingest.py --sizes 10000000 --readers polars pandas --name ingest_baselines
	$(BIN)/python bench/bench_ingest.py --sizes 1000 10000 100000 --readers ingest reduce --name ingest_sizes
	$(BIN)/python bench/profile_ingest_memory.py --formats jsonl parquet --repeats 3 --baseline 2762fcc
	$(BIN)/python bench/bench_compile.py
	$(BIN)/python bench/bench_compile.py --fit
	$(BIN)/python bench/bench_sampling.py
	$(BIN)/python bench/bench_sampling.py --cases orthogonal pymc --name sampling_extra
	$(BIN)/python bench/bench_sampling.py --cases scale group_centred sdt --name sampling_quiet
	$(BIN)/python bench/bench_sampling.py --gradient
	$(BIN)/python bench/bench_pipeline.py --steps report imports
	$(BIN)/python bench/bench_pipeline.py --steps first second second_profile --name pipeline_final
	$(BIN)/python bench/bench_pipeline.py --steps first second --name pipeline_robust
	$(BIN)/python bench/bench_pipeline.py --steps records_1x --name pipeline_r1
	$(BIN)/python bench/bench_pipeline.py --steps records_10x --name pipeline_r10
	$(BIN)/python bench/bench_growth.py
	$(BIN)/python bench/bench_growth.py --cell-effect
	$(BIN)/python bench/bench_engines.py --n 1000000
	$(BIN)/python bench/bench_engines.py --n 1000000 --formats parquet jsonl --readers polars duckdb_read reduce_duckdb reduce_spark --name engines_spark
	$(BIN)/python bench/bench_pipeline.py --steps first second --name pipeline_issue18
	$(BIN)/python bench/bench_pipeline.py --steps first second one_record --name pipeline_one_record
	$(BIN)/python bench/bench_pipeline.py --steps naive first second other_data --name pipeline_issue32
	$(BIN)/python bench/compile_floor.py
	$(BIN)/python bench/bench_sampling.py --cases plain scale group_centred --name sampling_decorrelated
	$(BIN)/python bench/bench_sampling.py --sdt-seeds 1 2 3
	$(BIN)/python bench/bench_ingest.py --sizes 1000000 --formats parquet parquet_sorted jsonl --readers ingest polars --name ingest_s18b
	rm -rf /tmp/selfmodel-bench/profile
	PYTENSOR_FLAGS=base_compiledir=/tmp/selfmodel-bench/profile/pytensor $(BIN)/python bench/profile_run.py data_raw --out /tmp/selfmodel-bench/profile/out --name run_profile_cold
	$(BIN)/python bench/profile_records.py
	$(BIN)/python bench/bench_ingest_large.py --sizes 1000000 4000000 14500000
	$(BIN)/python bench/bench_ingest_large.py --sizes --run 14500000 --name run_large
	$(BIN)/python bench/render_docs.py

validate: $(STAMP)  ## statistical validation (hours): operating characteristics of the decision rule, power fast-fit vs NUTS
	$(BIN)/python validation/operating_characteristics.py
	$(BIN)/python validation/power_validation.py

pipeline-operating-characteristics: $(STAMP)  ## operating characteristics of this analysis at the pipeline's sampler settings (~20-40 CPU-hours; resumes)
	$(BIN)/python validation/pipeline_operating_characteristics.py --sims 200

operating-characteristics-data: $(STAMP)  ## rewrite analysis/data/operating_characteristics.json (what the report shows) from validation/results/
	$(BIN)/python validation/operating_characteristics.py --ship

bench-quick: $(STAMP)  ## smoke-test the benchmark scripts (a few minutes)
	$(BIN)/python bench/bench_ingest.py --quick
	$(BIN)/python bench/bench_sampling.py --quick
	$(BIN)/python bench/bench_growth.py --quick
	$(BIN)/python bench/bench_compile.py --quick
	$(BIN)/python bench/bench_pipeline.py --quick
	$(BIN)/python bench/bench_engines.py --quick

clean:  ## remove build/ (keeps .venv)
	rm -rf $(OUT)
