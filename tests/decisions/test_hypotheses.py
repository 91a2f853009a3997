"""Declared hypotheses (selfmodel.decisions.hypotheses): the TOML file, evaluation, Savage-Dickey.

Reference numbers and their sources:

* Savage-Dickey against the conjugate normal case. Prior :math:`\\theta \\sim N(0, \\tau^2)`,
  one observation :math:`\\bar y \\sim N(\\theta, s^2)`: the Bayes factor of
  :math:`H_1` against :math:`H_0: \\theta = 0` is the ratio of marginal likelihoods
  :math:`N(\\bar y; 0, \\tau^2 + s^2) / N(\\bar y; 0, s^2)`, and the posterior is
  :math:`N(\\mu_1, \\sigma_1^2)` with :math:`\\sigma_1^2 = (1/\\tau^2 + 1/s^2)^{-1}`,
  :math:`\\mu_1 = \\sigma_1^2 \\bar y / s^2` (Gelman et al. 2013, *Bayesian Data Analysis*,
  3rd ed., sec. 2.5). Dickey (1971), *Ann. Math. Statist.* 42(1), shows the density ratio at
  0 equals that Bayes factor; Wagenmakers et al. (2010), *Cognitive Psychology* 60(3), use
  this case as their worked example.
* Prior density at 0 of a task slope: Monte Carlo from the scale model's own prior
  (``pm.sample_prior_predictive`` on ``selfmodel.models.scale.build``), against the quadrature.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from scipy.stats import gaussian_kde, norm

from selfmodel.common import arviz_ops
from selfmodel.decisions.hypotheses import (
    BF_CAP,
    DEFAULT_HYPOTHESES_FILE,
    DecisionRule,
    Evidence,
    Hypothesis,
    evaluate,
    evaluate_all,
    load_hypotheses,
    savage_dickey,
    slope_prior_density,
)
from selfmodel.models.scale import DEFAULT_PRIORS as SCALE_PRIORS
from selfmodel.records.contract import InputError

GOOD = """
[defaults]
rope = 0.05
hdi_prob = 0.9

[[hypothesis]]
name = "overall"
model = "scale"
parameter = "beta"
direction = "increase"

