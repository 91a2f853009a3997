"""Issue 29: the condition column, the contrast model and confidence calibration per model.

Fast tests check the contract, the tables, the model's structure and the confidence-calibration
numbers against hand computations; the tests marked ``ci`` fit the contrast model (to
simulated data with known truth from ``validation/contrast_study.py``'s own generator, and
to the 0-10 study fixture through ``selfmodel run``).
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from selfmodel.analyses.confidence_calibration import confidence_calibration_table, metrics
from selfmodel.analyses.contrasts import contrast_section, unfit_reason
from selfmodel.cli import main
from selfmodel.decisions.hypotheses import DecisionRule
from selfmodel.decisions.status import status_lines
from selfmodel.fitting.fitter import Fitter
from selfmodel.models import contrast
from selfmodel.records.cells import CONDITION_CELL_KEY, to_cells, to_condition_cells
from selfmodel.records.contract import KEY, RECORD_SCHEMA
from selfmodel.records.importers.mapping.records_apply import load_transform
from selfmodel.records.ingest import ingest
from selfmodel.report.sections import contrasts as contrasts_section
from selfmodel.report.sections.common import Report

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "tests" / "fixtures" / "studies" / "confidence_0_10"
sys.path.insert(0, str(ROOT / "validation"))
import contrast_study  # noqa: E402  (the independent generator of the study)

pytestmark = pytest.mark.filterwarnings(
    "ignore:PyTensor could not link to a BLAS:UserWarning"
)


def _conditions_study():
    return ingest([CONF / "records.csv"], transform=load_transform(CONF / "study_conditions.toml"))


def test_condition_is_a_record_column_and_part_of_the_key() -> None:
    assert RECORD_SCHEMA["condition"] == pl.Utf8()
    assert "condition" in KEY


def test_one_item_under_two_conditions_is_two_records_not_a_conflict(tmp_path: Path) -> None:
    log = tmp_path / "r.csv"
    log.write_text("model,task,item_id,condition,prediction,outcome\n"
                   "m,t,q1,before,true,true\nm,t,q1,after,true,false\n")
    res = ingest([log])
    assert res.summary["records_used"] == 2 and res.summary["records_quarantined"] == 0
    assert sorted(res.records["condition"].to_list()) == ["after", "before"]


def test_without_a_condition_column_the_records_and_cells_are_as_before(tmp_path: Path) -> None:
    log = tmp_path / "r.csv"
    log.write_text("model,task,item_id,prediction,outcome\nm,t,q1,true,true\nm,t,q2,true,false\n")
    res = ingest([log])
    assert res.records["condition"].null_count() == 2
    assert to_cells(res.records).columns == to_cells(res.records.drop("condition")).columns
    assert "condition" not in to_cells(res.records).columns


def test_the_conditions_mapping_gives_one_task_two_conditions_and_hand_counts() -> None:
    """Per model x condition, self-predictions right, counted from the CSV by the csv module."""
    res = _conditions_study()
    recs = res.records
    assert recs["task"].unique().to_list() == ["will_i_be_right"]
    expected: dict[tuple[str, str], list[int]] = {}
    with (CONF / "records.csv").open() as fh:
        for r in csv.DictReader(fh):
            said_right = int(r["confidence"]) / 10 >= 0.5
            cell = expected.setdefault((r["model_name"], r["condition"]), [0, 0])
            cell[0] += said_right == (r["is_correct"] == "True")
            cell[1] += 1
    pooled = to_cells(recs)
    assert pooled.height == 2  # conditions pooled: one cell per model, as the scale models read
    split = to_cells(recs, keys=CONDITION_CELL_KEY)
    got = {(r["model"], r["condition"]): [r["k"], r["n"]] for r in split.iter_rows(named=True)}
    assert got == expected
    items = to_condition_cells(recs)
    assert items["n"].sum() == 48 and items.height == 24  # 2 repeats summed per item


def test_a_predicted_wrong_keeps_the_contracts_confidence() -> None:
    """q3 of gpt-4o before solving, iteration 1: stated 0/10 -> 'I will be wrong' with 1.0."""
    recs = _conditions_study().records
    row = recs.filter((pl.col("model") == "gpt-4o") & (pl.col("item_id") == "q3")
                      & (pl.col("condition") == "before_solving") & (pl.col("sample") == 1))
    assert row.select("prediction", "confidence").row(0) == ("false", 1.0)


def test_contrast_model_structure_and_named_pairs() -> None:
    data = pl.DataFrame({"model": ["a", "b"] * 6, "task": ["t"] * 12,
                         "condition": ["x"] * 4 + ["y"] * 4 + ["z"] * 4,
                         "item_id": ["1", "1", "2", "2"] * 3, "n": [2] * 12, "k": [1] * 12})
    m = contrast.build(data)
    assert list(m.coords["condition_pair"]) == ["y - x", "z - x", "z - y"]
    assert list(m.coords["model_pair"]) == ["b - a"]
    assert "contrast_task" not in m.named_vars  # one task: nothing to contrast
    assert np.isfinite(m.compile_logp(mode="FAST_COMPILE")(m.initial_point()))


def test_nothing_to_contrast_is_said_not_fitted() -> None:
    assert unfit_reason({"condition": ["(none)"], "model": ["a"], "task": ["t"]}) == (
        "one model, one task and one condition: there is nothing to contrast")
    empty = pl.DataFrame(schema=RECORD_SCHEMA)
    section = contrast_section(empty, rule=DecisionRule(), fitter=Fitter(1))
    assert section["reason"] == "no readable self-prediction" and section["contrasts"] == {}


def test_calibration_per_model_and_condition_matches_hand_computation() -> None:
    """ECE, Brier and overconfidence of gpt-5 after solving, from the CSV by hand.

    p = stated chance (confidence / 10), y = answered right; ECE over 10 equal-width bins
    (a stated 10/10 falls in the last bin).
    """
    table = confidence_calibration_table(_conditions_study().records, by=("model", "condition"), n_boot=200)
    with (CONF / "records.csv").open() as fh:
        rows = [r for r in csv.DictReader(fh)
                if (r["model_name"], r["condition"]) == ("gpt-5", "after_solving")]
    p = [int(r["confidence"]) / 10 for r in rows]
    y = [1.0 if r["is_correct"] == "True" else 0.0 for r in rows]
    bins: dict[int, list[tuple[float, float]]] = {}
    for pi, yi in zip(p, y, strict=True):
        bins.setdefault(min(int(round(pi * 10, 9)), 9), []).append((pi, yi))
    ece = sum(len(b) / len(p) * abs(sum(x for x, _ in b) / len(b) - sum(v for _, v in b) / len(b))
              for b in bins.values())
    brier = sum((pi - yi) ** 2 for pi, yi in zip(p, y, strict=True)) / len(p)
    over = sum(p) / len(p) - sum(y) / len(y)
    (g,) = [g for g in table["groups"] if (g["model"], g["condition"]) == ("gpt-5", "after_solving")]
    assert (g["n"], g["ece_stated_probability"], g["brier"], g["overconfidence"]) == (
        len(p), pytest.approx(ece), pytest.approx(brier), pytest.approx(over))
    assert g["ece_stated_probability_low"] <= g["ece_stated_probability"] <= g["ece_stated_probability_high"]
    assert g["brier_low"] < g["brier_high"] and "ece" not in g
    assert sum(g["bin_n"]) == len(p)
    kinds = {(c["factor"], c["metric"]) for c in table["contrasts"]}
    assert kinds == {(f, m) for f in ("model", "condition") for m in ("ece_stated_probability", "brier", "overconfidence")}


def test_a_better_calibrated_model_is_decided_to_improve() -> None:
    """Model b states the true chance, model a always says 0.95: b's ECE reduction improves."""
    rng = np.random.default_rng(3)
    truth = rng.uniform(0.1, 0.9, 400)
    rows = []
    for model, stated in (("a", np.full(400, 0.95)), ("b", truth)):
        right = rng.random(400) < truth
        for i in range(400):
            rows.append({"model": model, "task": "t", "item_id": str(i), "predictor": model,
                         "prediction": "true", "outcome": "true" if right[i] else "false",
                         "correct": bool(right[i]), "status": "ok",
                         "confidence": float(stated[i])})
    table = confidence_calibration_table(pl.DataFrame(rows), n_boot=300)
    (ece,) = [c for c in table["contrasts"] if c["metric"] == "ece_stated_probability"]
    assert ece["contrast"] == "b - a" and ece["decision"] == "improves"
    assert metrics(np.array([0.5]), np.array([1.0]))["brier"] == 0.25


