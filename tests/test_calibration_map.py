"""Which decisions have a calibration study (analysis/decisions/calibration_map.py) and what the
report says of them (sections.calibration.decisions_map): issue 28.6."""

from __future__ import annotations

import copy
import json
from dataclasses import asdict
from typing import Any

from selfmodel.analyses.calibration_contrasts import calibration as calibration_contrast_calibration
from selfmodel.analyses.contrasts import calibration as contrast_calibration
from selfmodel.analyses.privileged import calibration as privileged_calibration
from selfmodel.analyses.training import null_calibration
from selfmodel.decisions.calibration_map import CHECKS, KINDS, calibration_map
from selfmodel.fitting.fit import SamplerSettings
from selfmodel.report.sections import calibration as section
from selfmodel.report.sections.common import Report
from selfmodel.robustness.stage import calibration_study


def _arm(n: int, target: int, truth: float = 0.0, fi: float = 0.01, cov: float = 0.94) -> dict[str, Any]:
    o = {"hdi94_coverage": cov, "hdi94_coverage_ci": [cov - 0.03, cov + 0.03], "hdi94_coverage_pm": 0.03}
    o |= {"false_improves": fi, "false_improves_ci": [0.0, fi + 0.02], "false_improves_pm": 0.01} if not truth \
        else {"improves_rate": 0.8, "improves_rate_ci": [0.7, 0.9], "improves_rate_pm": 0.1, "false_improves": None}
    return {"n": n, "target_n": target, "complete": n >= target, "truth": truth, "overall": o}


def _results(**arms: dict[str, Any]) -> dict[str, Any]:
    return {"scale_effect": {"decision": "improves"},
            "sdt_effect": {"sensitivity": {"decision": "improves"}, "bias": {"decision": "x"}},
            "calibration_study": {"pipeline": {"settings": asdict(SamplerSettings()), "arms": arms}}}


def test_accuracy_is_checked_only_with_all_three_checks_complete_at_the_pipeline_settings():
    full = {"default:accuracy": _arm(200, 200), "default:accuracy:clustered": _arm(200, 200),
            "default:accuracy:slope0.4": _arm(100, 100, truth=0.4)}
    by = {r["key"]: r for r in calibration_map(_results(**full))}
    acc = by["accuracy"]
    assert acc["status"] == "checked" and acc["missing"] == [] and acc["in_this_run"]
    assert {a["arm"]: a["check"] for a in acc["arms"]} == {
        "default:accuracy": "null", "default:accuracy:clustered": "misspecified",
        "default:accuracy:slope0.4": "coverage"}
    assert by["dprime"]["status"] == "none" and by["dprime"]["missing"] == list(CHECKS)
    # a check not run to its target, or run at other settings, makes it partial
    part = copy.deepcopy(full)
    part["default:accuracy:clustered"] = _arm(40, 200)
    acc = {r["key"]: r for r in calibration_map(_results(**part))}["accuracy"]
    assert acc["status"] == "partial" and acc["missing"] == [] and "not yet run" in acc["notes"][0]
    other = _results(**full)
    other["calibration_study"]["pipeline"]["settings"]["draws"] = 1000
    acc = {r["key"]: r for r in calibration_map(other)}["accuracy"]
    assert acc["status"] == "partial" and all(a["at_pipeline_settings"] is False for a in acc["arms"])
    # no coverage arm: partial, and the missing check is named
    del part["default:accuracy:slope0.4"]
    acc = {r["key"]: r for r in calibration_map(_results(**part))}["accuracy"]
    assert acc["missing"] == ["coverage"]


def test_a_run_without_those_sections_still_maps_the_shipped_studies():
    """The pipeline passes the shipped studies: a run that fitted no training or contrast model
    (the default data has no conditions) still shows their calibration, marked not in this run."""
    from selfmodel.pipeline.results import shipped_studies

    rows = {r["key"]: r for r in calibration_map({"scale_effect": {"decision": "x"}}, shipped_studies())}
    assert rows["contrasts"]["arms"] and not rows["contrasts"]["in_this_run"]
    assert rows["privileged"]["status"] == "checked" and rows["accuracy"]["in_this_run"]
    assert {a["arm"] for a in rows["accuracy"]["arms"]} >= {"default:accuracy", "seb:accuracy"}
    assert calibration_map({})[0]["arms"] == []  # without studies: the results' own sections (none)


