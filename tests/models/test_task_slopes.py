"""Task slopes with their own priors: a zero-slope task beside a positive one is not declared to improve.

Fast tests check the model structure (no spread parameter shared between the tasks; ``beta``
is the average of the task slopes). The slow test fits the scale model to a modest number of
simulated data sets with two tasks whose true slopes differ (0 and +0.3 logits per 10x;
``selfmodel.records.simulate.simulate_scale_cells``) and checks that the zero task is not declared
``improves`` more often than the declared rate allows and that neither task is pulled towards
the other. The larger measurement (40 data sets, pooled vs independent) is
``validation/task_slopes.py`` -> ``validation/results/task_slopes.json``.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from selfmodel.decisions.hypotheses import DecisionRule, decide
from selfmodel.fitting.sampling import SamplerSettings, fit
from selfmodel.models import scale, sdt
from selfmodel.records.simulate import simulate_scale_cells


def _cells():
    return simulate_scale_cells(seed=1, n_tasks=2, task_slopes=(0.0, 0.3), n_per_cell=100)


def test_independent_task_slopes_share_no_spread() -> None:
    cells, truth = _cells()
    assert truth["task_slopes"] == [0.0, 0.3]
    m = scale.build(cells, slope_basis="plain")
    names = {v.name for v in m.free_RVs}
    assert "slope_task" in names and "sigma_delta" not in names and "beta" not in names
    assert "beta" in {v.name for v in m.deterministics}
    # the default (decorrelated) basis: the same task slopes, as deterministics, no spread
    m = scale.build(cells)
    assert "sigma_delta" not in m.named_vars
    assert {"slope_task", "beta"} <= {v.name for v in m.deterministics}
    pooled = scale.build(cells, task_slopes="pooled")
    assert {"beta", "sigma_delta"} <= {v.name for v in pooled.free_RVs}
    with pytest.raises(ValueError, match="task_slopes"):
        scale.build(cells, task_slopes="shared")


def test_sdt_task_slopes_have_their_own_priors_and_wide_sds() -> None:
    for side in ("dprime", "criterion"):
        assert f"{side}_slope_task" in sdt.DEFAULT_PRIORS
        assert f"sigma_{side}_slope" not in sdt.DEFAULT_PRIORS
    # every SD prior's mean (sigma sqrt(2/pi)) is above the posteriors measured on SEB (<= 0.4)
    sds = {k: v for k, v in sdt.DEFAULT_PRIORS.items() if k.startswith("sigma_")}
    assert sds and all(v[1]["sigma"] * np.sqrt(2 / np.pi) > 0.4 for v in sds.values())


@pytest.mark.slow
def test_zero_slope_task_is_not_declared_to_improve() -> None:
    rule = DecisionRule()
    settings = replace(SamplerSettings(), draws=400, tune=400, chains=4, target_accept=0.95)
    decisions, means = {"task0": [], "task1": []}, {"task0": [], "task1": []}
    n_sets = 6
    for i in range(n_sets):
        cells, _ = simulate_scale_cells(seed=500 + i, n_tasks=2, task_slopes=(0.0, 0.3), n_per_cell=100)
        f = fit("scale", cells, seed=500 + i, settings=settings, reuse_compiled=True)
        st = f.idata["posterior"]["slope_task"]
        for t in decisions:
            draws = st.sel(task=t).values
            decisions[t].append(decide(draws, rule, n_models=16)["decision"])
            means[t].append(float(draws.mean()))
    # declared rate 5%: with 6 data sets, more than one 'improves' would be P < 0.033
    assert sum(d == "improves" for d in decisions["task0"]) <= 1, decisions
    assert sum(d in ("improves", "credibly_positive") for d in decisions["task0"]) <= 1, decisions
    # the positive task is found, and the tasks are not pulled towards each other
    assert sum(d in ("improves", "credibly_positive") for d in decisions["task1"]) >= n_sets - 2
    assert abs(np.mean(means["task0"]) - 0.0) < 0.1
    assert abs(np.mean(means["task1"]) - 0.3) < 0.1
