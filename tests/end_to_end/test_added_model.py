"""Adding a model is one file: register it and the pipeline fits, decides and reports it.

The model (``tests/fixtures/added_model/tiny_slope.py``) lives outside ``models/`` and
``analysis/``; it is registered with :func:`models.register` and requested with
``--models``. Nothing under ``analysis/`` names it: the pipeline reads its ``SPEC``.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from selfmodel import models
from selfmodel.records.contract import DECISIONS

ROOT = Path(__file__).resolve().parents[2]
MODEL_FILE = ROOT / "tests" / "fixtures" / "added_model" / "tiny_slope.py"
QUICK = ["--draws", "300", "--tune", "300", "--chains", "2"]


@pytest.fixture
def tiny_slope():
    spec = importlib.util.spec_from_file_location("tiny_slope", MODEL_FILE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    models.register(module)
    yield module
    models.unregister(module.NAME)


def test_register_checks_the_declaration(tiny_slope):
    import types

    bare = types.ModuleType("bare")
    bare.NAME = "bare"
    with pytest.raises(ValueError, match="lacks SUMMARY"):
        models.register(bare)
    assert models.get("tiny_slope") is tiny_slope
    assert models.verdict().NAME == "scale"


@pytest.mark.e2e
def test_added_model_is_fitted_decided_and_reported(tiny_slope, build_copy, tmp_path, monkeypatch):
    from selfmodel.cli import main

    hyp = tmp_path / "hypotheses.toml"
    hyp.write_text(
        '[[hypothesis]]\nname = "tiny slope"\nmodel = "tiny_slope"\nparameter = "b"\n'
        'direction = "increase"\n'
    )
    monkeypatch.chdir(ROOT)
    argv = ["run", "--out", str(build_copy), *QUICK, "--models", "scale,pooled,tiny_slope",
            "--no-power", "--no-robustness", "--hypotheses", str(hyp), "--no-report"]
    assert main(argv) == 0
    results = json.loads((build_copy / "results.json").read_text())
    entry = results["model_zoo"]["tiny_slope"]
    assert entry["fitted"] is True
    assert entry["summary"] == tiny_slope.SUMMARY
    assert (build_copy / entry["fit"]["file"]).is_file()
    # decided with the declared rule, overall and per task
    slope = entry["slope"]
    assert slope["decision"] in set(DECISIONS) - {"not_estimable"}
    assert set(slope["per_task"]) == {t["task"] for t in results["tasks"]}
    assert slope["hdi_low"] < slope["mean"] < slope["hdi_high"]
    # checked: predictive checks and LOO, compared with the other cell models
    assert entry["posterior_predictive"]["coverage"] is not None
    assert {r["model"] for r in results["model_zoo"]["loo_comparison"]} == {
        "scale", "pooled", "tiny_slope"}
    # the declared hypothesis on its parameter is evaluated, with a Savage-Dickey BF
    (row,) = [r for r in results["hypotheses"]["rows"] if r["model"] == "tiny_slope"]
    assert row["decision"] != "not_estimable" and row["bayes_factor_10"] is not None
    # and the report shows it (model comparison and checks tables)
    assert main(["report", "--out", str(build_copy)]) == 0
    html = (build_copy / "report.html").read_text()
    assert html.count("tiny_slope") >= 3
