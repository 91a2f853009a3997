"""Sensitivity of the verdict (selfmodel.robustness.sensitivity): prior width and the scale variable.

The fast tests replace the sampler by a stub whose posterior depends on what was asked
(the prior width, the scale variable), so the bookkeeping is checked exactly: which refits
are made, with which priors and cells, and whether a changed decision is reported. The slow
test samples the real scale model on a small simulated data set
(``selfmodel.records.simulate.simulate_scale_cells``, true slope 0.6) and checks that every refit
has its own cache entry and is reused on a second call.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
import xarray as xr

from selfmodel.analyses.model_inputs import Tables
from selfmodel.common import arviz_ops
from selfmodel.fitting import fitter as fitter_module
from selfmodel.fitting.fitter import Fitter
from selfmodel.fitting.sampling import Fit, SamplerSettings
from selfmodel.models.scale import DEFAULT_PRIORS
from selfmodel.records.cells import build_cells, derived_models
from selfmodel.records.contract import SCALE_EXCLUSION_REASON
from selfmodel.records.ingest import ingest
from selfmodel.records.registry import load_registry
from selfmodel.records.simulate import simulate_scale_cells
from selfmodel.robustness import sensitivity

DATA_RAW = Path(__file__).resolve().parents[2] / "data_raw"


class StubFit:
    """Records the calls; the slope's posterior is ``mean_of(priors, data)`` +- 0.05."""

    def __init__(self, mean_of):
        self.mean_of = mean_of
        self.calls: list[dict[str, Any]] = []

    def __call__(self, model_name, data, *, seed, settings=None, priors=None, options=None, cache_dir=None,
                 reuse_compiled=False, then=None):
        self.calls.append({"model": model_name, "priors": priors, "data": data, "seed": seed})
        rng = np.random.default_rng(len(self.calls))
        mean = self.mean_of(priors, data)
        tasks = sorted(data["task"].unique().to_list())
        beta = rng.normal(mean, 0.05, (2, 1000))
        slopes = np.stack([beta + rng.normal(0, 0.01, (2, 1000)) for _ in tasks], axis=-1)
        post = xr.Dataset({"beta": (("chain", "draw"), beta),
                           "slope_task": (("chain", "draw", "task"), slopes)}, coords={"task": tasks})
        key = hashlib.sha256(json.dumps([model_name, priors], sort_keys=True, default=str).encode()).hexdigest()
        return Fit(model_name, arviz_ops.from_datasets(posterior=post), {"passed": True, "max_rhat": 1.0,
                                                                       "divergences": 0},
                   {"cache_key": key})


def _beta_sigma(priors) -> float:
    return (priors or DEFAULT_PRIORS)["slope_task"][1]["sigma"]


def test_prior_sensitivity_reports_a_decision_that_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    # a narrower prior pulls the slope to 0.05 (no credible effect); otherwise 0.5 (improves)
    stub = StubFit(lambda priors, data: 0.05 if _beta_sigma(priors) < 1.0 else 0.5)
    # every fit, the main one's and the refits of analysis/fitting/reweight.py, is the Fitter's;
    # the stub's posterior has no draws of the group scales, so no variant can be reweighted:
    # each is refitted (the reweighting's fallback), which is what these tests count
    monkeypatch.setattr(fitter_module, "fit", stub)
    cells, _ = simulate_scale_cells(seed=1)
    res = sensitivity.prior_sensitivity(cells, fitter=Fitter(3), factors=(0.5, 2.0))
    assert len(stub.calls) == 3  # main (no fit given) + two refits
    assert stub.calls[0]["priors"] is None
    assert _beta_sigma(stub.calls[1]["priors"]) == 0.5 and _beta_sigma(stub.calls[2]["priors"]) == 2.0
    assert stub.calls[2]["priors"]["sigma_cell"][1]["sigma"] == 2 * DEFAULT_PRIORS["sigma_cell"][1]["sigma"]
    assert {c["seed"] for c in stub.calls} == {3}
    assert res["main"]["decision"] == "improves"
    assert [v["decision"] for v in res["variants"]] == ["no_credible_effect", "improves"]
    assert [v["matches_main"] for v in res["variants"]] == [False, True]
    assert res["verdict_holds"] is False and res["changed"] == ["priors x0.5"]
    assert res["per_task_verdicts_hold"] is False
    assert res["variants"][0]["priors"]["slope_task"] == ["Normal", {"mu": 0.0, "sigma": 0.5}]
    assert {v["compared_on"] for v in res["variants"]} == {"decision"}
    assert len({v["cache_key"] for v in res["variants"]} | {res["main"]["cache_key"]}) == 3
    assert {v["reweighting"]["method"] for v in res["variants"]} == {"refit"}
    assert "no draws of" in res["variants"][0]["reweighting"]["reason"]


def test_prior_sensitivity_reuses_the_main_fit(monkeypatch: pytest.MonkeyPatch) -> None:
    stub = StubFit(lambda priors, data: 0.5)
    monkeypatch.setattr(fitter_module, "fit", stub)
    cells, _ = simulate_scale_cells(seed=1)
    main = stub("scale", cells, seed=3)
    res = sensitivity.prior_sensitivity(cells, fitter=Fitter(3), main=main)
    assert len(stub.calls) == 3  # the main call above + two refits, no refit of the main
    assert res["verdict_holds"] is True and res["changed"] == []