def test_status_says_the_scale_question_is_not_estimable_and_leads_with_the_contrasts() -> None:
    d = {"decision": "improves", "mean": 0.6, "hdi_low": 0.2, "hdi_high": 1.0, "hdi_prob": 0.94}
    results = {"diagnostics": {"max_rhat": None, "min_ess_bulk": None},
         "scale_effect": {"reason": "only 0 model(s) have 'params_b'",
                          "models_without_scale_variable": ["a", "b"],
                          "registry_column": "params_b"},
         "contrasts": {"reason": None, "finding": True, "rope": 0.1,
                       "contrasts": {"model": {"b - a": d}, "condition": {}, "task": {}}}}
    lines = status_lines(results)
    assert [x["key"] for x in lines] == ["not_fitted", "contrasts"]
    assert lines[0]["text"].startswith("The scale question is not estimable: ")
    assert "between models, b - a improves (+0.60, 94% HDI [+0.20, +1.00])" in lines[1]["text"]
    # a fit that failed its gate decides nothing (issue 28.4): the checks, the estimates as computed
    results["contrasts"]["finding"] = False
    results["contrasts"]["diagnostics"] = {"passed": False, "checks": [
        {"name": "r_hat", "passed": False, "value": 1.03, "threshold": "<= 1.01"}]}
    text = status_lines(results)[1]["text"]
    assert text.startswith("The contrast model's fit failed its diagnostics (max R-hat 1.03 "
                           "against <= 1.01), so no contrast is decided")
    assert "between models, b - a (+0.60, 94% HDI [+0.20, +1.00])" in text
    assert "improves" not in text
    # at the exploratory settings the decisions are shown, labelled
    results["settings"] = {"preset": "exploratory"}
    text = status_lines(results)[2]["text"]  # after the exploratory line and not_fitted
    assert "b - a improves" in text and text.endswith("these are not findings.")
    del results["contrasts"], results["settings"]
    assert status_lines(results)[0]["text"].startswith("No model was fitted: ")


