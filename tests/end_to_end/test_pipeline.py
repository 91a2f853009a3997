"""End-to-end: records -> results.json -> report.html, determinism, statistical failure modes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest

from selfmodel.cli import main
from selfmodel.records import contract
from selfmodel.records.cells import to_cells
from selfmodel.records.ingest import ingest
from selfmodel.records.simulate import SimulationConfig, simulate

ROOT = Path(__file__).resolve().parents[2]
DESIGN_KEYS = {
    "data": {"sha256", "records_read", "records_used", "records_quarantined", "models", "tasks"},
    "by_model_task": {
        "model",
        "task",
        "n",
        "accuracy",
        "ci_low",
        "ci_high",
        "accuracy_strict",
        "baseline_accuracy",
    },
    "scale_effect": {
        "scale_variable",
        "fit_model",
        "mean",
        "hdi_low",
        "hdi_high",
        "hdi_prob",
        "prob_positive",
        "decision",
        "per_task",
    },
    "diagnostics": {"max_rhat", "min_ess_bulk", "divergences", "passed"},
}
DECISIONS = set(contract.DECISIONS)
HOSTILE = "<script>alert(1)</script>"  # a model name that must stay text in the report
QUICK = [
    "--draws", "300", "--tune", "300", "--chains", "2", "--models", "scale", "--no-power", "--no-robustness",
]


def _small_data(tmp_path: Path, *, sizes: bool = True, seed: int = 3) -> tuple[Path, Path]:
    cfg = SimulationConfig(
        families={
            "a": [("1b", 1.0, None), ("8b", 8.0, None), ("70b", 70.0, None)],
            "b": [("2b", 2.0, None), ("30b", 30.0, None)],
        },
        closed=[(HOSTILE, "c", 100.0)],
        tasks={"refusal": (0.8, 0.0, 1.0, -0.5, 60), "difficulty": (0.5, 0.5, 0.8, -0.3, 60)},
    )
    records, registry, _ = simulate(seed=seed, config=cfg)
    if not sizes:
        registry = registry.with_columns(
            pl.lit(None, dtype=pl.Float64).alias("params_b"),
            pl.lit(None, dtype=pl.Float64).alias("active_params_b"),
        )
    rec, reg = tmp_path / "logs.csv", tmp_path / "models.csv"
    records.write_csv(rec)
    registry.write_csv(reg)
    return rec, reg


def _check_contract(results: dict) -> None:
    assert results["schema_version"]
    for section, keys in DESIGN_KEYS.items():
        value = results[section]
        rows = value if isinstance(value, list) else [value]
        for row in rows:
            assert keys <= set(row), (section, keys - set(row))
    eff = results["scale_effect"]
    assert eff["decision"] in DECISIONS
    assert all(v["decision"] in DECISIONS for v in eff["per_task"].values())
    d = results["data"]
    assert d["records_read"] == (d["records_used"] + d["records_quarantined"]
                                 + d["records_duplicate"] + d["records_excluded"])


@pytest.mark.e2e
def test_every_size_missing_is_not_estimable_and_still_reports(tmp_path, capsys):
    """No model has a size: the run completes, the verdict is not_estimable with the reason."""
    rec, reg = _small_data(tmp_path, sizes=False)
    out = tmp_path / "out"
    assert main(["run", str(rec), "--registry", str(reg), "--out", str(out)]) == 0
    results = json.loads((out / "results.json").read_text())
    _check_contract(results)
    eff = results["scale_effect"]
    assert eff["decision"] == "not_estimable"
    assert "0 model(s)" in eff["reason"]
    assert set(eff["models_without_scale_variable"]) == set(results["data"]["models"])
    assert all(v["decision"] == "not_estimable" for v in eff["per_task"].values())
    html = (out / "report.html").read_text()
    assert "not estimable" in html and "Left out of the slope" in html
    assert HOSTILE not in html and "&lt;script&gt;alert" in html


def test_two_sized_models_are_not_enough(tmp_path):
    rec, reg = _small_data(tmp_path)
    registry = pl.read_csv(reg).with_columns(
        pl.when(pl.col("model").is_in(["a-1b", "a-8b"]))
        .then(pl.col("params_b"))
        .otherwise(None)
        .alias("params_b")
    )
    registry.write_csv(reg)
    out = tmp_path / "out"
    assert main(["run", str(rec), "--registry", str(reg), "--out", str(out), "--no-report",
                 "--no-contrasts"]) == 0
    eff = json.loads((out / "results.json").read_text())["scale_effect"]
    assert eff["decision"] == "not_estimable" and eff["n_models"] == 2


def test_file_and_row_order_do_not_change_cells(tmp_path):
    rec, _ = _small_data(tmp_path)
    frame = pl.read_csv(rec)
    shuffled = frame.sample(fraction=1.0, shuffle=True, seed=1)
    half = shuffled.height // 2
    a, b = tmp_path / "z_part.csv", tmp_path / "a_part.csv"
    shuffled[:half].write_csv(a)
    shuffled[half:].write_csv(b)
    one = to_cells(ingest([rec]).records)
    two = to_cells(ingest([a, b]).records)
    three = to_cells(ingest([b, a]).records)
    assert one.equals(two) and one.equals(three)


@pytest.mark.e2e
def test_run_twice_is_byte_identical_and_reuses_the_fit(tmp_path, capsys):
    """Same inputs and seed: identical results.json, whether the fit is reused or redone."""
    rec, reg = _small_data(tmp_path)
    args = [str(rec), "--registry", str(reg), *QUICK, "--no-report"]
    assert main(["run", *args, "--out", str(tmp_path / "a")]) == 0
    first = (tmp_path / "a" / "results.json").read_bytes()
    results = json.loads(first)
    _check_contract(results)
    assert results["scale_effect"]["n_models"] == 5
    assert results["scale_effect"]["models_without_scale_variable"] == [HOSTILE]
    fit_file = tmp_path / "a" / results["fit"]["file"]
    assert fit_file.is_file()
    # unchanged second run: reuses the results without running the pipeline (analysis/common/rerun.py)
    run_info = (tmp_path / "a" / "run.json").read_bytes()
    assert main(["run", *args, "--out", str(tmp_path / "a")]) == 0
    assert (tmp_path / "a" / "run.json").read_bytes() == run_info
    assert (tmp_path / "a" / "results.json").read_bytes() == first
    # the pipeline again (its record of the last run removed): the saved fit is reused
    (tmp_path / "a" / "run-key.json").unlink()
    assert main(["run", *args, "--out", str(tmp_path / "a")]) == 0
    assert json.loads((tmp_path / "a" / "run.json").read_text())["fit_reused"] is True
    assert (tmp_path / "a" / "results.json").read_bytes() == first
    # a fresh fit in another folder with the same seed gives the same bytes
    assert main(["run", *args, "--out", str(tmp_path / "b"), "--no-cache"]) == 0
    assert (tmp_path / "b" / "results.json").read_bytes() == first
    # a different seed is a different fit (the cache key includes the seed)
    assert main(["run", *args, "--out", str(tmp_path / "a"), "--seed", "7"]) == 0
    assert json.loads((tmp_path / "a" / "run.json").read_text())["fit_reused"] is False


@pytest.mark.e2e
def test_tampered_fit_is_not_trusted(tmp_path, capsys):
    """A saved fit whose provenance does not match is refitted, not reused."""
    rec, reg = _small_data(tmp_path)
    args = [
        "run",
        str(rec),
        "--registry",
        str(reg),
        *QUICK,
        "--no-report",
        "--out",
        str(tmp_path / "a"),
    ]
    assert main(args) == 0
    results = json.loads((tmp_path / "a" / "results.json").read_text())
    fit_file = tmp_path / "a" / results["fit"]["file"]
    from selfmodel.common import arviz_ops

    idata = arviz_ops.load(fit_file)
    prov = json.loads(idata.attrs["selfmodel_provenance"])
    prov["seed"] = 999
    idata.attrs["selfmodel_provenance"] = json.dumps(prov)
    tampered = tmp_path / "t.nc"
    arviz_ops.save(idata, tampered)
    shutil.move(tampered, fit_file)
    assert main(args) == 0
    assert json.loads((tmp_path / "a" / "run.json").read_text())["fit_reused"] is False


@pytest.mark.e2e
def test_default_data_end_to_end(quick_build):
    """`selfmodel run` on data_raw/ writes results.json honouring the DESIGN contract."""
    results = json.loads((quick_build / "results.json").read_text())
    _check_contract(results)
    assert results["settings"]["inputs"] == ["data_raw/records.csv"]
    assert results["truth_comparison"] is not None
    assert {
        "records.parquet",
        "quarantine.parquet",
        "ingest.json",
        "cells.parquet",
        "run.json",
    } <= {p.name for p in quick_build.iterdir()}
    assert (quick_build / results["fit"]["file"]).is_file()


@pytest.mark.e2e
def test_degenerate_cells_complete_with_reasons(tmp_path, capsys):
    """A task with one model, a model with one record, a model that always says yes: no crash."""
    rec, reg = _small_data(tmp_path)
    frame = pl.read_csv(rec)
    solo = (
        frame.filter(pl.col("model") == "a-8b").head(30).with_columns(pl.lit("solo").alias("task"))
    )
    lonely = frame.head(1).with_columns(pl.lit("lonely-3b").alias("model"))
    frame = pl.concat([frame, solo, lonely]).with_columns(
        pl.when(pl.col("model") == "a-70b")
        .then(pl.lit("true"))
        .otherwise(pl.col("prediction"))
        .alias("prediction")
    )
    frame.write_csv(rec)
    registry = pl.read_csv(reg)
    extra = registry.head(1).with_columns(
        pl.lit("lonely-3b").alias("model"),
        pl.lit("lonely").alias("family"),
        pl.lit(3.0).alias("params_b"),
    )
    pl.concat([registry, extra]).write_csv(reg)
    out = tmp_path / "out"
    assert main(["run", str(rec), "--registry", str(reg), "--out", str(out), *QUICK]) == 0
    results = json.loads((out / "results.json").read_text())
    _check_contract(results)
    solo_effect = results["scale_effect"]["per_task"]["solo"]
    assert solo_effect["decision"] == "not_estimable" and "only 1 model" in solo_effect["reason"]
    rows = {(r["model"], r["task"]): r for r in results["by_model_task"]}
    assert rows[("lonely-3b", "refusal")]["n_total"] == 1
    yes = [r for (m, _), r in rows.items() if m == "a-70b" and r["hit_rate"] is not None]
    assert yes and all(r["hit_rate"] == 1.0 and r["false_alarm_rate"] == 1.0 for r in yes)


@pytest.mark.e2e
def test_default_run_evaluates_hypotheses_sensitivity_and_operating_characteristics(quick_build):
    """results.json carries the declared hypotheses, the robustness refits and the operating characteristics."""
    from selfmodel.decisions.hypotheses import load_hypotheses

    results = json.loads((quick_build / "results.json").read_text())
    tasks = sorted(results["scale_effect"]["per_task"])
    hyp = results["hypotheses"]
    assert hyp["file"] == "selfmodel/data/hypotheses.toml" and len(hyp["sha256"]) == 64
    declared = load_hypotheses(ROOT / "analysis" / "data" / "hypotheses.toml")
    expected = []
    for h in declared:
        expected += [f"{h.name}[{t}]" for t in tasks] if h.label == "*" else [h.name]
    rows = {r["name"]: r for r in hyp["rows"]}
    assert sorted(rows) == sorted(expected)
    # the declared overall accuracy hypothesis uses the same default rule as the verdict
    overall = rows["accuracy_overall"]
    eff = results["scale_effect"]
    assert overall["decision"] == eff["decision"] and overall["mean"] == pytest.approx(eff["mean"])
    for t in tasks:
        assert rows[f"accuracy_by_task[{t}]"]["decision"] == eff["per_task"][t]["decision"]
    assert rows["dprime_overall"]["decision"] == results["sdt_effect"]["sensitivity"]["decision"]
    for r in hyp["rows"]:
        assert r["decision"] in DECISIONS
        # a row whose fit failed its gate is not decided: the rule's word and 'supported' kept apart
        said = r.get("decision_if_passed", r["decision"])
        assert r.get("supported_if_passed", r["supported"]) == (said == "improves")
        if r["decision"] == "not_decided":
            assert r["supported"] is None and r["finding"] is False
        assert r["finding"] == results["model_zoo"][r["model"]]["diagnostics"]["passed"]
        assert r["bayes_factor_10"] is None or r["bayes_factor_10"] > 0
    loo = hyp["scale_term_loo"]
    assert loo["without_scale_model"] == "pooled(random_effects=True)"
    assert loo["elpd_diff"] == pytest.approx(
        loo["with_scale"]["elpd_loo"] - loo["without_scale"]["elpd_loo"], abs=1e-5
    )
    sens = results["sensitivity"]
    assert [v["factor"] for v in sens["priors"]["variants"]] == [0.5, 2.0]
    assert sens["priors"]["main"]["decision"] == eff["decision"]
    variables = [v["variable"] for v in sens["scale_variable"]["variants"]]
    assert variables == ["params", "active_params", "capability"]
    closed = sorted(m["model"] for m in results["models"] if m["params_b"] is None)
    # derived checkpoints (issue 19) have a size but are kept off the scale axis
    # and are listed apart, with the same reason, wherever the scale axis drops models
    drv = results["scale_effect"].get("excluded_derived_checkpoints")
    for v in sens["scale_variable"]["variants"]:
        assert v.get("excluded_derived_checkpoints") == drv
    assert sens["scale_variable"]["variants"][0]["models_without_variable"] == closed
    assert eff["models_without_scale_variable"] == closed
    freq = results["frequentist"]
    assert freq["models_without_scale_variable"] == closed
    assert freq.get("excluded_derived_checkpoints") == drv
    changed = [v["label"] for v in sens["scale_variable"]["variants"] if v["matches_main"] is False]
    assert sens["scale_variable"]["changed"] == changed
    assert sens["scale_variable"]["verdict_holds"] == (not changed)
    curves = results["sdt_effect"]["curves"]
    assert sorted(curves["tasks"]) == tasks
    cal = results["operating_characteristics"]
    assert cal["complete"] and {a["arm"] for a in cal["arms"]} >= {"scale_null", "sdt_sbc"}
    nulls = [a for a in cal["arms"] if a["null"]]
    assert {a["arm"] for a in nulls} == {"scale_null", "sdt_null"}  # accuracy and d' slopes
    for a in nulls:  # the bar: a null slope is declared 'improves' in at most 5%
        assert a["n_fits"] >= 100 and a["improves_rate"]["rate"] <= 0.05 and a["null_check"]["passed"]


@pytest.mark.e2e
def test_no_robustness_skips_the_refits(tmp_path, capsys):
    rec, reg = _small_data(tmp_path)
    out = tmp_path / "out"
    assert main(["run", str(rec), "--registry", str(reg), "--out", str(out), *QUICK, "--no-report"]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["sensitivity"] is None
    assert results["hypotheses"]["scale_term_loo"] is None
    rows = {r["name"]: r for r in results["hypotheses"]["rows"]}
    # sdt was not in --models: its hypotheses are not estimable, with the reason
    assert rows["dprime_overall"]["decision"] == "not_estimable"
    assert "was not fitted" in rows["dprime_overall"]["reason"]
    assert rows["accuracy_overall"]["decision"] == results["scale_effect"]["decision"]


@pytest.mark.e2e
def test_self_vs_other_without_cross_predictions_is_skipped_with_reason(tmp_path, capsys):
    """Asking for a model the data cannot support: the run completes and says why."""
    rec, reg = _small_data(tmp_path)
    out = tmp_path / "out"
    argv = [str(rec), "--registry", str(reg), "--out", str(out), *QUICK]
    argv[argv.index("scale")] = "scale,self_vs_other"
    assert main(["run", *argv]) == 0
    results = json.loads((out / "results.json").read_text())
    svo = results["model_zoo"]["self_vs_other"]
    assert svo["fitted"] is False and "no cross-predictions" in svo["reason"]
    html = (out / "report.html").read_text()
    assert "was requested but not fitted" in html and "no cross-predictions" in html


@pytest.mark.e2e
def test_unchanged_rerun_with_robustness_is_byte_identical(build_copy, monkeypatch, capsys):
    """The default run (hypotheses, LOO, sensitivity refits) reuses everything on a rerun and
    writes the same bytes."""
    session_quick = ["--draws", "300", "--tune", "300", "--chains", "2"]  # as conftest.quick_build
    first = (build_copy / "results.json").read_bytes()
    monkeypatch.chdir(ROOT)
    assert main(["run", "--out", str(build_copy), *session_quick, "--no-report"]) == 0
    assert json.loads((build_copy / "run.json").read_text())["fit_reused"] is True
    assert (build_copy / "results.json").read_bytes() == first


#: A model name that is invalid mathtext: it must reach the figures as plain text.
MATH_NAME = "$\\oops{$-30b"


def _real_shaped(tmp_path: Path) -> tuple[Path, Path]:
    """Four models in two families (one family of one), one task of 10 items, 3 sizes."""
    import random

    rng = random.Random(1)
    skill = {"alpha-1b": 0.5, "alpha-8b": 0.7, "alpha-70b": 1.0, MATH_NAME: 0.8}
    lines = ["model,task,item_id,prediction,outcome"]
    for model, p in skill.items():
        for i in range(10):
            outcome = rng.random() < 0.5
            pred = outcome if rng.random() < p else not outcome
            lines.append(f"{model},arith,q{i},{str(pred).lower()},{str(outcome).lower()}")
    rec, reg = tmp_path / "logs.csv", tmp_path / "models.csv"
    rec.write_text("\n".join(lines) + "\n")
    reg.write_text(
        "model,family,params_b\nalpha-1b,alpha,1\nalpha-8b,alpha,8\nalpha-70b,alpha,\n"
        f"{MATH_NAME},beta,30\n"
    )
    return rec, reg


@pytest.mark.e2e
def test_small_real_shaped_design_runs_whole_pipeline_and_names_skipped(tmp_path, capsys):
    """A design many users have: every stage runs; what it cannot support is named, not a crash."""
    from selfmodel.analyses.frequentist import MIN_CLUSTERS_WILD

    rec, reg = _real_shaped(tmp_path)
    out = tmp_path / "out"
    code = main(["run", str(rec), "--registry", str(reg), "--out", str(out),
                 "--draws", "300", "--tune", "300", "--chains", "2"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "Traceback" not in captured.err
    results = json.loads((out / "results.json").read_text())
    _check_contract(results)
    d = results["data"]
    assert (d["records_read"], d["records_used"]) == (40, 40)
    freq = results["frequentist"]
    assert freq["estimable"] is True and freq["n_models"] == 3
    wild = freq["wild_bootstrap"]
    assert wild["estimable"] is False and f"at least {MIN_CLUSTERS_WILD}" in wild["reason"]
    assert freq["glm_task_slopes"]["estimable"] is True
    assert results["scale_effect"]["models_without_scale_variable"] == ["alpha-70b"]
    assert results["sensitivity"] is not None and results["design_sensitivity"] is not None
    html = (out / "report.html").read_text()
    assert "Not estimable on this design" in html
    assert "the wild cluster bootstrap needs at least" in html
    assert MATH_NAME in results["data"]["models"]  # and the figures drew it (no mathtext)