[[hypothesis]]
name = "refusal"
model = "scale"
parameter = "slope_task[refusal]"
direction = "decrease"
rope = 0.2
"""


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "hyp.toml"
    p.write_text(text, encoding="utf-8")
    return p


def _error(path: Path) -> str:
    with pytest.raises(InputError) as info:
        load_hypotheses(path)
    msg = str(info.value)
    assert "\n" not in msg
    assert msg.startswith(str(path))
    return msg


# --------------------------------------------------------------------------- the file


def test_default_file_declares_accuracy_and_dprime_overall_and_per_task() -> None:
    hyps = load_hypotheses()
    assert DEFAULT_HYPOTHESES_FILE.name == "hypotheses.toml"
    # shipped as package data, one file (no copy or link at the repository's root)
    assert DEFAULT_HYPOTHESES_FILE.parent.name == "data"
    assert not DEFAULT_HYPOTHESES_FILE.is_symlink()
    assert not (Path(__file__).resolve().parents[2] / "hypotheses.toml").exists()
    got = {(h.model, h.parameter, h.direction) for h in hyps}
    assert got == {
        ("scale", "beta", "increase"),
        ("scale", "slope_task[*]", "increase"),
        ("sdt", "beta_dprime", "increase"),
        ("sdt", "dprime_slope_task[*]", "increase"),
    }
    for h in hyps:
        assert h.rule == DecisionRule(), h  # the defaults restate the rule the pipeline uses
        assert h.description


def test_defaults_apply_and_entries_override(tmp_path: Path) -> None:
    overall, refusal = load_hypotheses(_write(tmp_path, GOOD))
    assert (overall.rope, overall.hdi_prob, overall.min_models) == (0.05, 0.9, 3)
    assert (refusal.rope, refusal.hdi_prob) == (0.2, 0.9)
    assert refusal.base == "slope_task" and refusal.label == "refusal"
    assert refusal.predicted == "worsens" and overall.predicted == "improves"


@pytest.mark.parametrize(
    ("old", "new", "expect"),
    [
        ('direction = "increase"', 'dirction = "increase"', "Did you mean 'direction'?"),
        ('model = "scale"\nparameter = "beta"', 'model = "scael"\nparameter = "beta"', "Did you mean 'scale'?"),
        ('parameter = "beta"', 'parameter = "bta"', "Did you mean 'beta'?"),
        ('direction = "increase"', 'direction = "increse"', "Did you mean 'increase'?"),
        ("rope = 0.05", "rop = 0.05", "Did you mean 'rope'?"),
        ("[defaults]", "[default]", "Did you mean 'defaults'?"),
        ("hdi_prob = 0.9", "hdi_prob = 1.5", "between 0 and 1"),
        ("hdi_prob = 0.9", "prob_threshold = 0.95", "one level"),
        ('name = "refusal"', 'name = "overall"', "declared twice"),
        ('parameter = "beta"', 'parameter = "beta[["', "NAME[label]"),
    ],
)
def test_mistakes_are_one_line_with_a_hint(tmp_path: Path, old: str, new: str, expect: str) -> None:
    assert old in GOOD
    msg = _error(_write(tmp_path, GOOD.replace(old, new, 1)))
    assert expect in msg, msg


def test_error_names_the_line_and_the_entry(tmp_path: Path) -> None:
    text = GOOD.replace('direction = "decrease"', 'dirction = "decrease"')
    msg = _error(_write(tmp_path, text))
    line = next(i for i, s in enumerate(text.splitlines(), start=1) if s.startswith("dirction"))
    assert f"line {line}" in msg
    assert "[[hypothesis]] 2 ('refusal')" in msg


def test_missing_empty_and_broken_files(tmp_path: Path) -> None:
    assert "no such hypotheses file" in _error(tmp_path / "absent.toml")
    assert "none declared" in _error(_write(tmp_path, "[defaults]\nrope = 0.1\n"))
    assert "not valid TOML" in _error(_write(tmp_path, "[[hypothesis]\nname = 'x'"))
    assert "missing" in _error(_write(tmp_path, '[[hypothesis]]\nname = "x"\nmodel = "scale"\n'))


# --------------------------------------------------------------------------- Savage-Dickey


def _conjugate(ybar: float, s: float, tau: float) -> tuple[float, float, float]:
    """Posterior mean and sd and the exact BF10 of the conjugate normal case (see module doc)."""
    v1 = 1.0 / (1.0 / tau**2 + 1.0 / s**2)
    m1 = v1 * ybar / s**2
    bf10 = norm.pdf(ybar, 0.0, np.sqrt(tau**2 + s**2)) / norm.pdf(ybar, 0.0, s)
    return m1, float(np.sqrt(v1)), float(bf10)


@pytest.mark.parametrize(("ybar", "s", "tau"), [(0.3, 0.2, 1.0), (0.0, 0.05, 1.0), (-0.3, 0.15, 0.5)])
def test_savage_dickey_matches_the_conjugate_normal_bayes_factor(ybar: float, s: float, tau: float) -> None:
    m1, sd1, exact = _conjugate(ybar, s, tau)
    draws = np.random.default_rng(3).normal(m1, sd1, 40_000)
    res = savage_dickey(draws, prior_sd=tau)
    assert res["method"] == "kde" and res["reliable"]
    # 0 lies within 2 posterior sd: hundreds of draws near 0, KDE error a few percent
    assert res["draws_near_0"] > 500
    assert res["bf_10"] == pytest.approx(exact, rel=0.05)
    assert res["bf_01"] == pytest.approx(1 / exact, rel=0.05)
    assert res["prior_density_0"] == pytest.approx(norm.pdf(0, 0, tau))


def test_savage_dickey_flags_the_far_tail_and_bounds_the_factor() -> None:
    m1, sd1, exact = _conjugate(1.5, 0.2, 1.0)  # 0 is ~7.5 posterior sd away
    assert exact > 1e9
    res = savage_dickey(np.random.default_rng(4).normal(m1, sd1, 8000), prior_sd=1.0)
    assert res["method"] == "normal_tail" and not res["reliable"]
    assert res["bounded"] and res["bf_10"] == BF_CAP and res["display"] == ">1000"
    assert res["draws_near_0"] < 50


def test_savage_dickey_needs_a_prior_and_draws() -> None:
    with pytest.raises(ValueError, match="prior_sd"):
        savage_dickey(np.zeros(10) + np.arange(10))
    with pytest.raises(ValueError, match="two distinct"):
        savage_dickey(np.ones(50), prior_sd=1.0)


def test_task_slope_prior_density_matches_the_models_own_prior() -> None:
    """Independent task slopes and their average: closed form against Monte Carlo from models/scale.py."""
    import polars as pl
    import pymc as pm

    from selfmodel.models import scale

    cells = pl.DataFrame({
        "model": [f"m{i}" for i in range(4) for _ in range(3)],
        "family": [f"f{i % 2}" for i in range(4) for _ in range(3)],
        "task": ["a", "b", "c"] * 4,
        "x": [x for x in (-1.0, -0.3, 0.4, 0.9) for _ in range(3)],
        "n": [50] * 12,
        "k": [25] * 12,
    })
    prior = pm.sample_prior_predictive(draws=40_000, model=scale.build(cells), random_seed=5,
                                       var_names=["slope_task", "beta"]).prior
    mc = gaussian_kde(prior["slope_task"].sel(task="b").values.ravel())(0.0)[0]
    dens, note = slope_prior_density("scale", "slope_task", SCALE_PRIORS, n_tasks=3)
    assert dens == pytest.approx(mc, rel=0.03)
    assert dens == pytest.approx(norm.pdf(0, 0, 1.0))  # each task's own prior
    # beta is the average of the three independent task slopes: sd 1 / sqrt(3)
    mc_beta = gaussian_kde(prior["beta"].values.ravel())(0.0)[0]
    dens_beta, note = slope_prior_density("scale", "beta", SCALE_PRIORS, n_tasks=3)
    assert "average over 3 task(s)" in note
    assert dens_beta == pytest.approx(mc_beta, rel=0.03)
    assert dens_beta == pytest.approx(norm.pdf(0, 0, 1 / np.sqrt(3)))


# --------------------------------------------------------------------------- evaluate


def _idata(beta: np.ndarray, slopes: dict[str, np.ndarray] | None = None, priors: dict | None = None):
    data = {"beta": (("chain", "draw"), beta.reshape(2, -1))}
    coords = {}
    if slopes:
        tasks = list(slopes)
        arr = np.stack([slopes[t].reshape(2, -1) for t in tasks], axis=-1)
        data["slope_task"] = (("chain", "draw", "task"), arr)
        coords["task"] = tasks
    idata = arviz_ops.from_datasets(posterior=xr.Dataset(data, coords=coords))
    if priors is not None:
        idata.attrs["selfmodel_provenance"] = json.dumps({"priors": priors})
    return idata


def test_evaluate_reads_the_direction() -> None:
    rng = np.random.default_rng(6)
    idata = _idata(rng.normal(-0.5, 0.1, 4000))
    dec = evaluate(Hypothesis("d", direction="decrease"), idata, n_models=10)
    inc = evaluate(Hypothesis("i", direction="increase"), idata, n_models=10)
    assert dec["decision"] == inc["decision"] == "worsens"
    assert dec["supported"] is True and inc["supported"] is False
    assert dec["prob_direction"] == pytest.approx(1.0) and inc["prob_direction"] == pytest.approx(0.0)
    assert dec["prob_direction"] == pytest.approx(1 - dec["prob_positive"])


def test_evaluate_a_null_posterior_is_not_supported_and_favours_h0() -> None:
    rng = np.random.default_rng(7)
    res = evaluate(Hypothesis("n"), _idata(rng.normal(0.0, 0.03, 4000)), n_models=10)
    assert res["decision"] == "practically_null" and res["supported"] is False
    # posterior density at 0 ~ 1/(0.03 sqrt(2 pi)) = 13.3 vs prior N(0,1) 0.399: BF10 ~ 0.03
    assert res["bayes_factor_10"] == pytest.approx(norm.pdf(0, 0, 1) / norm.pdf(0, 0, 0.03), rel=0.05)


def test_evaluate_uses_the_fits_priors_for_the_bayes_factor() -> None:
    draws = np.random.default_rng(8).normal(0.2, 0.1, 4000)
    default = evaluate(Hypothesis("h"), _idata(draws), n_models=10)
    wide = {**{k: list(v) for k, v in SCALE_PRIORS.items()},
            "slope_task": ["Normal", {"mu": 0.0, "sigma": 2.0}]}
    widened = evaluate(Hypothesis("h"), _idata(draws, priors=wide), n_models=10)
    # a prior twice as wide halves the prior density at 0, so BF10 halves
    assert widened["bayes_factor_10"] == pytest.approx(default["bayes_factor_10"] / 2, rel=1e-6)


def test_evaluate_labels_wildcards_and_failures() -> None:
    rng = np.random.default_rng(9)
    slopes = {"refusal": rng.normal(0.5, 0.1, 4000), "difficulty": rng.normal(0.0, 0.3, 4000)}
    idata = _idata(rng.normal(0.3, 0.1, 4000), slopes)
    one = evaluate(Hypothesis("r", parameter="slope_task[refusal]"), idata, n_models=10)
    assert one["decision"] == "improves" and one["label"] == "refusal"
    star = evaluate(Hypothesis("all", parameter="slope_task[*]"), idata, n_models=10,
                    models_per_label={"difficulty": 2})
    assert set(star["per_label"]) == {"refusal", "difficulty"}
    assert star["per_label"]["difficulty"]["decision"] == "not_estimable"  # 2 < min_models
    assert star["per_label"]["difficulty"]["supported"] is None
    missing = evaluate(Hypothesis("m", parameter="slope_task[word_association]"), idata, n_models=10)
    assert missing["decision"] == "not_estimable" and "word_association" in missing["reason"]
    bare = evaluate(Hypothesis("b", parameter="slope_task"), idata, n_models=10)
    assert bare["decision"] == "not_estimable" and "[*]" in bare["reason"]
    absent = evaluate(Hypothesis("s", model="sdt", parameter="beta_dprime"), idata, n_models=10)
    assert absent["decision"] == "not_estimable"


def test_evaluate_all_expands_rows_and_gates_findings() -> None:
    rng = np.random.default_rng(10)
    slopes = {"a": rng.normal(0.5, 0.1, 4000), "b": rng.normal(0.4, 0.1, 4000)}
    idata = _idata(rng.normal(0.45, 0.07, 4000), slopes)
    hyps = load_hypotheses()
    rows = evaluate_all(hyps, {"scale": Evidence(idata, 12, diagnostics_passed=False),
                               "sdt": "no binary cells"})
    names = [r["name"] for r in rows]
    assert names == ["accuracy_overall", "accuracy_by_task[a]", "accuracy_by_task[b]",
                     "dprime_overall", "dprime_by_task"]
    by = {r["name"]: r for r in rows}
    assert by["accuracy_overall"]["decision"] == "improves"
    assert by["accuracy_overall"]["finding"] is False  # diagnostics failed
    assert by["dprime_overall"]["decision"] == "not_estimable"
    assert by["dprime_overall"]["reason"] == "no binary cells"
    assert all(r["hypothesis"] in {h.name for h in hyps} for r in rows)
    ok = evaluate_all(hyps[:1], {"scale": Evidence(idata, 12)})
    assert ok[0]["finding"] is True


@pytest.mark.slow
def test_scale_term_loo_compares_with_the_model_without_the_scale_term(tmp_path: Path) -> None:
    """LOO of ``scale`` against ``pooled(random_effects=True)`` on the same cells.

    Data: ``simulate_scale_cells`` with a strong true slope (0.8 logits per 10x), 9 models x
    2 tasks. Leaving a cell out, the model's other cell still informs its intercept, so the
    scale term's advantage is modest; it must at least not be credibly worse.
    """
    from dataclasses import replace

    from selfmodel.decisions.hypotheses import scale_term_loo
    from selfmodel.fitting.fitter import Fitter
    from selfmodel.fitting.sampling import SamplerSettings, fit
    from selfmodel.records.simulate import simulate_scale_cells
    from selfmodel.robustness.stage import fit_without_effect

    cells, _ = simulate_scale_cells(seed=21, beta=0.8, n_families=3, sizes_per_family=3, n_tasks=2)
    settings = replace(SamplerSettings(), draws=400, tune=400, chains=2, target_accept=0.95)
    main = fit("scale", cells, seed=1, settings=settings, cache_dir=tmp_path)
    without, label = fit_without_effect(main, cells, fitter=Fitter(1, settings, tmp_path))
    res = scale_term_loo(main, without, cells, without_label=label, cache_dir=tmp_path, max_draws=400)
    assert res["without_scale_model"] == "pooled(random_effects=True)"
    assert len(list(tmp_path.glob("pooled-*.nc"))) == 1
    assert res["elpd_diff"] == pytest.approx(res["with_scale"]["elpd_loo"] - res["without_scale"]["elpd_loo"])
    assert res["dse"] > 0
    assert sum(res["weights"].values()) == pytest.approx(1.0)
    assert {r["model"] for r in res["table"]} == {"with_scale", "without_scale"}
    assert res["with_scale"]["integrated"] == "z_cell" == res["without_scale"]["integrated"]
    assert res["elpd_diff"] > -2 * res["dse"]
