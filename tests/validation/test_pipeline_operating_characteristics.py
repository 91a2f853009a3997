"""The calibration study of this analysis (validation/pipeline_operating_characteristics.py): its designs,
its counting (a fit failing diagnostics is never a false 'improves'), and a --quick smoke run."""

from __future__ import annotations

import copy
import json
import sys
from dataclasses import asdict
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from selfmodel.robustness.stage import (
    PIPELINE_OPERATING_CHARACTERISTICS_PACKAGE_DATA,
    operating_characteristics,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "validation"))
import cells_generator as cg  # noqa: E402
import pipeline_operating_characteristics as pc  # noqa: E402


def test_seb_design_has_two_tasks_and_unequal_cells():
    d = pc.seb_design()
    tasks = {}
    for _m, t, n in d.cells:
        tasks.setdefault(t, []).append(n)
    assert sorted(tasks) == ["refusal", "word_association"]
    assert sorted(len(v) for v in tasks.values()) == [19, 22]
    assert max(tasks["word_association"]) > 2 * min(tasks["refusal"])
    top = sorted(d.models, key=lambda r: -r[2])[:3]
    assert {f for _, f, _ in top} == {"deepseek"}


@pytest.mark.parametrize("effect", ["accuracy", "dprime"])
def test_null_data_sets_have_the_models_columns(effect):
    data = pc.simulate(pc.seb_design(), effect, seed=1)
    cols = {"accuracy": {"n", "k"}, "dprime": {"n_signal", "n_noise", "hits", "false_alarms"}}[effect]
    assert cols <= set(data.columns) and data.height == 41
    assert abs(data.unique("model")["x"].mean()) < 1e-9  # centred on the models


def test_failed_diagnostics_are_not_findings_and_rates_have_intervals():
    rec = lambda passed, dec, cov: {  # noqa: E731
        "diagnostics_passed": passed,
        "overall": pc._record({"decision": dec, "hdi_low": -1 if cov else 0.2, "hdi_high": 1,
                               "mean": 0.0}, passed),
        "per_task": {}}
    s = pc.summarise([rec(False, "improves", False), rec(True, "improves", False)]
                     + [rec(True, "no_credible_effect", True)] * 18)
    assert s["diagnostics_failed"] == 1
    assert s["overall"]["false_improves"] == pytest.approx(1 / 20)
    lo, hi = s["overall"]["false_improves_ci"]
    assert lo < 0.05 < hi
    assert s["overall"]["hdi94_coverage"] == pytest.approx(18 / 20)
    assert s["overall"]["meets_targets"] is False  # coverage 90% < 91%


def test_targets_are_shipped_with_the_summary_and_decide_meets_targets(monkeypatch):
    """The report reads the targets from the summary, so the summary's verdict and its text agree."""
    rec = {"diagnostics_passed": True, "per_task": {}, "arm": "default:accuracy", "seed": 1,
           "sampler": asdict(pc.SamplerSettings()),
           "overall": pc._record({"decision": "no_credible_effect", "hdi_low": -1, "hdi_high": 1,
                                  "mean": 0.0}, True)}
    recs = [{**rec, "seed": i} for i in range(19)] + [
        {**rec, "seed": 19, "overall": pc._record({"decision": "improves", "hdi_low": 0.1,
                                                   "hdi_high": 1, "mean": 0.5}, True)}]
    s = pc.study_summary(recs, arms=["default:accuracy"])
    pm = s["targets"].pop("false_improves_pm_at_bound")
    assert s["targets"] == {"max_false_improves": pc.MAX_FALSE_IMPROVES,
                            "hdi94_coverage": list(pc.COVERAGE_RANGE)}
    # the precision 200 data sets buy at the 5% bound: half the exact interval of 10 of 200,
    # as scipy's binomtest (an implementation other than ours) gives it: about +-3.3 points
    from scipy.stats import binomtest

    ci = binomtest(round(pc.MAX_FALSE_IMPROVES * pc.TARGET_SIMS), pc.TARGET_SIMS).proportion_ci()
    assert pm == pytest.approx((ci.high - ci.low) / 2, rel=1e-6) and 0.03 < pm < 0.035
    # 1 of 20 false improves (5%), coverage 95%: inside the targets, and outside tighter ones
    assert s["arms"]["default:accuracy"]["overall"]["meets_targets"] is True
    monkeypatch.setattr(pc, "MAX_FALSE_IMPROVES", 0.04)
    s = pc.study_summary(recs, arms=["default:accuracy"])
    assert s["targets"]["max_false_improves"] == 0.04
    assert s["targets"]["false_improves_pm_at_bound"] < pm  # 8 of 200 is known more tightly
    assert s["arms"]["default:accuracy"]["overall"]["meets_targets"] is False