# --------------------------------------------------------------------------- fitted (ci)


@pytest.mark.ci
def test_two_closed_models_three_conditions_recover_the_known_contrasts() -> None:
    """validation/contrast_study.py's generator, recovery arm, one data set (seed 0).

    Truth: conditions +0.5 / 0 / -0.5 logits, models -0.3 / +0.3. The fit passes its
    diagnostics, every true contrast lies inside its 94% HDI, and the largest condition
    contrast and the model contrast are decided credible in the true direction.
    """
    design = contrast_study.ARMS["recovery"]
    settings = contrast_study.SamplerSettings(draws=1000, tune=1000, chains=4, cores=1,
                                              target_accept=0.95)
    section = contrast_section(contrast_study.generate(design, 0), rule=DecisionRule(),
                               fitter=Fitter(0, settings))
    assert section["finding"]
    truth = design.truth()
    for factor in ("condition", "model"):
        for label, true in truth[factor].items():
            d = section["contrasts"][factor][label]
            assert d["hdi_low"] <= true <= d["hdi_high"], (label, d, true)
    assert section["contrasts"]["condition"]["no_reasoning - after_solving"]["decision"] in (
        "worsens", "credibly_negative")
    assert section["contrasts"]["model"]["gpt-5 - gpt-4o"]["decision"] in (
        "improves", "credibly_positive")


