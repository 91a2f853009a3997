"""Prior sensitivity of a companion model's effects (analysis/robustness/effect_sensitivity.py), slow."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest


@pytest.mark.slow
def test_sdt_prior_refits_report_both_effects_per_task(tmp_path):
    from selfmodel.decisions.hypotheses import DecisionRule
    from selfmodel.fitting.fitter import Fitter
    from selfmodel.fitting.sampling import SamplerSettings, fit
    from selfmodel.robustness.effect_sensitivity import effect_prior_sensitivity

    sys.path.insert(0, str(Path(__file__).parents[1] / "models"))
    from test_recovery import simulate_sdt_cells

    cells, _ = simulate_sdt_cells(seed=3, n_tasks=2)
    settings = SamplerSettings(draws=300, tune=300, chains=2, cores=2, target_accept=0.95)
    main = fit("sdt", cells, seed=1, settings=settings)
    out = effect_prior_sensitivity("sdt", main, cells, rule=DecisionRule(),
                                   fitter=Fitter(1, settings, tmp_path))
    assert set(out["holds"]) == {"sensitivity", "bias"}
    assert [v["factor"] for v in out["variants"]] == [0.5, 2.0]
    tasks = set(cells["task"].unique().to_list())
    for key in ("sensitivity", "bias"):
        for v in out["variants"]:
            assert set(v[key]["per_task"]) == tasks
        same = all(v[key]["decision"] == out["main"][key]["decision"]
                   and all(v[key]["per_task"][t]["decision"] == out["main"][key]["per_task"][t]["decision"]
                           for t in tasks)
                   for v in out["variants"])
        assert out["holds"][key] is same
    # the planted d' slope (+0.4 per 10x) is positive under every prior width
    assert all(v["sensitivity"]["mean"] > 0 for v in out["variants"])
