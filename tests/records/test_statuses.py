"""Rows with nothing to score (issue 53): ``not_asked`` and ``unanswered``, each counted by name.

A control condition asks no self-prediction: its rows are not predictions, not unreadable and
not wrong in strict accuracy. A row whose question the model did not answer has no outcome:
it is counted as ``unanswered``, not quarantined as ``no outcome``. The data set is a small
control-condition study written here: two models, one task asked under a ``self`` condition
(a self-prediction) and a ``control`` condition (no prediction asked), and one task of
control rows only; a few rows of each model are unanswered.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from selfmodel.analyses.describe import by_model_task, by_task
from selfmodel.analyses.skill import skill_table
from selfmodel.decisions.status import low_yield_sentence
from selfmodel.pipeline.results import data_section
from selfmodel.records.cells import to_cells
from selfmodel.records.contract import EXCLUDED, STATUS_MEANING, STATUSES
from selfmodel.records.importers.mapping.records_apply import load_transform
from selfmodel.records.ingest import ingest
from selfmodel.report.sections import data as data_sec
from selfmodel.report.sections import skill as skill_sec
from selfmodel.report.sections.common import Report

N_ITEMS = 12
MODELS = ("m-small", "m-large")


def control_study(folder: Path) -> Path:
    """JSONL of the control-condition study (module docstring); returns its path.

    Per model: 12 items asked under ``self`` (readable; the last two unanswered), the same
    12 under ``control`` (``not_asked``: no prediction, the outcome still logged) and 6
    items of task ``baseline`` under ``control`` only.
    """
    rows = []
    for m in MODELS:
        for i in range(N_ITEMS):
            outcome = i % 3 != 0
            unanswered = i >= N_ITEMS - 2
            rows.append({"model": m, "task": "qa", "item_id": str(i), "condition": "self",
                         "prediction": i % 2 == 0, "confidence": 0.8,
                         "outcome": None if unanswered else outcome,
                         "status": "unanswered" if unanswered else "ok"})
            rows.append({"model": m, "task": "qa", "item_id": str(i), "condition": "control",
                         "prediction": None, "outcome": outcome, "status": "not_asked"})
        for i in range(6):
            rows.append({"model": m, "task": "baseline", "item_id": str(i), "condition": "control",
                         "prediction": None, "outcome": True, "status": "not_asked"})
    path = folder / "control.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def study(tmp_path: Path):
    return ingest([control_study(tmp_path)])


def test_the_contract_names_both_statuses_and_what_each_means() -> None:
    assert {"not_asked", "unanswered"} <= set(STATUSES)
    assert set(STATUS_MEANING) == set(STATUSES)
    assert EXCLUDED not in STATUSES  # an accounting count, not a record status


def test_not_asked_and_unanswered_rows_are_kept_and_counted_by_name(study) -> None:
    s = study.summary
    per_model_qa = 2 * N_ITEMS  # self + control
    assert s["records_read"] == len(MODELS) * (per_model_qa + 6)
    assert s["records_quarantined"] == 0  # unanswered is not 'no outcome'
    assert s["quarantine_reasons"] == {}
    assert s["statuses"] == {"ok": len(MODELS) * (N_ITEMS - 2),
                             "unanswered": len(MODELS) * 2,
                             "not_asked": len(MODELS) * (N_ITEMS + 6)}
    assert s["unreadable_predictions"] == 0
    data = data_section(s)
    assert data["statuses"] == s["statuses"] and data["unreadable_predictions"] == 0


def test_nothing_to_score_is_neither_unreadable_nor_wrong_in_strict_accuracy(study) -> None:
    cells = to_cells(study.records)
    qa = cells.filter(pl.col("task") == "qa")
    assert qa["n_total"].to_list() == [N_ITEMS - 2] * 2  # the asked, answered rows only
    assert qa["n_unreadable"].to_list() == [0, 0]
    assert qa["n_not_asked"].to_list() == [N_ITEMS] * 2
    assert qa["n_unanswered"].to_list() == [2, 2]
    for row in by_model_task(cells):
        if row["task"] == "qa":
            assert row["accuracy_strict"] == row["accuracy"]  # control rows are not wrong
            assert row["n_not_asked"] == N_ITEMS and row["n_unanswered"] == 2
    tasks = {t["task"]: t for t in by_task(cells)}
    assert tasks["baseline"]["n_total"] == 0 and tasks["baseline"]["n_not_asked"] == 12
    assert tasks["qa"]["n_unreadable"] == 0


def test_a_cell_of_control_rows_only_says_no_prediction_was_asked(study) -> None:
    rows = {(r["model"], r["task"]): r for r in skill_table(study.records)}
    base = rows[("m-small", "baseline")]
    assert base["n"] == 0 and base["accuracy"] is None
    assert "no prediction was asked (6 rows not_asked" in base["sdt_note"]
    assert "binary" not in base["sdt_note"]
    qa = rows[("m-small", "qa")]
    assert qa["binary"] and qa["n"] == N_ITEMS - 2 and qa["n_not_asked"] == N_ITEMS


def test_the_report_counts_each_status_by_name_and_not_as_unreadable(study) -> None:
    results = {"data": data_section(study.summary), "skill": skill_table(study.records),
               "tasks": by_task(to_cells(study.records)), "confidence_calibration": {}}
    rep = Report(results, {}, None, Path("."), 6.3, 8.5)
    text = data_sec.accounting(rep)
    assert "`not_asked` | 36 |" in text and "`unanswered` | 4 |" in text
    assert "status `unparsed`, `refused` or `error`): 0" in text
    tasks = data_sec.tasks_table(rep)
    assert "not asked" in tasks.splitlines()[0] and "unanswered" in tasks.splitlines()[0]
    assert "no prediction was asked" in skill_sec.intro(rep)


def test_a_mapping_s_excluded_rows_are_counted_not_quarantined(tmp_path: Path) -> None:
    """A records mapping's ``[[rule]]`` that leaves rows out: counted by rule, not quarantined."""
    path = control_study(tmp_path)
    mapping = tmp_path / "study.toml"
    mapping.write_text('format = "records"\n\n[[rule]]\ncolumn = "condition"\n'
                       'equals = "control"\nthen = "excluded"\n')
    s = ingest([path], transform=load_transform(mapping)).summary
    assert s["records_used"] < s["records_read"] / 2  # most rows left out, by the filter's rule:
    assert low_yield_sentence(s) is None  # not a low yield
    assert s["records_excluded"] == len(MODELS) * (N_ITEMS + 6)
    (reason,) = s["excluded_reasons"]
    assert "control" in reason and s["excluded_reasons"][reason] == len(MODELS) * (N_ITEMS + 6)
    assert s["records_quarantined"] == 0 and "not_asked" not in s["statuses"]
    assert s["records_read"] == (s["records_used"] + s["records_quarantined"]
                                 + s["records_duplicate"] + s["records_excluded"])


def test_a_power_design_from_a_control_study_counts_no_control_row_as_a_repeat(tmp_path: Path) -> None:
    """``selfmodel power --template``: the control rows are neither items nor repeats."""
    from selfmodel.power.design_from_data import design_from_template

    rows = [json.loads(x) for x in control_study(tmp_path).read_text().splitlines()]
    rows += [dict(r, model="m-mid") for r in rows if r["model"] == "m-small"]
    path = tmp_path / "control3.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "registry.csv").write_text(
        "model,family,params_b\nm-small,f,1\nm-mid,f,10\nm-large,f,100\n")
    design = design_from_template([path], tmp_path / "registry.csv")
    assert design.repeats == 1  # each item asked once per model under 'self'
    (qa,) = [t for t in design.tasks if t.name == "qa"]
    assert qa.items == N_ITEMS - 2 and qa.unreadable == 0.0  # the two unanswered items have no score