def test_the_shipped_studies_fill_the_map_and_the_report_names_what_has_no_calibration():
    """Every shipped study lands in its row; the kinds no study covers are named as such."""
    results = _results()
    results["calibration_study"] = calibration_study()
    results["training_effect"] = {"trained": {"decision": "x"}, "null_calibration": null_calibration(),
                                  "privileged_access": {"mean": {"decision": "x"},
                                                        "calibration": privileged_calibration()}}
    results["contrasts"] = {"contrasts": {"model": {}}, "calibration": contrast_calibration()}
    results["calibration_contrasts"] = {"contrasts": [], "calibration": calibration_contrast_calibration()}
    rows = {r["key"]: r for r in calibration_map(results)}
    assert set(rows) == {k.key for k in KINDS}
    assert rows["privileged"]["status"] == "checked"  # bootstrap: null, truth and misspecified arms
    assert all(a["n"] == 300 for a in rows["privileged"]["arms"])  # data sets, not data sets x families
    assert {a["check"] for a in rows["contrasts"]["arms"]} == set(CHECKS)
    # 60 null data sets cannot show a rate below 5%: short of the default target, so partial
    assert rows["contrasts"]["status"] == "partial" and rows["contrasts"]["missing"] == []
    assert rows["training"]["missing"] == ["coverage", "misspecified"]
    assert rows["training"]["arms"][0]["at_pipeline_settings"] is False  # 2 x 1000 draws
    assert rows["confounds"]["status"] == "none" and not rows["confounds"]["in_this_run"]
    cc = rows["calibration_contrasts"]  # the item bootstrap's own study: null, truth, clustered
    assert cc["status"] == "checked" and {a["check"] for a in cc["arms"]} == set(CHECKS)
    assert "of data sets have one or more" in next(a for a in cc["arms"] if a["check"] == "null")["measure"]
    text = section.decisions_map(Report(json.loads(json.dumps({"calibration_map": list(rows.values())})),
                                        {}, None, None, 6.3, 8.5)).replace("\\", "")  # markdown escapes
    assert "**No calibration** for:" in text and "within- vs between-family slope" in text
    assert "self vs other" in text.split("**No calibration** for:")[1]
    assert "calibration differences" not in text.split("**No calibration** for:")[1].split(".")[0]
    assert "(other sampler settings)" in text  # the training null study
    assert "training effect" in text.split("Partly calibrated:")[1]
    # a kind that gains a study leaves the "no calibration" sentence
    rows["confounds"]["status"] = "checked"
    again = section.decisions_map(Report({"calibration_map": list(rows.values())}, {}, None, None, 6.3, 8.5)
                                  ).replace("\\", "")
    assert "scale slope without the family" not in again.split("Partly calibrated:")[0].split("**No calibration**")[1]


def test_pipeline_table_reads_a_known_slope_arm_as_coverage_and_power():
    """A non-null arm has no false rate: its 'improves' rate is power, its verdict coverage only."""
    shipped = calibration_study()["pipeline"]
    pc = copy.deepcopy(shipped)
    arm = _arm(100, 100, truth=0.4, cov=0.95)
    arm |= {"generator": "cells_generator.heavy_tailed: slope 0.4", "diagnostics_failed": 0,
            "versions": [{"pymc": "6.4.0", "nutpie": "0.16.11"}], "records_without_versions": 0}
    arm["t0"] = {"n": 100, "hdi94_coverage": 0.95, "hdi94_coverage_ci": [0.89, 0.98], "false_improves": None,
                 "improves_rate": 0.7, "improves_rate_ci": [0.6, 0.8]}
    pc["arms"]["default:accuracy:slope0.4"] = arm
    bad = copy.deepcopy(arm)
    bad["overall"]["hdi94_coverage"] = 0.80
    pc["arms"]["default:dprime:slope0.4"] = bad
    results = {"calibration_study": {"pipeline": pc},
               "fit": {"versions": {"pymc": "6.4.0", "nutpie": "0.16.11"}}}
    text = section.pipeline(Report(results, {}, None, None, 6.3, 8.5)).replace("\\", "")
    line = next(ln for ln in text.splitlines() if "default:accuracy:slope0.4" in ln and ln.startswith("|"))
    assert "(power)" in line and "80%" in line  # improves_rate 0.8
    assert "default:accuracy:slope0.4</code>: meets its coverage target at the true slope 0.4" in text
    assert "true slope 0.4 (coverage 95.0% [92, 98]); each of its 1 per-task slopes meets it." in text
    assert "default:dprime:slope0.4</code>: misses coverage 80.0%" in text
    assert "pymc 6.4.0, nutpie 0.16.11 (as this run)" in text
    assert "(200 or 100 per arm: 200 under a null" in text  # targets differ by arm
    results["fit"]["versions"]["pymc"] = "6.5.0"
    again = section.pipeline(Report(results, {}, None, None, 6.3, 8.5)).replace("\\", "")
    assert "(this run: pymc 6.5.0)" in again


def test_an_sdt_arm_is_at_the_pipeline_settings_only_as_the_sdt_model_samples():
    """The SDT model samples with its SPEC.sampling (more draws, target_accept 0.995): an arm
    made before that existed (no model_sampler) is at other settings; one whose records state
    the model's own settings is not."""
    from selfmodel import models
    from selfmodel.fitting.fit import for_model

    old = _arm(200, 200)
    new = _arm(200, 200) | {"model_sampler": [asdict(for_model(SamplerSettings(), models.get("sdt").SPEC.sampling))],
                            "records_without_model_sampler": 0}
    rows = {r["key"]: r for r in calibration_map(_results(**{"default:dprime": old,
                                                             "default:dprime:clustered": new}))}
    at = {a["arm"]: a["at_pipeline_settings"] for a in rows["dprime"]["arms"]}
    assert at == {"default:dprime": False, "default:dprime:clustered": True}
    # and the report's note on settings names the old arm only
    pc = {"settings": asdict(SamplerSettings()), "arms": {"default:dprime": old, "default:dprime:clustered": new}}
    sm = new["model_sampler"][0]
    note = section.other_settings(Report({"settings": {"sampler_by_model": {"sdt": sm}}}, {}, None, None, 6.3, 8.5), pc)
    assert "default:dprime</code>" in note.replace("\\", "") and "clustered" not in note
