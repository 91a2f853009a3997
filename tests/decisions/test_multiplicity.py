"""Bayes factors over prior widths and the multiplicity block (analysis/decisions/multiplicity.py)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
import xarray as xr

from selfmodel.common import arviz_ops
from selfmodel.decisions.multiplicity import bayes_factor_range, multiplicity


def _exact_bf10(y: float, se: float, s: float) -> float:
    """Conjugate normal: data y ~ N(theta, se^2), prior N(0, s^2); BF10 = m1(y) / m0(y)."""
    m1 = math.exp(-0.5 * y**2 / (se**2 + s**2)) / math.sqrt(2 * math.pi * (se**2 + s**2))
    m0 = math.exp(-0.5 * y**2 / se**2) / math.sqrt(2 * math.pi * se**2)
    return m1 / m0


def test_bayes_factor_range_matches_the_conjugate_answer_for_every_width():
    y, se, s0 = 0.25, 0.2, 1.0
    post_var = 1 / (1 / se**2 + 1 / s0**2)
    post_mean = post_var * y / se**2
    draws = np.random.default_rng(0).normal(post_mean, math.sqrt(post_var), 40000)
    out = bayes_factor_range(draws, 1 / math.sqrt(2 * math.pi * s0**2))
    assert out["fitted_prior_sd"] == pytest.approx(1.0)
    for row in out["widths"]:
        exact = _exact_bf10(y, se, row["prior_sd"])
        assert row["bf_10"] == pytest.approx(exact, rel=0.05)
        lo, hi = row["interval"]
        assert lo <= row["bf_10"] <= hi
    # the Bayes factor follows the prior: here it grows as the prior narrows towards the data
    bfs = [r["bf_10"] for r in out["widths"]]
    assert bfs[0] != pytest.approx(bfs[-1], rel=0.2)
    assert out["min"] == min(bfs) and out["max"] == max(bfs)


def test_few_effective_draws_widen_the_interval():
    draws = np.random.default_rng(1).normal(0.4, 0.15, 20000)
    wide = bayes_factor_range(draws, 0.398942, n_eff=50)["widths"][1]["interval"]
    narrow = bayes_factor_range(draws, 0.398942, n_eff=20000)["widths"][1]["interval"]
    assert (wide[1] - wide[0]) > 3 * (narrow[1] - narrow[0])


def test_joint_probability_of_all_task_signs():
    rng = np.random.default_rng(2)
    a = rng.normal(1.0, 0.5, (2, 500))
    b = rng.normal(0.0, 1.0, (2, 500))
    ds = xr.Dataset({"slope_task": (("chain", "draw", "task"), np.stack([a, b], axis=-1))},
                    coords={"task": ["x", "y"]})
    idata = arviz_ops.from_datasets(posterior=ds)
    h = SimpleNamespace(name="by_task", model="scale", parameter="slope_task[*]", direction="increase")
    rows = [{"hypothesis": "by_task", "label": "x", "supported": True, "finding": True},
            {"hypothesis": "by_task", "label": "y", "supported": False, "finding": True}]
    out = multiplicity([h], rows, {"scale": SimpleNamespace(idata=idata)},
                       {"holm": {"family": "f", "glm_cluster": {"x": 0.01, "y": 0.8}}})
    j = out["joint_task_signs"][0]
    expect = float(((a > 0) & (b > 0)).mean())
    assert j["prob_all_predicted_sign"] == pytest.approx(expect)
    assert out["n_decisions"] == 2 and out["n_supported"] == 1
    assert out["holm_adjusted_p"] == {"glm_cluster": {"x": 0.01, "y": 0.8}}