def test_scale_variable_sensitivity_compares_decisions_and_lists_dropouts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    records = ingest([DATA_RAW / "records.csv"], registry=DATA_RAW / "registry.csv").records
    registry = load_registry(DATA_RAW / "registry.csv")
    # capability known for two models only: that fit is not estimable (min_models = 3)
    keep = registry["model"].to_list()[:2]
    registry = registry.with_columns(
        pl.when(pl.col("model").is_in(keep)).then(pl.col("capability")).otherwise(None).alias("capability")
    )

    def mean_of(priors, data):  # fitted on active parameters: slope 0 (a changed verdict)
        raw = data.filter(pl.col("model") == "dynamo-8x7b")["scale_raw"]
        return 0.0 if raw[0] == 13.0 else 0.5

    stub = StubFit(mean_of)
    monkeypatch.setattr(fitter_module, "fit", stub)
    res = sensitivity.scale_variable_sensitivity(records, registry, fitter=Fitter(1), main_scale="params")
    by = {v["variable"]: v for v in res["variants"]}
    assert list(by) == ["params", "active_params", "capability"]
    assert by["capability"]["decision"] == "not_estimable" and by["capability"]["matches_main"] is None
    assert "capability" in by["capability"]["reason"]
    assert by["params"]["decision"] == "improves" and by["params"]["matches_main"] is True
    # expected from the registry: unsized models lack the variable; derived checkpoints have a
    # size but are left off the scale axis, listed apart with the reason
    unsized = registry.filter(pl.col("params_b").is_null())["model"].to_list()
    derived = derived_models(registry)
    assert unsized and derived
    assert set(by["params"]["models_without_variable"]) == set(unsized)
    for var in by:
        assert by[var]["excluded_derived_checkpoints"] == {
            "models": derived, "reason": SCALE_EXCLUSION_REASON
        }
    assert by["params"]["units"] == "logits per 10x total parameters"
    assert len(stub.calls) == 2  # capability is never fitted
    assert by["active_params"]["decision"] in {"practically_null", "no_credible_effect"}
    assert by["active_params"]["matches_main"] is False
    assert res["verdict_holds"] is False and res["changed"] == ["active_params"]
    # other units: only the asserted direction is compared, and each ROPE is in its own units
    assert res["compared_on"] == "direction" and by["active_params"]["compared_on"] == "direction"
    assert by["params"]["rope_meaning"]["basis"] == "per 10x total parameters"


