"""One ECE per name (issue 53): each confidence-calibration error is named by what it bins, everywhere.

Issue 53's report printed, for one model and question set of a real study, "ECE 0.318" in
the skill table (bins of the confidence of the thresholded prediction: the figure the study's
authors report) and "ECE 0.467 [0.394, 0.528]" in the confidence-calibration-per-model table (bins of the
stated probability of success). Both were labelled "ECE". Now they are the "ECE of the
prediction's confidence" (``ece_prediction_confidence``) and the "ECE of the stated
probability" (``ece_stated_probability``): one measure per name in ``results.json`` and in
the report's text, and the same number for the same cell wherever a name is printed. The
data are the real hard/easy study of ``tests/fixtures/studies/real_hard_easy``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from selfmodel.analyses.confidence_calibration import confidence_calibration_table
from selfmodel.analyses.skill import confidence_calibration, skill_table
from selfmodel.common.paths import REPORT_QMD
from selfmodel.records.importers.mapping.records_apply import load_transform
from selfmodel.records.ingest import ingest
from selfmodel.report.sections import contrasts as contrasts_sec
from selfmodel.report.sections import skill as skill_sec
from selfmodel.report.sections.common import Report

HARD_EASY = Path(__file__).resolve().parents[1] / "fixtures" / "studies" / "real_hard_easy"
#: Every name a confidence-calibration error may have in results.json (``ece`` only as the first
#: name of the ECE of the prediction's confidence, in the skill and confidence_calibration rows).
ECE_KEYS = {"ece_stated_probability", "ece_prediction_confidence"}
NAMES = ("ECE of the stated probability", "ECE of the prediction's confidence")


@pytest.fixture(scope="module")
def study() -> dict[str, Any]:
    res = ingest([HARD_EASY / "llm-confidence-correct.csv"],
                 transform=load_transform(HARD_EASY / "study.toml"))
    return {"skill": skill_table(res.records), "confidence_calibration": confidence_calibration(res.records),
            "confidence_calibration_contrasts": confidence_calibration_table(res.records, by=("model", "task"),
                                                                             n_boot=100, seed=1)}


def _keys(node: Any, path: str = "") -> Iterator[tuple[str, str, Any]]:
    if isinstance(node, dict):
        for k, v in node.items():
            yield path, k, node
            yield from _keys(v, f"{path}/{k}")
    elif isinstance(node, list):
        for v in node:
            yield from _keys(v, path)


def test_the_two_ece_differ_in_this_study_and_each_is_one_number_per_cell(study) -> None:
    """Same cell, same name, same number; the two measures differ, so they need two names."""
    groups = {(g["model"], g["task"]): g for g in study["confidence_calibration_contrasts"]["groups"]}
    cells = {(c["model"], c["task"]): c for c in study["confidence_calibration"]["cells"]}
    differ = 0
    for r in study["skill"]:
        key = (r["model"], r["task"])
        g = groups[key]
        assert r["ece_prediction_confidence"] == pytest.approx(g["ece_prediction_confidence"], abs=1e-12)
        assert cells[key]["ece_prediction_confidence"] == pytest.approx(r["ece_prediction_confidence"],
                                                                        abs=1e-12)
        assert g["ece_prediction_confidence_low"] <= g["ece_prediction_confidence"] <= (
            g["ece_prediction_confidence_high"])
        differ += abs(g["ece_stated_probability"] - g["ece_prediction_confidence"]) > 0.01
    assert differ == 3  # of 8 cells: where some stated probability is below 0.5 (LSAT-AR)


def test_results_keys_name_each_ece_by_what_it_bins(study) -> None:
    seen = set()
    for path, key, node in _keys(study):
        if "ece" not in key.split("_") and not key.startswith("ece"):
            continue
        base = re.sub(r"_(low|high)$", "", key)
        if base == "ece":  # the first name of one measure, kept beside its new name
            assert path.startswith(("/skill", "/confidence_calibration/")), path
            assert node["ece"] == node["ece_prediction_confidence"], path
            continue
        assert base in ECE_KEYS, (path, key)
        seen.add(base)
    assert seen == ECE_KEYS
    metrics = {c["metric"] for c in study["confidence_calibration_contrasts"]["contrasts"]}
    assert metrics == {"ece_stated_probability", "brier", "overconfidence"}
    cal = study["confidence_calibration_contrasts"]
    assert cal["bin_edges"] == pytest.approx([b / 10 for b in range(11)])
    assert set(cal["measures"]) == ECE_KEYS


def _ece_mentions(text: str) -> list[str]:
    """Each place the text says 'ECE', with what follows it."""
    return [text[m.start():m.start() + 40] for m in re.finditer(r"\bECE\b", text)]


def test_the_report_never_prints_an_ece_without_its_name(study) -> None:
    rep = Report(study, {}, None, HARD_EASY, 6.3, 8.5)
    texts = {"skill intro": skill_sec.intro(rep), "skill table": skill_sec.table(rep),
             "confidence calibration per model": contrasts_sec.confidence_calibration(rep),
             "report source": REPORT_QMD.read_text()}
    named = 0
    for where, text in texts.items():
        plain = text.replace("\\", "")  # the markdown escapes of the tables
        for mention in _ece_mentions(plain):
            assert mention.startswith(NAMES), (where, mention)
            named += 1
    assert named >= 6
    # the binning is stated where the numbers are
    assert "10 equal-width bins over [0, 1], edges 0, 0.1, 0.2, ..., 1" in texts["skill intro"].replace("\\", "")
    assert "10 equal-width bins over [0, 1]" in texts["confidence calibration per model"].replace("\\", "")


def test_the_authors_figure_and_the_stated_probability_s_are_both_in_the_per_model_table(study) -> None:
    """gpt-4o on LSAT-AR: the skill table's number is in the per-model table under its own name."""
    rep = Report(study, {}, None, HARD_EASY, 6.3, 8.5)
    table = contrasts_sec.confidence_calibration(rep).replace("\\", "")
    header = next(line for line in table.splitlines() if line.startswith("| model | task"))
    assert "ECE of the stated probability | ECE of the prediction's confidence" in header
    (row,) = [r for r in study["skill"] if (r["model"], r["task"]) == ("gpt-4o", "lsat_ar_test")]
    line = next(x for x in table.splitlines() if x.startswith("| gpt-4o | lsat_ar_test"))
    assert f"{row['ece_prediction_confidence']:.3f} [" in line