@pytest.mark.slow
def test_quick_smoke_run_writes_and_resumes(tmp_path):
    assert pc.main(["--quick", "--arms", "seb:accuracy", "--out", str(tmp_path)]) == 0
    s = json.loads((tmp_path / "pipeline_operating_characteristics.json").read_text())
    arm = s["arms"]["seb:accuracy"]
    assert arm["n"] == 2 and set(arm) >= {"overall", "refusal", "word_association"}
    lines = (tmp_path / "seb-accuracy.jsonl").read_text().splitlines()
    assert pc.main(["--quick", "--arms", "seb:accuracy", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "seb-accuracy.jsonl").read_text().splitlines() == lines  # resumed, no refit


def _rec(arm, seed, decision="no_credible_effect", covered=True, sampler=None):
    r = pc._record({"decision": decision, "hdi_low": -1 if covered else 0.2, "hdi_high": 1,
                    "mean": 0.0}, True)
    return {"arm": arm, "seed": seed, "i": seed - 16_000, "diagnostics_passed": True,
            "sampler": sampler or asdict(pc.SamplerSettings()), "seconds": 5.0,
            "overall": r, "per_task": {"t0": r}}


def test_pieces_from_several_machines_merge_by_arm_and_seed(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    lines_a = [_rec("seb:dprime", 16_000 + i) for i in range(5)]
    lines_b = [_rec("seb:dprime", 16_000 + i) for i in range(3, 8)]  # seeds 3, 4 run twice
    lines_b[1] = _rec("seb:dprime", 16_004, decision="improves")  # ... one with another answer
    quick = _rec("seb:dprime", 16_100, sampler={"draws": 200})
    (a / "seb-dprime.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines_a) + '{"arm": "se')
    (b / "seb-dprime.jsonl").write_text("".join(json.dumps(r) + "\n" for r in [*lines_b, quick]))
    s = pc.study_summary(pc.read_records([a, b]))
    arm = s["arms"]["seb:dprime"]
    assert arm["n"] == 8  # seeds 16000..16007 once each; the torn line and the quick record dropped
    assert s["duplicates"] == 1 and s["conflicts"] == ["seb:dprime seed 16004"]
    assert s["records_at_other_settings"] == 1
    assert arm["complete"] is False and s["complete"] is False
    assert s["arms"]["default:accuracy"]["n"] == 0  # every arm is listed, even without data
    lo, hi = arm["overall"]["false_improves_ci"]
    assert arm["overall"]["false_improves_pm"] == pytest.approx((hi - lo) / 2)
    assert arm["overall"]["false_improves"] == 0.0  # the first record of seed 16004 is kept


def test_a_piece_runs_only_its_seed_range_and_resumes(tmp_path, monkeypatch):
    calls = []

    def fake_fit(arms, i, settings, seed0, reuse_compiled=True):
        calls.append(i)
        return {arm: _rec(arm, seed0 + i) for arm in arms}

    monkeypatch.setattr(pc, "fit_records", fake_fit)
    pc.run(["default:accuracy"], 3, pc.SamplerSettings(), tmp_path, start=10)
    assert calls == [10, 11, 12]
    s = pc.run(["default:accuracy"], 5, pc.SamplerSettings(), tmp_path, start=8)
    assert calls == [10, 11, 12, 8, 9]  # 10-12 were done: skipped
    assert s["arms"]["default:accuracy"]["n"] == 5


def test_a_run_killed_mid_write_resumes_without_losing_the_next_record(tmp_path, monkeypatch):
    """A killed run leaves a torn last line; the resumed run refits that data set and writes
    its record on a line of its own (appended to the torn line, it would be lost too)."""
    monkeypatch.setattr(pc, "fit_records", lambda arms, i, settings, seed0, reuse_compiled=True:
                        {arm: _rec(arm, seed0 + i) for arm in arms})
    f = pc.arm_file(tmp_path, "default:accuracy")
    f.write_text(json.dumps(_rec("default:accuracy", 16_000)) + "\n" + '{"arm": "default:acc')
    s = pc.run(["default:accuracy"], 3, pc.SamplerSettings(), tmp_path)
    assert s["arms"]["default:accuracy"]["n"] == 3
    assert [r["seed"] for r in pc.read_records([f])] == [16_000, 16_001, 16_002]
    assert pc.run(["default:accuracy"], 3, pc.SamplerSettings(), tmp_path)["arms"]["default:accuracy"]["n"] == 3


def test_dprime_and_criterion_arms_share_one_fit_per_data_set(tmp_path, monkeypatch):
    calls = []

    def fake_fit(arms, i, settings, seed0, reuse_compiled=True):
        calls.append((tuple(arms), i))
        return {arm: _rec(arm, seed0 + i) for arm in arms}

    monkeypatch.setattr(pc, "fit_records", fake_fit)
    pc.run(["seb:dprime"], 2, pc.SamplerSettings(), tmp_path)
    s = pc.run(["seb:dprime", "seb:criterion", "seb:accuracy"], 3, pc.SamplerSettings(), tmp_path)
    # d' 0-1 were done: data sets 0-1 are refitted for the criterion arm only (the d' records
    # are not written twice), 2 for both; accuracy is its own model
    assert calls == [(("seb:dprime",), 0), (("seb:dprime",), 1),
                     (("seb:dprime", "seb:criterion"), 0), (("seb:dprime", "seb:criterion"), 1),
                     (("seb:dprime", "seb:criterion"), 2),
                     (("seb:accuracy",), 0), (("seb:accuracy",), 1), (("seb:accuracy",), 2)]
    assert {a: s["arms"][a]["n"] for a in ("seb:dprime", "seb:criterion", "seb:accuracy")} == \
        {"seb:dprime": 3, "seb:criterion": 3, "seb:accuracy": 3}
    assert s["duplicates"] == 0


def test_one_sdt_fit_gives_each_arm_what_its_own_fit_would(fake_nutpie):
    """Bookkeeping of a shared fit (prior draws stand in for the posterior: no compile)."""
    quick = pc.QUICK
    both = pc.fit_records(["default:dprime", "default:criterion"], 0, quick, 16_000)
    alone = pc.one("default:criterion", 0, quick, 16_000)
    shared = both["default:criterion"]
    assert shared.pop("shared_fit") == ["default:criterion", "default:dprime"]
    for r in (shared, alone):
        r.pop("seconds")
    assert shared == alone
    assert both["default:dprime"]["overall"] != both["default:criterion"]["overall"]
    with pytest.raises(ValueError, match="do not share"):
        pc.fit_records(["default:dprime", "default:accuracy"], 0, quick, 16_000)


def test_shipped_summary_is_read_by_the_pipeline_and_says_whether_it_is_complete():
    shipped = json.loads(PIPELINE_OPERATING_CHARACTERISTICS_PACKAGE_DATA.read_text())
    again = pc.study_summary(pc.read_records([pc.ROOT / "validation" / "results" / "pipeline_operating_characteristics"]))
    assert json.loads(json.dumps(again)) == {k: v for k, v in shipped.items() if k != "command"}
    # the records folder's own summary (written by a finished run) is of the same records
    folder = pc.ROOT / "validation" / "results" / "pipeline_operating_characteristics" / "pipeline_operating_characteristics.json"
    assert json.loads(folder.read_text()) == json.loads(json.dumps(again))
    assert operating_characteristics()["pipeline"] == shipped
    assert set(shipped["arms"]) == set(pc.ALL_ARMS)
    assert shipped["complete"] is all(a["n"] >= pc.target_n(k) for k, a in shipped["arms"].items())
    assert all(a["complete"] is (a["n"] >= pc.target_n(k)) for k, a in shipped["arms"].items())


# --- the arms beyond the model-form nulls (issue 28.6): independent generators ---------------


def _ols_slope(data, effect):
    """Per data set, the OLS slope over cells of the decided quantity's empirical value on x."""
    from scipy.stats import norm

    if effect == "accuracy":
        p = ((data["k"] + 0.5) / (data["n"] + 1)).to_numpy()
        y = np.log(p / (1 - p))
    else:
        h = ((data["hits"] + 0.5) / (data["n_signal"] + 1)).to_numpy()
        f = ((data["false_alarms"] + 0.5) / (data["n_noise"] + 1)).to_numpy()
        y = norm.ppf(h) - norm.ppf(f) if effect == "dprime" else -(norm.ppf(h) + norm.ppf(f)) / 2
    return float(np.polyfit(data["x"].to_numpy(), y, 1)[0])


@pytest.mark.parametrize("effect", ["accuracy", "dprime", "criterion"])
def test_heavy_tailed_generator_has_the_slope_it_is_given(effect):
    """Averaged over data sets, the empirical slope is the truth (0.4), and 0 at truth 0."""
    d = pc.default_design()
    for truth in (0.0, 0.4):
        slopes = [_ols_slope(cg.heavy_tailed(d.models, d.cells, effect, truth, s), effect) for s in range(60)]
        assert abs(np.mean(slopes) - truth) < 4 * np.std(slopes) / np.sqrt(60) + 0.03, (truth, np.mean(slopes))


@pytest.mark.parametrize("effect", ["accuracy", "dprime", "criterion"])
def test_clustered_generator_is_null_and_overdispersed(effect):
    """No slope on average, and a cell's count varies more than binomially (the misspecification)."""
    d = pc.default_design()
    frames = [cg.clustered(d.models, d.cells, effect, s) for s in range(60)]
    slopes = [_ols_slope(f, effect) for f in frames]
    assert abs(np.mean(slopes)) < 4 * np.std(slopes) / np.sqrt(60) + 0.02
    if effect == "accuracy":
        # one cell across data sets: variance of k against a binomial at its mean
        k = np.array([f.filter((pl.col("model") == "f0s0") & (pl.col("task") == "t0"))["k"][0] for f in frames])
        p = k.mean() / 300
        assert k.var() > 2 * 300 * p * (1 - p)
    assert set(frames[0]["task"]) == {"t0", "t1", "t2"} and frames[0].height == len(d.cells)


def test_variant_arms_parse_and_carry_their_truth():
    assert pc.parse_arm("default:dprime:slope0.4") == ("default", "dprime", "slope0.4")
    assert pc.truth_of("default:dprime:slope0.4") == 0.4
    assert pc.truth_of("default:accuracy:clustered") == 0.0 and pc.truth_of("seb:accuracy") == 0.0
    assert pc.target_n("default:accuracy:slope0.15") == pc.TARGET_SIMS_NONNULL
    assert pc.target_n("default:accuracy:clustered") == pc.TARGET_SIMS
    # coverage is of the arm's truth, and at a known slope 'improves' is power, not a false rate
    rec = lambda lo, hi, dec: {"diagnostics_passed": True, "per_task": {}, "versions": {"pymc": "x"},  # noqa: E731
                               "overall": pc._record({"decision": dec, "hdi_low": lo, "hdi_high": hi,
                                                      "mean": 0.4}, True, 0.4)}
    s = pc.summarise([rec(0.1, 0.6, "improves")] * 9 + [rec(0.45, 0.9, "improves")], "default:accuracy:slope0.4")
    o = s["overall"]
    assert o["hdi94_coverage"] == pytest.approx(0.9) and o["improves_rate"] == 1.0
    assert o["false_improves"] is None and s["truth"] == 0.4 and s["versions"] == [{"pymc": "x"}]
    assert "heavy_tailed" in s["generator"]


def test_variant_arms_group_by_variant(tmp_path, monkeypatch):
    """A variant's d' and criterion share a fit; they never share one with the null arms."""
    calls = []

    def fake_fit(arms, i, settings, seed0, reuse_compiled=True):
        calls.append(tuple(arms))
        return {arm: _rec(arm, seed0 + i) for arm in arms}

    monkeypatch.setattr(pc, "fit_records", fake_fit)
    pc.run(["default:dprime", "default:dprime:clustered", "default:criterion:clustered"], 1,
           pc.SamplerSettings(), tmp_path)
    assert calls == [("default:dprime",), ("default:dprime:clustered", "default:criterion:clustered")]
    assert (tmp_path / "default-dprime-clustered.jsonl").is_file()


def test_each_arm_has_the_command_that_runs_it_and_an_sdt_arm_names_its_sibling():
    assert pc.arm_command("default:accuracy:slope0.4").endswith(
        "--arms default:accuracy:slope0.4 --sims 100 --out validation/results/pipeline_operating_characteristics")
    cmd = pc.arm_command("default:criterion:clustered")
    assert "--arms default:dprime:clustered default:criterion:clustered default:confirmatory:clustered --sims 200" in cmd
    assert pc.summarise([], "seb:dprime")["command"] == pc.arm_command("seb:criterion")


def _within_between_ols(data: pl.DataFrame) -> tuple[float, float]:
    """Empirical within- and between-family slopes: OLS of each cell's logit on the model's
    distance from its family's mean x and on that mean (the Mundlak split, by hand)."""
    fam_mean = data.group_by("family").agg(pl.col("x").mean().alias("xb"))
    d = data.join(fam_mean, on="family")
    p = ((d["k"] + 0.5) / (d["n"] + 1)).to_numpy()
    y = np.log(p / (1 - p))
    xb = d["xb"].to_numpy()
    X = np.column_stack([np.ones(len(y)), d["x"].to_numpy() - xb, xb])  # noqa: N806 (the OLS design matrix X)
    coef = np.linalg.lstsq(X, y, rcond=None)[0]
    return float(coef[1]), float(coef[2])


@pytest.mark.parametrize(("within", "between"), [(0.0, 0.4), (0.4, 0.0), (0.0, 0.0)])
def test_within_between_generator_has_the_two_slopes_it_is_given(within, between):
    """Averaged over data sets, the empirical within and between slopes are the truths."""
    d = pc.mundlak_design()
    est = np.array([_within_between_ols(cg.within_between(d.models, d.cells, within, between, s))
                    for s in range(80)])
    for j, truth in enumerate((within, between)):
        se = est[:, j].std() / np.sqrt(len(est))
        assert abs(est[:, j].mean() - truth) < 4 * se + 0.03, (j, truth, est[:, j].mean())


def test_mundlak_design_has_families_of_unequal_mean_size():
    """In the default design every family has the same sizes, so no between slope is identified."""
    from selfmodel import models as model_registry

    d = pc.mundlak_design()
    means = {f: np.mean([x for _, ff, x in d.models if ff == f]) for f in {f for _, f, _ in d.models}}
    assert len(means) == 4 and np.ptp(list(means.values())) > 0.8
    data = pc.simulate_arm("mundlak:within", 16_000)
    assert model_registry.get("within_between").SPEC.unfit_reason(data) is None
    default = pc.simulate_arm("default:accuracy", 16_000)
    means_default = {f: np.mean([x for _, ff, x in pc.default_design().models if ff == f])
                     for f in {f for _, f, _ in pc.default_design().models}}
    assert np.ptp(list(means_default.values())) == 0 and default.height == len(pc.default_design().cells)


def test_within_between_arms_carry_their_truth_check_and_sibling():
    assert pc.truth_of("mundlak:between:between0.4") == 0.4
    assert pc.truth_of("mundlak:within:between0.4") == 0.0
    assert pc.truth_of("mundlak:within:slope0.4") == pc.truth_of("mundlak:between:slope0.4") == 0.4
    assert [pc.check_of(a) for a in ("mundlak:within", "mundlak:within:clustered",
                                     "mundlak:within:between0.4", "mundlak:between:between0.4",
                                     "default:accuracy:slope0.15")] == \
        ["null", "misspecified", "null", "coverage", "coverage"]
    assert pc.target_n("mundlak:within:between0.4") == pc.TARGET_SIMS
    assert pc.target_n("mundlak:between:between0.4") == pc.TARGET_SIMS_NONNULL
    assert "--arms mundlak:within:clustered mundlak:between:clustered --sims 200" in \
        pc.arm_command("mundlak:between:clustered")
    assert "within_between" in pc.summarise([], "mundlak:within:between0.4")["generator"]
    assert pc.summarise([], "mundlak:within:between0.4")["check"] == "null"
    # every data set of an arm of the Mundlak split is accuracy cells of the Mundlak design
    for arm in ("mundlak:within", "mundlak:between:clustered", "mundlak:within:slope0.4",
                "mundlak:between:between0.4"):
        data = pc.simulate_arm(arm, 16_001)
        assert {"k", "n", "x", "family"} <= set(data.columns), arm
        assert data.height == len(pc.mundlak_design().cells), arm


def test_within_and_between_share_one_fit_and_between_has_no_per_task(fake_nutpie):
    """Bookkeeping of the Mundlak arms' shared fit (prior draws stand in: no compile)."""
    both = pc.fit_records(["mundlak:within:between0.4", "mundlak:between:between0.4"], 0, pc.QUICK, 16_000)
    w, b = both["mundlak:within:between0.4"], both["mundlak:between:between0.4"]
    assert w["shared_fit"] == b["shared_fit"] and w["truth"] == 0.0 and b["truth"] == 0.4
    assert set(w["per_task"]) == {"t0", "t1", "t2"} and b["per_task"] == {}
    assert w["overall"] != b["overall"]


def test_family_left_out_arms_fit_scale_without_the_pipelines_choice_of_family(fake_nutpie, tmp_path, monkeypatch):
    """The pipeline leaves out the family with the most models (cirrus here: four models, the
    widest span); the arm fits ``scale`` on the rest, never sharing a fit with ``accuracy``."""
    rec = pc.fit_records(["mundlak:without_family:slope0.4"], 0, pc.QUICK, 16_000)["mundlak:without_family:slope0.4"]
    assert rec["left_out"] == "cirrus" and rec["truth"] == 0.4 and rec["per_task"] == {}
    data, fam = pc.leave_out_largest_family(pc.simulate_arm("mundlak:without_family", 16_000), pc.mundlak_design())
    assert fam == "cirrus" and set(data["family"]) == {"aurora", "borealis", "dynamo"}
    assert pc.check_of("mundlak:without_family:clustered") == "misspecified"
    calls = []
    monkeypatch.setattr(pc, "fit_records", lambda arms, i, *a, **k: calls.append(tuple(arms)) or
                        {arm: _rec(arm, 16_000 + i) for arm in arms})
    pc.run(["mundlak:accuracy", "mundlak:without_family"], 1, pc.SamplerSettings(), tmp_path)
    assert calls == [("mundlak:accuracy",), ("mundlak:without_family",)]


def test_confirmatory_family_shares_the_sdt_fit_and_adds_scale_on_the_same_records(fake_nutpie):
    """The family arm (issue 28.7) is the pipeline's own decision of the declared family:
    both members of the hypotheses file, each at the Bonferroni-adjusted HDI mass, the SDT
    member from the d' arm's fit and the scale member from a fit of the same records' accuracy."""
    arms = ["default:dprime", "default:criterion", "default:confirmatory"]
    recs = pc.fit_records(arms, 0, pc.QUICK, 16_000)
    fam = recs["default:confirmatory"]
    assert fam["shared_fit"] == sorted(arms)
    assert set(fam["per_task"]) == {"accuracy_overall", "dprime_overall"}
    assert fam["family_size"] == 2 and fam["hdi_prob"] == pytest.approx(0.97)
    assert set(fam["model_samplers"]) == {"sdt", "scale"}
    # the SDT member is the d' arm's slope, decided on a wider interval than the d' arm's 94%
    assert fam["per_task"]["dprime_overall"]["mean"] == pytest.approx(recs["default:dprime"]["overall"]["mean"])
    lo, hi = fam["per_task"]["dprime_overall"]["hdi"]
    assert lo < fam["per_task"]["dprime_overall"]["mean"] < hi
    # the same data set as the d' arm's, and its accuracy is hits plus correct rejections
    sdt = pc.simulate_arm("default:dprime", 16_000)
    assert pc.simulate_arm("default:confirmatory", 16_000).equals(sdt)
    acc = pc.accuracy_cells(sdt)
    assert (acc["k"] == sdt["hits"] + sdt["n_noise"] - sdt["false_alarms"]).all()
    alone = pc.one("default:confirmatory", 0, pc.QUICK, 16_000)  # what a run of the family arm alone records
    assert "shared_fit" not in alone and alone["per_task"] == fam["per_task"] and alone["overall"] == fam["overall"]
    assert pc.arm_command("default:confirmatory") == pc.arm_command("default:dprime")
    assert "default:confirmatory" in pc.arm_command("default:criterion")
    assert "confirmatory" not in pc.arm_command("seb:dprime")  # no family arm on that design


def _family_rec(seed: int, members: dict[str, tuple[str, bool]], passed: bool = True) -> dict:
    per = {name: {"decision": d, "reported_decision": d if passed else "not_a_finding",
                  "hdi_covers_truth": cov, "mean": 0.0} for name, (d, cov) in members.items()}
    supported = passed and all(d == "improves" for d, _ in members.values())
    from selfmodel import models as model_registry
    from selfmodel.fitting.sampling import for_model

    sdt = asdict(for_model(pc.SamplerSettings(), model_registry.get("sdt").SPEC.sampling))
    return {"arm": "default:confirmatory", "seed": seed, "diagnostics_passed": passed, "hdi_prob": 0.97,
            "model_sampler": sdt, "versions": {"pymc": "6.4.0", "nutpie": "0.16.11"},
            "family_size": len(members), "per_task": per,
            "overall": {"decision": "improves" if supported else "not_supported",
                        "reported_decision": "improves" if supported else "not_supported",
                        "hdi_covers_truth": all(c for _, c in members.values()), "mean": None}}


def test_family_error_counts_any_member_claiming_a_sign_and_not_failed_fits():
    ok = ("no_credible_effect", True)
    recs = ([_family_rec(i, {"a": ok, "d": ok}) for i in range(90)]
            + [_family_rec(90 + i, {"a": ("credibly_negative", False), "d": ok}) for i in range(4)]
            + [_family_rec(94 + i, {"a": ok, "d": ("improves", False)}) for i in range(3)]
            + [_family_rec(97 + i, {"a": ("improves", False), "d": ("improves", False)}) for i in range(2)]
            + [_family_rec(99, {"a": ("improves", False), "d": ok}, passed=False)])
    s = pc.summarise(recs, "default:confirmatory")
    o = s["overall"]
    assert o["family_error_k"] == 9 and o["family_error"] == pytest.approx(0.09)  # the failed fit is no claim
    assert o["false_improves"] == pytest.approx(0.02)  # the family "supported" twice
    assert o["hdi94_coverage"] == pytest.approx(90 / 100) and o["coverage_range"] == [0.91, 1.0]
    assert o["meets_targets"] is False  # 9% > 6%
    assert s["a"]["coverage_range"] == [0.94, 1.0]  # a member: its adjusted HDI
    assert s["hdi_prob"] == [0.97] and s["family_size"] == [2]
    line = pc.summary_line("default:confirmatory", s)
    assert "n=100 family-wise error 0.090 (+-" in line and line.endswith("no fit times recorded")
    assert pc.summary_line("default:confirmatory:clustered", pc.summarise([], "default:confirmatory:clustered")) \
        == "default:confirmatory:clustered: n=0"
    good = pc.summarise(recs[:90] + recs[90:93], "default:confirmatory")["overall"]
    assert good["family_error"] == pytest.approx(3 / 93) and good["meets_targets"] is True


def test_the_family_arm_reads_as_a_family_in_the_map_and_the_report():
    """The map's confirmatory row reads the family-wise error, and the report judges the arm on
    the family's own targets (a joint coverage of 99% is no miss: Bonferroni is conservative)."""
    from selfmodel.decisions.validation_map import validation_map
    from selfmodel.report.sections import operating_characteristics as section
    from selfmodel.report.sections.common import Report

    ok = ("no_credible_effect", True)
    recs = ([_family_rec(i, {"accuracy_overall": ok, "dprime_overall": ok}) for i in range(198)]
            + [_family_rec(198 + i, {"accuracy_overall": ("credibly_negative", False), "dprime_overall": ok})
               for i in range(2)])
    arm = pc.summarise(recs, "default:confirmatory")
    shipped = copy.deepcopy(operating_characteristics()["pipeline"])
    shipped["arms"] = {"default:confirmatory": arm}
    results = {"operating_characteristics": {"pipeline": shipped}, "fit": {"versions": {}},
               "hypotheses": {"multiplicity": {"confirmatory": {"size": 2}}}}
    row = {r["key"]: r for r in validation_map(results)}["confirmatory"]
    (a,) = row["arms"]
    assert a["check"] == "null" and a["rate"] == pytest.approx(0.01) and a["complete"]
    assert "family-wise error" in a["measure"] and "97% HDI" in a["measure"]
    assert row["status"] == "partial" and row["missing"] == ["coverage", "misspecified"]
    assert row["notes"] == []  # at the pipeline's settings (the SDT member's) and complete
    shipped["arms"]["default:confirmatory:clustered"] = pc.summarise([], "default:confirmatory:clustered")
    row = {r["key"]: r for r in validation_map(results)}["confirmatory"]
    assert row["notes"] == [] and row["arms"][1]["at_pipeline_settings"] is None  # no records: no settings
    del shipped["arms"]["default:confirmatory:clustered"]
    text = section.pipeline(Report(results, {}, None, None, 6.3, 8.5)).replace("\\", "")
    line = next(ln for ln in text.splitlines() if ln.startswith("|") and "default:confirmatory" in ln)
    assert "family-wise error 1%" in line and "(joint, 97% HDIs)" in line
    assert "default:confirmatory</code>: meets its targets (family-wise error 1.0%" in text
    assert "each of its 2 members meets its targets." in text and "per-task slopes" not in text
    assert "a family-wise error at most 6%" in text
    assert "still reaches past" not in text  # a joint coverage interval up to 100% crosses no bound of its own
    bad = pc.summarise(recs[:186] + [_family_rec(300 + i, {"accuracy_overall": ok, "dprime_overall":
                                                           ("credibly_positive", False)}) for i in range(14)],
                       "default:confirmatory")
    shipped["arms"] = {"default:confirmatory": bad}
    text = section.pipeline(Report(results, {}, None, None, 6.3, 8.5)).replace("\\", "")
    assert "misses family-wise error 7.0%" in text and "coverage 93.0%" not in text.split("misses")[1]


def test_the_sdt_null_records_at_other_settings_are_kept_apart_from_the_shipped_ones():
    """The first default-design SDT null records predate the SDT model's SPEC.sampling: they are
    kept in their own folder, and every shipped default d'/criterion record sampled as the
    pipeline samples the SDT model."""
    from selfmodel import models as model_registry
    from selfmodel.fitting.sampling import for_model

    results = pc.ROOT / "validation" / "results"
    old = pc.read_records([results / "pipeline_operating_characteristics_other_settings"])
    assert {r["arm"] for r in old} == {"default:dprime", "default:criterion"}
    assert len(old) == 400 and not any(r.get("model_sampler") for r in old)
    want = asdict(for_model(pc.SamplerSettings(), model_registry.get("sdt").SPEC.sampling))
    shipped = [r for r in pc.read_records([results / "pipeline_operating_characteristics"])
               if r["arm"] in ("default:dprime", "default:criterion", "default:confirmatory")]
    assert shipped and all(r["model_sampler"] == want for r in shipped)


def test_the_family_on_clustered_items_is_the_clustered_dprime_data_and_a_misspecified_check():
    data = pc.simulate_arm("default:confirmatory:clustered", 16_003)
    assert data.equals(pc.simulate_arm("default:dprime:clustered", 16_003))
    acc = pc.accuracy_cells(data)
    assert (acc["n"] == data["n_signal"] + data["n_noise"]).all() and (acc["k"] <= acc["n"]).all()
    assert pc.check_of("default:confirmatory:clustered") == "misspecified"
    assert "default:confirmatory:clustered" in pc.arm_command("default:dprime:clustered")


def test_level_accuracy_generator_sets_the_dprime_slope_and_keeps_accuracy_level():
    """Both members' truths are set: averaged over data sets the empirical d' slope is the
    truth while accuracy does not move with size (a test that fails if the criterion is not
    solved for: the heavy-tailed generator's accuracy rises with d')."""
    d = pc.default_design()
    # cells of 20,000 items: the criteria that hold accuracy level put many hit and false-alarm
    # rates near 0 or 1, where the empirical d' of a cell of 300 is biased towards 0
    big = [(m, t, 20_000) for m, t, _ in d.cells]
    frames = [cg.level_accuracy(d.models, big, 0.4, s) for s in range(30)]
    acc = [_ols_slope(pc.accuracy_cells(f), "accuracy") for f in frames]
    dp = [_ols_slope(f, "dprime") for f in frames]
    assert abs(np.mean(dp) - 0.4) < 4 * np.std(dp) / np.sqrt(30) + 0.01, np.mean(dp)
    assert abs(np.mean(acc)) < 4 * np.std(acc) / np.sqrt(30) + 0.002, np.mean(acc)
    rising = [_ols_slope(pc.accuracy_cells(cg.heavy_tailed(d.models, d.cells, "dprime", 0.4, s)), "accuracy")
              for s in range(60)]
    assert np.mean(rising) > 0.1  # what a d' slope does to accuracy unless the criterion holds it level
    frame = cg.level_accuracy(d.models, d.cells, 0.4, 0)
    assert frame.height == len(d.cells) and set(frame["task"]) == {"t0", "t1", "t2"}
    # the criterion is solved exactly: the expected accuracy of a cell is its task's level
    for dprime, share, level, high in [(1.0, 0.4, 0.62, True), (0.3, 0.65, 0.55, False), (2.0, 0.5, 0.8, True)]:
        c = cg.level_criterion(dprime, share, level, high)
        assert cg._accuracy_at(c, dprime, share) == pytest.approx(level, abs=1e-8)
    with pytest.raises(ValueError, match="out of reach"):
        cg.level_criterion(0.5, 0.5, 0.9, True)
    import doctest

    assert doctest.testmod(cg).failed == 0


def test_the_family_coverage_arm_sets_each_members_truth(fake_nutpie):
    """``default:confirmatory:dprime0.4``: the d' member's truth 0.4, the scale member's 0, so
    the family's 'supported' (both rise) is a false claim there, counted as one."""
    arm = "default:confirmatory:dprime0.4"
    assert arm in pc.ALL_ARMS and pc.check_of(arm) == "coverage" and pc.target_n(arm) == pc.TARGET_SIMS_NONNULL
    assert pc.member_truths(arm) == {"sdt": 0.4, "scale": 0.0}
    assert pc.member_truths("default:confirmatory:clustered") == {"sdt": 0.0, "scale": 0.0}
    empty = pc.summarise([], arm)  # an arm with no records yet still names its members' truths
    assert "level_accuracy" in empty["generator"]
    assert empty["member_truths"] == {"accuracy_overall": 0.0, "dprime_overall": 0.4}
    assert pc.arm_command(arm).endswith(f"--arms {arm} --sims 100 --out validation/results/pipeline_operating_characteristics")
    assert pc.simulate_arm(arm, 16_000).equals(cg.level_accuracy(pc.default_design().models,
                                                                 pc.default_design().cells, 0.4, 16_000))
    rec = pc.one(arm, 0, pc.QUICK, 16_000)
    assert {k: v["truth"] for k, v in rec["per_task"].items()} == {"accuracy_overall": 0.0, "dprime_overall": 0.4}
    lo, hi = rec["per_task"]["dprime_overall"]["hdi"]
    assert rec["per_task"]["dprime_overall"]["hdi_covers_truth"] is bool(lo <= 0.4 <= hi)
    # the summary: each member's truth; a member at 0 and the family have false rates again
    ok, miss = ("no_credible_effect", True), ("no_credible_effect", False)
    recs = [_family_rec(i, {"accuracy_overall": ok, "dprime_overall": ("improves", True)}) for i in range(8)]
    recs += [_family_rec(8, {"accuracy_overall": ("improves", False), "dprime_overall": ("improves", True)}),
             _family_rec(9, {"accuracy_overall": ok, "dprime_overall": miss})]
    for r in recs:
        r["arm"] = arm
        r["per_task"]["accuracy_overall"]["truth"], r["per_task"]["dprime_overall"]["truth"] = 0.0, 0.4
    s = pc.summarise(recs, arm)
    assert s["member_truths"] == {"accuracy_overall": 0.0, "dprime_overall": 0.4} and s["truth"] == 0.4
    assert s["overall"]["hdi94_coverage"] == pytest.approx(0.8)  # joint: both members covered
    assert s["overall"]["false_improves"] == pytest.approx(0.1)  # 'supported' once, with accuracy flat
    assert s["accuracy_overall"]["false_improves"] == pytest.approx(0.1)
    assert s["dprime_overall"]["false_improves"] is None and s["dprime_overall"]["improves_rate"] == 0.9
    assert s["overall"]["family_error"] is None  # no joint null here
    assert s["overall"]["meets_targets"] is False  # a false 'supported' of 10% > 5%, whatever the coverage
    # with the null and the clustered arms it completes the map's confirmatory row, and the
    # report names each member's truth and the family's false 'supported'
    from selfmodel.decisions.validation_map import validation_map
    from selfmodel.report.sections import operating_characteristics as section
    from selfmodel.report.sections.common import Report

    good = recs[:8] * 12 + recs[9:10] * 4  # 100 data sets: none 'supported' falsely, 96% covered
    for i, r in enumerate(good):
        good[i] = copy.deepcopy(r) | {"seed": 16_000 + i}
    fam = pc.summarise(good, arm)
    assert fam["overall"]["hdi94_coverage"] == pytest.approx(0.96) and fam["overall"]["meets_targets"] is True
    line = pc.summary_line(arm, fam)  # the terminal reads the family's measures, not a power
    assert "false supported 0.000 joint coverage of the 0.97 HDIs 0.960" in line
    assert "dprime_overall 0.960" in line and "accuracy_overall 1.000" in line
    assert "improves rate" not in line and "family-wise error" not in line  # no joint null here
    null = [_family_rec(i, {"accuracy_overall": ok, "dprime_overall": ok}) for i in range(200)]
    shipped = copy.deepcopy(operating_characteristics()["pipeline"])
    shipped["arms"] = {"default:confirmatory": pc.summarise(null, "default:confirmatory"),
                       "default:confirmatory:clustered": pc.summarise(
                           [r | {"arm": "default:confirmatory:clustered"} for r in null],
                           "default:confirmatory:clustered"), arm: fam}
    results = {"operating_characteristics": {"pipeline": shipped}, "fit": {"versions": {}},
               "hypotheses": {"multiplicity": {"confirmatory": {"size": 2}}}}
    row = {r["key"]: r for r in validation_map(results)}["confirmatory"]
    cov = next(a for a in row["arms"] if a["check"] == "coverage")
    assert cov["rate"] == pytest.approx(0.96) and "adjusted 97% HDIs" in cov["measure"]
    assert row["status"] == "checked" and row["missing"] == []
    text = section.pipeline(Report(results, {}, None, None, 6.3, 8.5)).replace("\\", "")
    line = next(ln for ln in text.splitlines() if ln.startswith("|") and arm in ln)
    assert "accuracy_overall 0, dprime_overall 0.4" in line and "0% ±2 [0, 4] 'supported'" in line
    assert "(power)" not in line and "(joint, 97% HDIs)" in line
    assert (f"{arm}</code>: meets its targets at the members' true slopes (accuracy_overall 0, "
            "dprime_overall 0.4: false 'supported' 0.0%, joint coverage 96.0%") in text
    verdict = next(ln for ln in text.splitlines() if ln.startswith("- ") and arm in ln)
    assert verdict.endswith("each of its 2 members meets its targets.")  # members, not per-task slopes


def test_a_member_without_an_interval_is_recorded_not_raised():
    """A not_estimable member (too few models) has no HDI: it covers nothing and claims nothing."""
    r = pc._record({"decision": "not_estimable", "reason": "2 models"}, False)
    assert r == {"decision": "not_estimable", "reported_decision": "not_a_finding", "hdi_covers_truth": False,
                 "mean": None}