def test_scale_variable_sensitivity_matches_on_direction_not_size(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Same sign, other units: 'improves' on params and 'credibly_positive' on active params match."""
    records = ingest([DATA_RAW / "records.csv"], registry=DATA_RAW / "registry.csv").records
    registry = load_registry(DATA_RAW / "registry.csv")

    def mean_of(priors, data):
        raw = data.filter(pl.col("model") == "dynamo-8x7b")["scale_raw"]
        return 0.15 if raw[0] == 13.0 else 0.5  # 0.15 +- 0.05: sign credible, size not

    monkeypatch.setattr(fitter_module, "fit", StubFit(mean_of))
    res = sensitivity.scale_variable_sensitivity(
        records, registry, fitter=Fitter(1), main_scale="params", variables=("params", "active_params")
    )
    by = {v["variable"]: v for v in res["variants"]}
    assert by["params"]["decision"] == "improves"
    assert by["active_params"]["decision"] == "credibly_positive"
    assert by["active_params"]["matches_main"] is True and res["verdict_holds"] is True


@pytest.mark.slow
def test_prior_sensitivity_real_fits_have_their_own_cache_entries(tmp_path: Path) -> None:
    cells, truth = simulate_scale_cells(seed=11, n_families=3, sizes_per_family=3, n_tasks=2, beta=0.6)
    settings = replace(SamplerSettings(), draws=300, tune=300, chains=2, target_accept=0.95)
    res = sensitivity.prior_sensitivity(cells, fitter=Fitter(5, settings, tmp_path))
    files = sorted(p.name for p in tmp_path.glob("scale-*.nc"))
    # a variant is the main fit reweighted (no file of its own) or, when Pareto k is too
    # high, a refit with its own cache entry
    methods = [v["reweighting"]["method"] for v in res["variants"]]
    assert set(methods) <= {"psis", "refit"}, methods
    assert len(files) == 1 + methods.count("refit"), (files, methods)
    for entry in (res["main"], *res["variants"]):
        assert entry["decision"] in {"improves", "credibly_positive", "no_credible_effect"}
        assert entry["hdi_low"] < truth["beta"] + 0.5 and entry["hdi_high"] > truth["beta"] - 0.5
    # the half-width prior on everything shrinks the slope's posterior sd, the wider one not less
    sd = {e["factor"]: e["sd"] for e in res["variants"]} | {1.0: res["main"]["sd"]}
    assert sd[0.5] <= sd[2.0] * 1.1
    stamps = {p.name: p.stat().st_mtime_ns for p in tmp_path.glob("scale-*.nc")}
    again = sensitivity.prior_sensitivity(cells, fitter=Fitter(5, settings, tmp_path))
    # reused, not refitted: no fit file rewritten, and the same summary (results.json stays
    # byte-identical on an unchanged rerun)
    assert {p.name: p.stat().st_mtime_ns for p in tmp_path.glob("scale-*.nc")} == stamps
    assert again == res


class SdtStubFit:
    """An SDT fit whose d' slope is ``dprime_of(data)`` in every task and whose criterion slope is 0."""

    def __init__(self, dprime_of):
        self.dprime_of = dprime_of
        self.calls: list[pl.DataFrame] = []

    def __call__(self, model_name, data, *, seed, settings=None, priors=None, options=None, cache_dir=None,
                 reuse_compiled=False, then=None):
        self.calls.append(data)
        rng = np.random.default_rng(len(self.calls))
        tasks = sorted(data["task"].unique().to_list())
        d = np.stack([rng.normal(self.dprime_of(data, t), 0.03, (2, 1000)) for t in tasks], axis=-1)
        c = rng.normal(0.0, 0.03, (2, 1000, len(tasks)))
        post = xr.Dataset({"beta_dprime": (("chain", "draw"), d.mean(-1)),
                           "dprime_slope_task": (("chain", "draw", "task"), d),
                           "beta_criterion": (("chain", "draw"), c.mean(-1)),
                           "criterion_slope_task": (("chain", "draw", "task"), c)},
                          coords={"task": tasks})
        return Fit(model_name, arviz_ops.from_datasets(posterior=post),
                   {"passed": True, "max_rhat": 1.0, "divergences": 0}, {"cache_key": str(len(self.calls))})


def test_sdt_effects_are_refitted_with_each_scale_variable_and_changes_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    records = ingest([DATA_RAW / "records.csv"], registry=DATA_RAW / "registry.csv").records
    registry = load_registry(DATA_RAW / "registry.csv")
    cells = build_cells(records, registry, scale="params")
    usable = cells.filter(pl.col("x").is_not_null() & (pl.col("n") > 0))
    main_data = Tables(usable, records, registry, "params").get("binary_cells")

    def dprime_of(data, task):  # on capability the refusal d' slope turns negative
        on_capability = data["model"].n_unique() > main_data["model"].n_unique()
        return -0.5 if on_capability and task == "refusal" else 0.5

    stub = SdtStubFit(dprime_of)
    main = stub("sdt", main_data, seed=1)
    monkeypatch.setattr(fitter_module, "fit", stub)
    res = sensitivity.companion_scale_variable_refits(
        {"sdt": main, "scale": main, "within_between": main},
        {"sdt": main_data, "scale": usable, "within_between": usable}, verdict_model="scale",
        records=records, registry=registry, scale="params", rule=sensitivity.DecisionRule(),
        fitter=Fitter(1))
    # the verdict model is not a companion; within_between declares no headline: not refitted
    assert list(res) == ["sdt"]
    out = res["sdt"]
    by = {v["variable"]: v for v in out["variants"]}
    assert list(by) == ["active_params", "capability"]
    assert len(stub.calls) == 1 + 2  # main + one refit per other variable
    # each refit got the SDT table built on its own variable (capability: the closed models too)
    assert stub.calls[2]["model"].n_unique() > main_data["model"].n_unique()
    assert out["main"]["sensitivity"]["decision"] == "improves"
    assert by["capability"]["sensitivity"]["per_task"]["refusal"]["matches_main"] is False
    assert by["active_params"]["sensitivity"]["matches_main"] is True
    assert out["holds"] == {"sensitivity": False, "bias": True}
    assert out["changed"] == {"sensitivity": ["capability"], "bias": []}
    # the capability ROPE is in capability units (per sd of the score), not the declared 0.1
    assert by["capability"]["units"] == "logits per unit of capability score"


def test_a_scale_variable_that_leaves_the_table_unchanged_reuses_the_main_fit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from selfmodel.records.cells import build_cells
    records = ingest([DATA_RAW / "records.csv"], registry=DATA_RAW / "registry.csv").records
    # no mixture-of-experts model: active parameters = total parameters
    registry = load_registry(DATA_RAW / "registry.csv").with_columns(pl.col("params_b").alias("active_params_b"))
    cells = build_cells(records, registry, scale="params")
    usable = cells.filter(pl.col("x").is_not_null() & (pl.col("n") > 0))
    main_data = Tables(usable, records, registry, "params").get("binary_cells")
    stub = SdtStubFit(lambda data, t: 0.5)
    main = stub("sdt", main_data, seed=1)
    monkeypatch.setattr(fitter_module, "fit", stub)
    out = sensitivity.effect_scale_variable_sensitivity(
        "sdt", main, main_data, records, registry, rule=sensitivity.DecisionRule(), main_scale="params",
        fitter=Fitter(1), variables=("params", "active_params"))
    assert out["variants"][0]["same_data_as_main"] is True
    assert len(stub.calls) == 1  # no refit
