"""Missingness against scale (analysis/robustness/missingness.py): planted scale-dependent missingness is
flagged, missingness unrelated to scale is not, and strict accuracy counts absent items."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
import xarray as xr

import selfmodel.robustness.missingness as ms
from selfmodel.common import arviz_ops
from selfmodel.decisions.hypotheses import DecisionRule
from selfmodel.fitting import fitter as fitter_module
from selfmodel.fitting.fitter import Fitter
from selfmodel.records.cells import build_cells
from selfmodel.records.registry import load_registry
from selfmodel.robustness.missingness import missingness


def _data(tmp_path, drop_share, seed=0):
    rng = np.random.default_rng(seed)
    sizes = np.logspace(0, 3, 10)
    rows = []
    for m, share in enumerate(drop_share):
        for i in range(200):
            if rng.random() < share:
                continue  # the model has no record of this item
            y = bool(rng.random() < 0.5)
            p = y if rng.random() < 0.7 else not y
            rows.append((f"m{m}", "t", f"i{i}", str(p).lower(), str(y).lower(), p == y))
    rec = pl.DataFrame(rows, schema=["model", "task", "item_id", "prediction", "outcome", "correct"],
                       orient="row").with_columns(
        pl.lit(None, dtype=pl.String).alias("predictor"), pl.lit("ok").alias("status"))
    reg = tmp_path / "registry.csv"
    reg.write_text("model,family,params_b\n" + "".join(
        f"m{m},f{m},{s}\n" for m, s in enumerate(sizes)))
    return rec, build_cells(rec, load_registry(reg))


def test_missingness_that_falls_with_scale_is_flagged(tmp_path):
    rec, cells = _data(tmp_path, np.linspace(0.6, 0.0, 10))
    out = missingness(rec, cells)
    assert out["depends_on_scale"] == {"t": True}
    assert out["slope_of_missingness"]["overall"]["estimate"] < 0
    m0 = next(r for r in out["per_model_task"] if r["model"] == "m0")
    assert m0["n_missing"] == 200 - m0["n_records"]
    assert m0["unusable_share"] == pytest.approx(m0["n_missing"] / 200)
    # strict accuracy charges the absent items: its slope is larger than the readable one
    s = out["strict_accuracy_sensitivity"]
    assert s["strict"]["overall"]["estimate"] > s["readable"]["overall"]["estimate"] + 0.2


def test_missingness_unrelated_to_scale_is_not_flagged(tmp_path):
    rec, cells = _data(tmp_path, np.full(10, 0.2), seed=1)
    out = missingness(rec, cells)
    assert out["depends_on_scale"] == {"t": False}
    assert out["any_depends_on_scale"] is False


class _FakeFit:
    """What selfmodel.fitting.sampling.fit returns, with a posterior chosen per call (no sampling)."""

    def __init__(self, beta: float, model: str = "scale"):
        rng = np.random.default_rng(0)
        b = beta + 0.02 * rng.standard_normal((2, 500))
        post = xr.Dataset({"beta": (("chain", "draw"), b),
                           "slope_task": (("chain", "draw", "task"), b[..., None])},
                          coords={"task": ["t"]})
        self.model, self.idata = model, arviz_ops.from_datasets(posterior=post)
        self.diagnostics = {"passed": True, "max_rhat": 1.0, "divergences": 0}
        self.provenance = {"cache_key": "fake"}


def test_strict_refit_fits_strict_counts_and_says_when_the_answer_changes(tmp_path, monkeypatch):
    rec, cells = _data(tmp_path, np.linspace(0.6, 0.0, 10))
    usable = cells.filter(pl.col("x").is_not_null() & (pl.col("n") > 0))
    seen = {}

    def fake_fit(name, data, **kw):
        seen["data"], seen["kw"] = data, kw
        return _FakeFit(0.0)  # strict counts: no slope

    monkeypatch.setattr(fitter_module, "fit", fake_fit)
    out = ms.strict_accuracy_refit(rec, usable, _FakeFit(0.5), scale="params", rule=DecisionRule(),
                                   fitter=Fitter(1))
    strict = seen["data"].sort("model")
    assert (seen["kw"]["seed"], seen["kw"]["settings"], seen["kw"]["cache_dir"]) == (1, None, None)
    # every absent item is in n (200 items per model), k is the readable correct count
    assert strict["n"].to_list() == [200] * 10
    assert strict["k"].to_list() == usable.sort("model")["k"].to_list()
    assert out["main"]["decision"] == "improves" and out["strict"]["decision"] != "improves"
    assert out["changes_answer"] is True and out["changed"][0] == "overall"
    assert out["n_missing"] == 2000 - int(usable["n_total"].sum())
    monkeypatch.setattr(fitter_module, "fit", lambda name, data, **kw: _FakeFit(0.5))
    same = ms.strict_accuracy_refit(rec, usable, _FakeFit(0.5), scale="params", rule=DecisionRule(),
                                    fitter=Fitter(1))
    assert same["changes_answer"] is False and same["same_per_task"] == {"t": True}
