"""Frequentist cross-check of the d' and criterion slopes (analysis/robustness/sdt_crosscheck.py)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy.stats import norm

from selfmodel.robustness.sdt_crosscheck import sdt_crosscheck, sdt_values


def cells(d_slope: float, c_slope: float, *, seed: int, n_models: int = 16) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for m in range(n_models):
        x = rng.uniform(-1.5, 1.5)
        for t in ("a", "b"):
            dp = 1.5 + d_slope * x + rng.normal(0, 0.2)
            c = 0.1 + c_slope * x + rng.normal(0, 0.15)
            s = n = 200
            rows.append({"model": f"m{m}", "family": f"f{m % 4}", "task": t, "x": x, "binary": True,
                         "n_signal": s, "n_noise": n,
                         "hits": int(rng.binomial(s, norm.cdf(dp / 2 - c))),
                         "false_alarms": int(rng.binomial(n, norm.cdf(-dp / 2 - c)))})
    return pl.DataFrame(rows)


def _bayes(dec_d: str, dec_c: str) -> dict:
    return {"sensitivity": {"per_task": {t: {"decision": dec_d} for t in "ab"}},
            "bias": {"per_task": {t: {"decision": dec_c} for t in "ab"}}}


def test_delta_method_variance_matches_simulation():
    rng = np.random.default_rng(0)
    base = cells(0.0, 0.0, seed=1, n_models=1).head(1)
    h, f = 0.8, 0.3
    reps = []
    for _ in range(4000):
        reps.append(base.with_columns(pl.lit(int(rng.binomial(200, h))).alias("hits"),
                                      pl.lit(int(rng.binomial(200, f))).alias("false_alarms")))
    sims = sdt_values(pl.concat(reps))
    one = sdt_values(base.with_columns(pl.lit(160).alias("hits"), pl.lit(60).alias("false_alarms")))
    assert one["v_dprime"][0] == pytest.approx(sims["dprime"].var(), rel=0.1)
    assert one["v_criterion"][0] == pytest.approx(sims["criterion"].var(), rel=0.1)


def test_planted_slopes_are_found_and_agree_with_matching_decisions():
    out = sdt_crosscheck(cells(0.4, -0.3, seed=2), _bayes("improves", "credibly_negative"), seed=1)
    for t in "ab":
        d, c = out["per_task"][t]["dprime"], out["per_task"][t]["criterion"]
        assert d["estimate"] == pytest.approx(0.4, abs=0.15) and d["p_value"] < 0.01
        assert d["wild_bootstrap_p"] < 0.05 and d["agrees"] is True
        assert c["estimate"] < 0 and c["agrees"] is True
    # a decision that claims no direction disagrees with a clear frequentist slope
    out = sdt_crosscheck(cells(0.4, 0.0, seed=2), _bayes("no_credible_effect", "no_credible_effect"), seed=1)
    assert out["per_task"]["a"]["dprime"]["agrees"] is False


def test_null_slopes_are_not_significant():
    out = sdt_crosscheck(cells(0.0, 0.0, seed=3), _bayes("no_credible_effect", "no_credible_effect"), seed=1)
    for t in "ab":
        for q in ("dprime", "criterion"):
            e = out["per_task"][t][q]
            assert e["p_holm"] >= e["p_value"]
            assert e["agrees"] is (e["p_value"] >= 0.05)
    assert sum(out["per_task"][t][q]["p_value"] < 0.05 for t in "ab" for q in ("dprime", "criterion")) <= 1


def test_finding_names_disagreements():
    from selfmodel.decisions.verdict import sdt_crosscheck_finding

    results = {"sdt_effect": {"x": 1}, "sdt_crosscheck": sdt_crosscheck(
        cells(0.4, 0.0, seed=2), _bayes("improves", "no_credible_effect"), seed=1)}
    text = sdt_crosscheck_finding(results)
    assert "agrees for" in text and "d' in a" in text
    results["sdt_crosscheck"]["per_task"]["a"]["dprime"]["agrees"] = False
    assert "differs for d' in a" in sdt_crosscheck_finding(results)
