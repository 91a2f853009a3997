"""The ``scale_effect`` section and the summaries of a fit, on fake fits (no compile).

``selfmodel.decisions.effects`` and ``selfmodel.fitting.summaries`` read a fit's draws by name; these tests
give them draws with known answers (``tests/fakes.py``), and draws of the real models'
variables (prior draws shaped as a posterior), so that the plumbing between a model's
names and dims and the results is checked in the fast layer. Whether the real fit gives
the right decision on data with a known slope is the recovery tests' job (``ci``/``slow``).
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from fakes import posterior_tree, prior_as_posterior

from selfmodel import models
from selfmodel.decisions.effects import scale_effect, slope_decisions
from selfmodel.decisions.hypotheses.rule import DecisionRule
from selfmodel.fitting.sampling import Fit, diagnose
from selfmodel.fitting.summaries import diagnostics_section, variance_components
from selfmodel.records.simulate import simulate_scale_cells

RULE = DecisionRule()
CHAINS, DRAWS = 4, 500


def _normal(mean: float | list[float], sd: float, seed: int) -> np.ndarray:
    mean = np.atleast_1d(np.asarray(mean, dtype=float))
    rng = np.random.default_rng(seed)
    out = rng.normal(mean, sd, size=(CHAINS, DRAWS, mean.size))
    return out[..., 0] if mean.size == 1 else out


def _fit(*, divergences: int = 0, with_delta: bool = False) -> Fit:
    """beta ~ N(0.5, 0.1); task slopes a ~ N(0.5, 0.1), b ~ N(0, 0.02); three sigmas."""
    draws = {
        "beta": ((), _normal(0.5, 0.1, 1)),
        "slope_task": (("task",), np.stack([_normal(0.5, 0.1, 2), _normal(0.0, 0.02, 3)], -1)),
        "sigma_family": ((), np.abs(_normal(0.3, 0.05, 4))),
        "sigma_model": ((), np.abs(_normal(0.2, 0.05, 5))),
    }
    if with_delta:
        draws["sigma_delta"] = ((), np.abs(_normal(0.1, 0.02, 6)))
    idata = posterior_tree(draws, {"task": ["a", "b"]}, divergences=divergences)
    return Fit("scale", idata, diagnose(idata), {})


def test_decisions_follow_the_draws_overall_and_per_task() -> None:
    fit = _fit()
    assert fit.diagnostics["passed"]  # independent draws: R-hat ~1, ESS ~2000
    out = slope_decisions(fit, effect_var="beta", per_task_var="slope_task", rule=RULE,
                          n_models=10, tasks=["a", "b", "c"], models_per_task={"b": 6})
    assert out["decision"] == "improves" and out["finding"] is True
    assert out["mean"] == pytest.approx(0.5, abs=0.01)
    assert out["per_task"]["a"]["decision"] == "improves"
    assert out["per_task"]["b"]["decision"] == "practically_null"
    assert out["per_task"]["a"]["n_models"] == 10 and out["per_task"]["b"]["n_models"] == 6
    # a task the fit has no slope for is named, not dropped
    assert out["per_task"]["c"]["decision"] == "not_estimable"
    assert "no model with the scale variable" in out["per_task"]["c"]["reason"]


def test_too_few_models_for_a_task_is_not_estimable() -> None:
    out = slope_decisions(_fit(), effect_var="beta", per_task_var="slope_task", rule=RULE,
                          n_models=10, tasks=["a", "b"], models_per_task={"a": 2})
    assert out["per_task"]["a"]["decision"] == "not_estimable"
    assert out["decision"] == "improves"


def test_a_fit_with_failed_diagnostics_gives_no_finding() -> None:
    fit = _fit(divergences=3)
    assert fit.diagnostics["divergences"] == 3 and not fit.diagnostics["passed"]
    out = slope_decisions(fit, effect_var="beta", per_task_var="slope_task", rule=RULE,
                          n_models=10, tasks=["a", "b"])
    assert out["decision"] == "improves" and out["finding"] is False
    section = diagnostics_section(fit)
    assert section["passed"] is False and section["divergences"] == 3
    assert {c["name"] for c in section["checks"]} == {"r_hat", "ess_bulk", "divergences", "bfmi"}


def test_without_a_fit_every_decision_is_not_estimable_with_the_reason() -> None:
    out = scale_effect(None, scale="params", rule=RULE, n_models=2, tasks=["a", "b"],
                       excluded_models=["closed-1"], reason="only 2 models have a size")
    assert out["decision"] == "not_estimable" and out["finding"] is False
    assert out["fit_model"] == "scale" and out["models_without_scale_variable"] == ["closed-1"]
    assert {t: d["decision"] for t, d in out["per_task"].items()} == {
        "a": "not_estimable", "b": "not_estimable"}
    assert out["per_task"]["a"]["reason"] == "only 2 models have a size"
    assert diagnostics_section(None)["passed"] is False


def test_scale_effect_names_the_fit_the_scale_and_the_rule() -> None:
    cells = pl.DataFrame({"model": [f"m{i}" for i in range(6)],
                          "x": [-1.0, -0.5, 0.0, 0.5, 1.0, 1.5]})
    out = scale_effect(_fit(), scale="params", rule=RULE, n_models=6, tasks=["a", "b"],
                       excluded_models=[], fit_data=cells)
    assert out["fit_model"] == "scale" and out["scale_variable"] == "params"
    assert out["decision"] == "improves" and out["n_models"] == 6
    assert out["rule"] and str(out["rope"]) in out["rule"]


def test_variance_components_are_the_posterior_summaries() -> None:
    fit = _fit()
    out = variance_components(fit)
    post = fit.idata["posterior"]
    d = np.asarray(post["sigma_family"].values).ravel()
    assert out["sigma_family"] == pytest.approx(
        {"mean": d.mean(), "sd": d.std(ddof=1), "median": float(np.median(d))})
    # no sigma_delta: the spread of the task slopes across tasks, per draw
    s = np.asarray(post["slope_task"].values).reshape(-1, 2)
    assert out["sd_task_slopes"]["mean"] == pytest.approx(s.std(axis=1, ddof=1).mean())
    assert "sd_task_slopes" not in variance_components(_fit(with_delta=True))


@pytest.mark.parametrize("name, effect, per_task", [
    ("scale", "beta", "slope_task"),
    ("sdt", "beta_dprime", "dprime_slope_task"),
])
def test_the_models_variables_are_what_the_decisions_read(name: str, effect: str,
                                                          per_task: str) -> None:
    """Prior draws of the real model, shaped as its fit: every task gets a decision."""
    cells, _ = simulate_scale_cells(seed=3, n_families=2, sizes_per_family=2, n_tasks=3,
                                    n_per_cell=40)
    if name == "sdt":
        cells = cells.with_columns(
            (pl.col("n") // 2).alias("n_signal"), (pl.col("n") - pl.col("n") // 2).alias("n_noise"),
            (pl.col("k") // 2).alias("hits"), (pl.col("k") // 4).alias("false_alarms"))
    pm_model = models.get(name).build(cells)
    idata = prior_as_posterior(pm_model, draws=100, chains=2, seed=1)
    fit = Fit(name, idata, diagnose(idata), {})
    tasks = sorted(cells["task"].unique().to_list())
    out = slope_decisions(fit, effect_var=effect, per_task_var=per_task, rule=RULE,
                          n_models=4, tasks=tasks)
    assert sorted(out["per_task"]) == tasks
    assert all(d["decision"] != "not_estimable" for d in out["per_task"].values())
    assert out["decision"] in {"improves", "worsens", "practically_null", "credibly_positive",
                               "credibly_negative", "no_credible_effect"}