@pytest.mark.ci
def test_conditions_study_run_leads_with_the_contrasts(tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    code = main(["run", str(CONF), "--mapping", str(CONF / "study_conditions.toml"),
                 "--out", str(out), "--no-power", "--no-robustness", "--no-report", "--quiet"])
    printed = capsys.readouterr().out.splitlines()
    assert code == 0
    results = json.loads((out / "results.json").read_text())
    assert [s["key"] for s in results["status"][:2]] == ["not_fitted", "contrasts"]
    assert printed[:2] == [s["text"] for s in results["status"][:2]]
    c = results["contrasts"]
    assert c["levels"]["condition"] == ["after_solving", "before_solving"]
    assert set(c["contrasts"]["model"]) == {"gpt-5 - gpt-4o"}
    assert results["confidence_calibration_contrasts"]["by"] == ["model", "condition"]


def _report(results: dict) -> Report:
    return Report(results, {}, None, ROOT, 6.3, 8.5)


def test_report_text_shows_every_decided_contrast_and_the_gate() -> None:
    d = {"decision": "worsens", "mean": -0.71, "hdi_low": -1.2, "hdi_high": -0.3,
         "hdi_prob": 0.94, "prob_positive": 0.01}
    results = {"contrasts": {"reason": None, "finding": False, "rope": 0.1, "why_fitted": "x",
                       "units": "logits", "contrasts": {"condition": {"b - a": d}, "model": {}}}}
    text = contrasts_section.contrasts(_report(results))
    assert "| condition | b \\- a | not decided \\(its fit failed the diagnostics gate\\) | -0.71 |" in text
    assert "worsens" not in text and "diagnostics gate" in text and "94% HDI" in text
    results["contrasts"]["finding"] = True
    text = contrasts_section.contrasts(_report(results))
    assert "| condition | b \\- a | worsens | -0.71 | [-1.20, -0.30] | 0.01 |" in text
    table = confidence_calibration_table(_conditions_study().records, by=("model",), n_boot=50)
    rep = _report({"confidence_calibration_contrasts": table})
    cal = contrasts_section.confidence_calibration(rep)
    assert cal.count("\n| gpt") == 2  # one row per model
    assert [cal.count(f"\n| {m} | gpt") for m in ("ECE of the stated probability", "Brier",
                                                   "overconfidence")] == [1, 1, 1]
    fig = contrasts_section.reliability_figure(rep)
    assert len(fig.axes[0].lines) == 3  # the diagonal and one curve per model


def test_report_says_why_there_are_no_contrasts() -> None:
    """Absent (no fitting stage), null (nothing for them to add), or not requested."""
    assert contrasts_section.contrasts(_report({})).startswith("No contrasts in these results")
    assert contrasts_section.contrasts(_report({"contrasts": None})) == (
        "The contrast model was not fitted: the scale model was fitted and the records have "
        "no conditions.")
    skipped = {"contrasts": {"reason": "not requested (--no-contrasts), although the scale "
                                       "model was not fitted", "contrasts": {}},
               "confidence_calibration_contrasts": None}
    assert "\\-\\-no\\-contrasts" in contrasts_section.contrasts(_report(skipped))
    assert contrasts_section.confidence_calibration(_report(skipped)).endswith("(no reliability diagram).")
    assert contrasts_section.reliability_figure(_report(skipped)) is None


def test_the_contrast_study_runs_seeds_start_to_start_plus_sims_and_resumes(tmp_path: Path, monkeypatch) -> None:
    """``--start I --sims N`` fits seeds I .. I+N-1 only, so pieces on two cores do not overlap;
    a seed already in the results file is not fitted again (the fit is faked: no compile)."""
    fitted: list[int] = []

    def fake(arm, seed, settings, rule):
        fitted.append(seed)
        row = {"factor": "condition", "contrast": "b - a", "truth": 0.0, "covered": True, "credible": False}
        return {"arm": arm, "seed": seed, "settings": contrast_study.asdict(settings), "cpu_s": 1.0,
                "passed": True, "max_rhat": 1.0, "min_ess_bulk": 1000.0, "divergences": 0,
                "contrasts": [row]}

    monkeypatch.setattr(contrast_study, "one", fake)
    monkeypatch.setattr(contrast_study, "versions", lambda: {})
    contrast_study.main(["--arms", "null", "--start", "5", "--sims", "2", "--out", str(tmp_path)])
    assert fitted == [5, 6]
    contrast_study.main(["--arms", "null", "--start", "4", "--sims", "3", "--out", str(tmp_path)])
    assert fitted == [5, 6, 4]
    summary = json.loads((tmp_path / "contrast_study.json").read_text())
    assert summary["arms"]["null"]["n_datasets"] == 3


def test_the_shipped_contrast_operating_characteristics_are_those_of_the_committed_records() -> None:
    """``analysis/data/contrast_operating_characteristics.json`` (what the validation map reads) summarises
    exactly ``validation/results/contrast_study.jsonl``: records added without ``--ship`` fail here."""
    import hashlib

    from selfmodel.analyses.contrasts import OPERATING_CHARACTERISTICS_DATA
    from selfmodel.common.paths import shipped_study

    shipped = shipped_study(OPERATING_CHARACTERISTICS_DATA)
    assert shipped["available"]
    lines = ROOT / shipped["source"]
    assert hashlib.sha256(lines.read_bytes()).hexdigest() == shipped["source_sha256"]
    runs = [json.loads(x) for x in lines.read_text().splitlines()]
    assert json.loads(json.dumps(contrast_study.summarise(runs))) == shipped["arms"]
    assert {a: r["n_datasets"] for a, r in shipped["arms"].items()} == {"null": 200, "misspecified": 200,
                                                                        "recovery": 100}
