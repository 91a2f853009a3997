"""Missingness against scale (analysis/missingness.py): planted scale-dependent missingness is
flagged, missingness unrelated to scale is not, and strict accuracy counts absent items."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from analysis.cells import build_cells
from analysis.missingness import missingness
from analysis.registry import load_registry


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
