"""The validation map: which decisions have an operating-characteristics study
(analysis/decisions/validation_map.py) and what the
report says of them (sections.operating_characteristics.validation_map): issue 28.6."""

from __future__ import annotations

import copy
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from selfmodel.analyses import confidence_calibration, contrasts, privileged, training
from selfmodel.common.binomial import rate
from selfmodel.common.paths import shipped_study
from selfmodel.decisions.validation_map import CHECKS, KINDS, validation_map
from selfmodel.fitting.sampling import SamplerSettings
from selfmodel.report.sections import operating_characteristics as section
from selfmodel.report.sections.common import Report
from selfmodel.robustness.stage import operating_characteristics


def _sampled_as(model: str) -> dict[str, Any]:
    """The settings the pipeline samples ``model`` with (its ``SPEC.sampling`` on the defaults)."""
    from selfmodel import models
    from selfmodel.fitting.sampling import for_model

    return asdict(for_model(SamplerSettings(), models.get(model).SPEC.sampling))


def _arm(n: int, target: int, truth: float = 0.0, fi: float = 0.01, cov: float = 0.94,
         model: str = "scale") -> dict[str, Any]:
    """An arm whose every record states its settings (the pipeline's for ``model``) and versions."""
    o = {"hdi94_coverage": cov, "hdi94_coverage_ci": [cov - 0.03, cov + 0.03], "hdi94_coverage_pm": 0.03}
    o |= {"false_improves": fi, "false_improves_ci": [0.0, fi + 0.02], "false_improves_pm": 0.01} if not truth \
        else {"improves_rate": 0.8, "improves_rate_ci": [0.7, 0.9], "improves_rate_pm": 0.1, "false_improves": None}
    return {"n": n, "target_n": target, "complete": n >= target, "truth": truth, "overall": o,
            "model_sampler": [_sampled_as(model)], "records_without_model_sampler": 0,
            "versions": [{"pymc": "6.4.0", "nutpie": "0.16.11"}], "records_without_versions": 0}


def _results(**arms: dict[str, Any]) -> dict[str, Any]:
    return {"scale_effect": {"decision": "improves"},
            "sdt_effect": {"sensitivity": {"decision": "improves"}, "bias": {"decision": "x"}},
            "operating_characteristics": {"pipeline": {"settings": asdict(SamplerSettings()), "arms": arms}}}


def test_accuracy_is_checked_only_with_all_three_checks_complete_at_the_pipeline_settings():
    full = {"default:accuracy": _arm(200, 200), "default:accuracy:clustered": _arm(200, 200),
            "default:accuracy:slope0.4": _arm(100, 100, truth=0.4)}
    by = {r["key"]: r for r in validation_map(_results(**full))}
    acc = by["accuracy"]
    assert acc["status"] == "checked" and acc["missing"] == [] and acc["in_this_run"]
    assert {a["arm"]: a["check"] for a in acc["arms"]} == {
        "default:accuracy": "null", "default:accuracy:clustered": "misspecified",
        "default:accuracy:slope0.4": "coverage"}
    assert by["dprime"]["status"] == "none" and by["dprime"]["missing"] == list(CHECKS)
    # a check not run to its target, or run at other settings, makes it partial
    part = copy.deepcopy(full)
    part["default:accuracy:clustered"] = _arm(40, 200)
    acc = {r["key"]: r for r in validation_map(_results(**part))}["accuracy"]
    assert acc["status"] == "partial" and acc["missing"] == [] and "not yet run" in acc["notes"][0]
    other = copy.deepcopy(full)
    for a in other.values():
        a["model_sampler"] = [a["model_sampler"][0] | {"draws": 1000}]
    acc = {r["key"]: r for r in validation_map(_results(**other))}["accuracy"]
    assert acc["status"] == "not_at_settings" and all(a["at_pipeline_settings"] is False for a in acc["arms"])
    assert acc["records_at_other_settings"] == 500 and "3 records" not in acc["status_words"]
    # no coverage arm: partial, and the missing check is named
    del part["default:accuracy:slope0.4"]
    acc = {r["key"]: r for r in validation_map(_results(**part))}["accuracy"]
    assert acc["missing"] == ["coverage"]


def test_a_run_without_those_sections_still_maps_the_shipped_studies():
    """The pipeline passes the shipped studies: a run that fitted no training or contrast model
    (the default data has no conditions) still shows their operating characteristics, marked not in this run."""
    from selfmodel.pipeline.results import shipped_studies

    rows = {r["key"]: r for r in validation_map({"scale_effect": {"decision": "x"}}, shipped_studies())}
    assert rows["contrasts"]["arms"] and not rows["contrasts"]["in_this_run"]
    assert rows["privileged"]["status"] == "checked" and rows["accuracy"]["in_this_run"]
    assert {a["arm"] for a in rows["accuracy"]["arms"]} >= {"default:accuracy", "seb:accuracy"}
    assert validation_map({})[0]["arms"] == []  # without studies: the results' own sections (none)


def test_the_shipped_studies_fill_the_map_and_the_report_names_what_has_no_study():
    """Every shipped study lands in its row; the kinds no study covers are named as such."""
    results = _results()
    results["operating_characteristics"] = operating_characteristics()
    results["training_effect"] = {"trained": {"decision": "x"}, "null_operating_characteristics": shipped_study(training.NULL_OPERATING_CHARACTERISTICS_DATA, "null study"),
                                  "privileged_access": {"mean": {"decision": "x"},
                                                        "operating_characteristics": shipped_study(privileged.OPERATING_CHARACTERISTICS_DATA)}}
    results["contrasts"] = {"contrasts": {"model": {}}, "operating_characteristics": shipped_study(contrasts.OPERATING_CHARACTERISTICS_DATA)}
    results["confidence_calibration_contrasts"] = {
        "contrasts": [], "operating_characteristics": shipped_study(confidence_calibration.OPERATING_CHARACTERISTICS_DATA)}
    rows = {r["key"]: r for r in validation_map(results)}
    assert set(rows) == {k.key for k in KINDS}
    assert rows["privileged"]["status"] == "checked"  # bootstrap: null, truth and misspecified arms
    assert all(a["n"] == 300 for a in rows["privileged"]["arms"])  # data sets, not data sets x families
    assert {a["check"] for a in rows["contrasts"]["arms"]} == set(CHECKS)
    # the contrast study run to its targets (200 null, 200 misspecified, 100 recovery data sets), at settings
    assert rows["contrasts"]["missing"] == []
    assert all(a["complete"] and a["at_pipeline_settings"] for a in rows["contrasts"]["arms"])
    # its status is its arms' targets: the recovery arm's pooled coverage against 0.91-0.97
    rec = next(a for a in rows["contrasts"]["arms"] if a["arm"] == "contrast:recovery")
    assert rows["contrasts"]["status"] == ("checked" if 0.91 <= rec["rate"] <= 0.97 else "missed")
    assert rows["training"]["missing"] == ["coverage", "misspecified"]
    assert rows["training"]["arms"][0]["at_pipeline_settings"] is False  # 2 x 1000 draws
    assert rows["training"]["status"] == "not_at_settings"  # before "partial" (two checks missing too)
    shipped = results["operating_characteristics"]["pipeline"]["arms"]
    # the family-left-out refit and the Mundlak split: the pipeline study's mundlak arms, each held to
    # the study's own verdict on it (meets_targets)
    for key in ("confounds", "within_between"):
        assert {a["check"] for a in rows[key]["arms"]} == set(CHECKS), key
        assert not rows[key]["in_this_run"], key
        met = all(shipped[a["arm"]]["overall"]["meets_targets"] for a in rows[key]["arms"])
        assert rows[key]["status"] == ("checked" if met else "missed"), key
    conf = rows["confirmatory"]  # the pipeline study's family arm, under the joint null
    assert conf["missing"] == []
    cov = next(a for a in conf["arms"] if a["arm"] == "default:confirmatory:dprime0.4")
    assert cov["check"] == "coverage" and cov["complete"] and cov["n"] == 100  # run to its target
    mis = next(a for a in conf["arms"] if a["arm"] == "default:confirmatory:clustered")
    assert mis["check"] == "misspecified" and mis["complete"] and mis["n"] == mis["target_n"] == 200
    assert mis["at_pipeline_settings"] and mis["settings"] == "pipeline"
    assert [a["check"] for a in conf["arms"] if a["arm"] == "default:confirmatory"] == ["null"]
    assert conf["status"] == ("checked" if all(shipped[a["arm"]]["overall"]["meets_targets"] for a in conf["arms"])
                              else "missed")
    cc = rows["confidence_calibration_contrasts"]  # the item bootstrap's own study: null, truth, clustered
    assert {a["check"] for a in cc["arms"]} == set(CHECKS)
    assert cc["status"] == ("checked" if all(a["meets_target"] for a in cc["arms"]) else "missed")
    assert "of data sets have one or more" in next(a for a in cc["arms"] if a["check"] == "null")["measure"]
    text = section.validation_map(Report(json.loads(json.dumps({"validation_map": list(rows.values())})),
                                        {}, None, None, 6.3, 8.5)).replace("\\", "")  # markdown escapes
    no_study = text.split("**No operating-characteristics study** for:")[1].split(".")[0]
    assert "self vs other" in no_study and "confidence-calibration differences" not in no_study
    checked = text.split("Checked (every arm complete")[1] if "Checked (every arm complete" in text else ""
    for r in rows.values():  # each kind once: checked, or its status in words with its figures
        assert (r["decision"] in checked) == (r["status"] == "checked"), r["key"]
        if r["status"] not in ("checked", "none"):
            assert f"- {r['status_words']}" in text, r["key"]
    assert "(other sampler settings)" in text  # the training null study
    assert "training effect" in next(ln for ln in text.splitlines() if "not at the pipeline's settings" in ln
                                     and ln.startswith("- training"))
    # a kind that gains a study leaves the "no operating-characteristics study" sentence
    rows["self_vs_other"]["status"] = "checked"
    again = section.validation_map(Report({"validation_map": list(rows.values())}, {}, None, None, 6.3, 8.5)
                                  ).replace("\\", "")
    assert "**No operating-characteristics study**" not in again


def test_pipeline_table_reads_a_known_slope_arm_as_coverage_and_power():
    """A non-null arm has no false rate: its 'improves' rate is power, its verdict coverage only."""
    shipped = operating_characteristics()["pipeline"]
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
    results = {"operating_characteristics": {"pipeline": pc},
               "fit": {"versions": {"pymc": "6.4.0", "nutpie": "0.16.11"}}}
    text = section.pipeline(Report(results, {}, None, None, 6.3, 8.5)).replace("\\", "")
    line = next(ln for ln in text.splitlines() if "default:accuracy:slope0.4" in ln and ln.startswith("|"))
    assert "(power)" in line and "80%" in line  # improves_rate 0.8
    assert "default:accuracy:slope0.4</code>: meets its coverage target at the true slope 0.4" in text
    assert "true slope 0.4 (coverage 95.0% [92, 98]); each of its 1 per-task slopes meets it." in text
    assert "default:dprime:slope0.4</code>: misses coverage 80.0%" in text
    assert "pymc 6.4.0, nutpie 0.16.11 (as this run)" in text
    assert "(200 or 100 per arm: 200 under a null" in text  # targets differ by arm
    # every arm carries its run command; the partial ones are named with theirs
    assert all(a["command"].startswith(".venv/bin/python validation/pipeline_operating_characteristics.py --arms ")
               for a in shipped["arms"].values())
    partial = [a["command"] for a in pc["arms"].values() if not a["complete"] and a.get("command")]
    assert all(c.replace("\\", "") in text for c in partial) or not partial
    assert "which resumes where its records end" in text
    results["fit"]["versions"]["pymc"] = "6.5.0"
    again = section.pipeline(Report(results, {}, None, None, 6.3, 8.5)).replace("\\", "")
    assert "(this run: pymc 6.5.0)" in again


def test_an_sdt_arm_is_at_the_pipeline_settings_only_as_the_sdt_model_samples():
    """The SDT model samples with its SPEC.sampling (more draws, target_accept 0.995): an arm
    made before that existed (no model_sampler) is at other settings; one whose records state
    the model's own settings is not."""
    from selfmodel import models
    from selfmodel.fitting.sampling import for_model

    old = _arm(200, 200)
    new = _arm(200, 200) | {"model_sampler": [asdict(for_model(SamplerSettings(), models.get("sdt").SPEC.sampling))],
                            "records_without_model_sampler": 0}
    rows = {r["key"]: r for r in validation_map(_results(**{"default:dprime": old,
                                                             "default:dprime:clustered": new}))}
    at = {a["arm"]: a["at_pipeline_settings"] for a in rows["dprime"]["arms"]}
    assert at == {"default:dprime": False, "default:dprime:clustered": True}
    # and the report's note on settings names the old arm only
    pc = {"settings": asdict(SamplerSettings()), "arms": {"default:dprime": old, "default:dprime:clustered": new}}
    sm = new["model_sampler"][0]
    note = section.other_settings(Report({"settings": {"sampler_by_model": {"sdt": sm}}}, {}, None, None, 6.3, 8.5), pc)
    assert "default:dprime</code>" in note.replace("\\", "") and "clustered" not in note


def _count(k: int, n: int) -> dict[str, Any]:
    return {"k": k, "n": n, "rate": k / n if n else None, "ci95": [0.0, 1.0]}


def test_the_training_study_replaces_the_null_study_and_is_checked_only_when_complete_at_settings():
    """validation/training_study.py: null, truth and misspecified arms at the pipeline's settings."""
    from dataclasses import replace

    from selfmodel.decisions.validation_map import Studies

    at = {k: getattr(SamplerSettings(), k) for k in ("chains", "draws", "tune", "target_accept")}

    def arm(n: int, target: int, truth: bool = False, sampler: dict[str, Any] = at) -> dict[str, Any]:
        q = {"coverage": _count(n - 5, n), "truth_mean": 0.3 if truth else 0.0}
        q |= {"power_improves": _count(n // 2, n)} if truth else {"false_credible": _count(3, n),
                                                                     "false_improves": _count(1, n)}
        worse = q | ({} if truth else {"false_credible": _count(9, n)})
        return {"n": n, "target_n": target, "sampler": [sampler], "versions": [{"pymc": "6.4.0"}],
                "coverage_pooled": _count(round(0.94 * 2 * n), 2 * n),  # inside 0.91-0.97
                "quantities": {"accuracy:trained": q, "criterion:task:difficulty": worse}}

    study = {"available": True, "arms": {"null": arm(200, 200), "truth": arm(100, 100, truth=True),
                                         "misspecified": arm(200, 200)}}
    old_null = {"available": True, "n_datasets": 150, "sampler": {"draws": 1000}, "rates": {}}
    base = Studies(training_null=old_null, training=study)
    row = {r["key"]: r for r in validation_map({}, base)}["training"]
    assert row["status"] == "checked" and row["notes"] == []  # the old 2 x 1000 study is not listed
    null = next(a for a in row["arms"] if a["check"] == "null")
    assert null["rate"] == 12 / 400 and "worst: criterion task difficulty 4.5%" in null["measure"]
    assert next(a for a in row["arms"] if a["check"] == "coverage")["rate"] == 188 / 200
    # short of its target, or sampled at other settings: partial
    short = copy.deepcopy(study)
    short["arms"]["misspecified"] = arm(40, 200)
    assert {r["key"]: r for r in validation_map({}, replace(base, training=short))}["training"]["status"] == "partial"
    other = copy.deepcopy(study)
    other["arms"]["null"]["sampler"] = [at | {"draws": 1000}]
    row = {r["key"]: r for r in validation_map({}, replace(base, training=other))}["training"]
    assert row["status"] == "not_at_settings" and "other sampler settings" in row["notes"][0]
    # records that do not say which stack fitted them are not "at the pipeline's settings" either
    bare = copy.deepcopy(study)
    del bare["arms"]["truth"]["versions"]
    row = {r["key"]: r for r in validation_map({}, replace(base, training=bare))}["training"]
    assert row["status"] == "not_at_settings" and "training:truth (settings or versions not recorded)" in row["status_words"]
    # without the new study the old null study stands alone
    row = {r["key"]: r for r in validation_map({}, replace(base, training=None))}["training"]
    assert [a["arm"] for a in row["arms"]] == ["training_null (accuracy, trained)"]


def test_self_vs_other_arms_are_bootstrap_checks_with_both_directions_counted():
    from selfmodel.decisions.validation_map import Studies

    def arm(n: int, target: int, check: str, pos: int, neg: int) -> dict[str, Any]:
        q = {"positive": _count(pos, n), "negative": _count(neg, n), "coverage": _count(n - n // 20, n)}
        return {"n": n, "target_n": target, "check": check, "means": {"dprime": q, "accuracy": q},
                "slopes": {"dprime": q}}

    cal = {"available": True, "arms": {"null": arm(200, 200, "null", 4, 6), "truth": arm(100, 100, "coverage", 90, 0),
                                       "misspecified": arm(200, 200, "misspecified", 3, 3),
                                       "clustered_declared": arm(120, 200, "misspecified", 1, 1)}}
    row = {r["key"]: r for r in validation_map({"self_vs_other_rescored": {"per_task": {"t": {}}}},
                                                Studies(self_vs_other=cal))}["self_vs_other"]
    by = {a["arm"]: a for a in row["arms"]}
    assert by["self_vs_other:null"]["rate"] == 30 / 600  # 3 quantities x (4 + 6) of 3 x 200
    assert by["self_vs_other:truth"]["check"] == "coverage" and by["self_vs_other:truth"]["rate"] == 285 / 300
    assert by["self_vs_other:null"]["at_pipeline_settings"] is None  # a bootstrap: no sampler
    assert by["self_vs_other:null"]["settings"] == "no_sampler" and by["self_vs_other:null"]["meets_target"]
    # every arm must be complete: the declared-cluster arm, 120 of 200, leaves the kind partial
    assert row["status"] == "partial" and row["in_this_run"] and "not yet run" in row["notes"][0]
    assert "self_vs_other:clustered_declared has 120 of 200 data sets" in row["status_words"]
    cal["arms"]["clustered_declared"] = arm(200, 200, "misspecified", 1, 1)
    row = {r["key"]: r for r in validation_map({}, Studies(self_vs_other=cal))}["self_vs_other"]
    assert row["status"] == "checked" and row["status_words"] == ""


def test_the_training_and_self_vs_other_sections_print_their_studies_from_the_results():
    """The report reads each study from results.json and says what its numbers mean."""
    from selfmodel.report.sections import self_other, training

    q_null = {"false_credible": _count(12, 200), "false_improves": _count(2, 200), "coverage": _count(188, 200),
              "truth_mean": 0.0}
    q_truth = {"power_improves": _count(40, 100), "coverage": _count(93, 100), "truth_mean": 0.27}
    settings = {"chains": 4, "draws": 2000, "tune": 1000, "target_accept": 0.99}
    study = {"available": True, "generator": "validation/training_generator.py", "settings": settings,
             "interval": "Clopper-Pearson 95%", "commands": ["python validation/training_study.py --arms null"],
             "arms": {"null": {"n": 200, "target_n": 200, "failed_gate": 3, "quantities": {"accuracy:trained": q_null},
                               "any_false_credible": {"k": 70, "n": 200, "rate": 0.35, "ci95": [0.28, 0.42]}},
                      "truth": {"n": 100, "target_n": 100, "failed_gate": 0,
                                "quantities": {"accuracy:trained": q_truth}}}}
    rep = Report({"training_effect": {"available": True, "operating_characteristics": study}}, {}, None, None, 6.3, 8.5)
    text = training.operating_characteristics(rep).replace("\\", "")
    assert "<code>null</code> 200 of 200 data sets (3 failed the gate)" in text
    assert "about 6% of data sets" in text and "4 chains x 2000 draws" in text
    line = next(ln for ln in text.splitlines() if ln.startswith("| accuracy, trained"))
    assert "12/200 (6.0%)" in line and "+0.27" in line and "93/100 (93.0%)" in line and "40/100" in line
    assert "Null study" not in text  # the older 2 x 1000 study is not printed beside it
    assert "at most 2 of 200 data sets for any quantity" in text
    assert "70/200 (35.0%) [28, 42] of its data sets had at least one false credible decision" in text

    cov = {"k": 100, "n": 100, "rate": 1.0, "ci95": [0.964, 1.0]}
    q = {"positive": _count(0, 100), "negative": _count(0, 100), "coverage": cov}
    m = {"positive": _count(40, 1600), "negative": _count(40, 1600), "coverage": _count(1500, 1600)}
    cal = {"available": True, "command": "python validation/self_vs_other_study.py", "n_boot": 1000,
           "interval_level": 0.95, "design": {"families": [1, 2], "sizes_b": [1, 2], "items": 300},
           "truths": {"truth": {"mean": {"dprime": 0.25}, "slope": {"dprime": 0.19}}},
           "arms": {"null": {"n": 100, "target_n": 200, "check": "null", "means": {"dprime": q},
                             "slopes": {"dprime": q}, "models": {"dprime": m}}}}
    text = self_other.operating_characteristics(Report({"self_vs_other_rescored": {"operating_characteristics": cal}}, {}, None, None, 6.3, 8.5))
    text = text.replace("\\", "")
    assert "| <code>null</code> | null | 100 of 200 | 0/100 (0.0%) [0, 100]" in text
    assert "true mean d' advantage +0.250" in text
    assert "more often than their 95%" in text and "less often" not in text
    cal["arms"]["null"]["means"]["dprime"] = q | {"coverage": {"k": 80, "n": 100, "rate": 0.8, "ci95": [0.71, 0.87]}}
    cal["arms"]["null"]["slopes"]["dprime"] = q | {"coverage": _count(95, 100) | {"ci95": [0.89, 0.98]}}
    again = self_other.operating_characteristics(Report({"self_vs_other_rescored": {"operating_characteristics": cal}}, {}, None, None, 6.3, 8.5))
    assert "less often than their 95%" in again and "more often" not in again


def test_the_exact_interval_every_study_shares_has_its_closed_forms():
    """Clopper-Pearson at k = 0 and k = n has a closed form: 1 - (a/2)^(1/n) and (a/2)^(1/n)."""
    import doctest

    from selfmodel.common import binomial

    assert binomial.clopper_pearson(0, 200) == (0.0, pytest.approx(1 - 0.025 ** (1 / 200)))
    assert binomial.clopper_pearson(7, 7) == (pytest.approx(0.025 ** (1 / 7)), 1.0)
    lo, hi = binomial.clopper_pearson(12, 200)
    assert lo < 12 / 200 < hi
    assert binomial.rate(0, 0) == {"k": 0, "n": 0, "rate": None, "ci95": None}
    assert doctest.testmod(binomial).failed == 0


def test_within_between_reads_the_mundlak_arms_by_the_check_each_declares():
    """A null for ``within`` beside a non-zero ``between`` (truth 0, a variant) is a null, not the
    misspecified arm: the study's ``check`` decides, not the arm's name."""
    arms = {"mundlak:within": _arm(200, 200), "mundlak:between": _arm(200, 200),
            "mundlak:within:clustered": _arm(200, 200) | {"check": "misspecified"},
            "mundlak:within:between0.4": _arm(200, 200) | {"check": "null"},
            "mundlak:between:between0.4": _arm(100, 100, truth=0.4) | {"check": "coverage"}}
    res = _results(**arms) | {"model_zoo": {"within_between": {"within": {}}}}
    wb = {r["key"]: r for r in validation_map(res)}["within_between"]
    assert {a["arm"]: a["check"] for a in wb["arms"]} == {
        "mundlak:within": "null", "mundlak:between": "null", "mundlak:within:clustered": "misspecified",
        "mundlak:within:between0.4": "null", "mundlak:between:between0.4": "coverage"}
    assert wb["status"] == "checked" and wb["in_this_run"]
    del arms["mundlak:within:clustered"]
    wb = {r["key"]: r for r in validation_map(_results(**arms))}["within_between"]
    assert wb["status"] == "partial" and wb["missing"] == ["misspecified"]


def test_the_family_left_out_refit_reads_its_own_arms():
    arms = {"mundlak:without_family": _arm(200, 200), "mundlak:without_family:clustered":
            _arm(50, 200) | {"check": "misspecified"}, "default:accuracy": _arm(200, 200)}
    res = _results(**arms) | {"confounds": {"without_family": {"decision": "improves"}}}
    cf = {r["key"]: r for r in validation_map(res)}["confounds"]
    assert [a["arm"] for a in cf["arms"]] == ["mundlak:without_family", "mundlak:without_family:clustered"]
    assert cf["status"] == "partial" and cf["missing"] == ["coverage"] and cf["in_this_run"]


def test_an_arm_whose_every_task_misses_does_not_speak_of_the_others():
    shipped = operating_characteristics()["pipeline"]
    pc = copy.deepcopy(shipped)
    arm = _arm(200, 200, cov=0.99) | {"diagnostics_failed": 0, "versions": [], "records_without_versions": 0}
    task = {"n": 200, "hdi94_coverage": 0.99, "hdi94_coverage_ci": [0.96, 1.0], "false_improves": 0.0,
            "false_improves_ci": [0.0, 0.02]}
    some = copy.deepcopy(arm) | {"t0": dict(task), "t1": dict(task) | {"hdi94_coverage": 0.95}}
    pc["arms"] = {"x:accuracy:clustered": arm | {"t0": dict(task), "t1": dict(task)}, "y:accuracy:clustered": some}
    text = section.pipeline(Report({"operating_characteristics": {"pipeline": pc}, "fit": {"versions": {}}},
                                   {}, None, None, 6.3, 8.5)).replace("\\", "")
    every = next(ln for ln in text.splitlines() if "x:accuracy:clustered</code>: misses" in ln)
    assert "<code>t1</code> misses" in every and "the others" not in every
    one = next(ln for ln in text.splitlines() if "y:accuracy:clustered</code>: misses" in ln)
    assert "<code>t0</code> misses" in one and "the others meet both targets" in one


def test_an_arms_components_are_its_slopes_with_a_coverage_not_its_other_dicts():
    """The one rule the report, the study's terminal line and the tests share: the family's
    ``member_truths`` (a dict of truths) is not a component, nor is ``overall``."""
    from selfmodel.decisions.study_arms import arm_components
    member = {"hdi94_coverage": 0.94, "meets_targets": True}
    arm = {**_arm(100, 100), "family_size": 2, "hdi_prob": [0.97, 0.97],
           "member_truths": {"accuracy_overall": 0.0, "dprime_overall": 0.4},
           "accuracy_overall": member, "dprime_overall": {**member, "hdi94_coverage": None}}
    assert sorted(arm_components(arm)) == ["accuracy_overall", "dprime_overall"]
    assert arm_components(_arm(200, 200)) == {}


def test_the_family_arms_targets_are_stated_once_each_naming_its_null():
    """The confirmatory family's targets, one clause for its arms that share them: the joint null
    and, for the misspecified arm, the joint null on clustered items; never the same clause twice."""
    pc = copy.deepcopy(operating_characteristics()["pipeline"])
    for name in ("default:confirmatory", "default:confirmatory:clustered"):
        pc["arms"][name]["overall"] = {**(pc["arms"][name].get("overall") or {}), "max_family_error": 0.06,
                                       "coverage_range": [0.91, 1.0]}
    text = section.pipeline(Report({"operating_characteristics": {"pipeline": pc}}, {}, None, None, 6.3, 8.5))
    text = text.replace("\\", "")
    assert ("for the confirmatory family at <code>default:confirmatory</code> (the joint null) and "
            "<code>default:confirmatory:clustered</code> (the joint null on clustered items, overdispersed "
            "cells) a family-wise error at most 6% and a joint coverage of the members' adjusted HDIs of at "
            "least 91%") in text, text[:3000]
    assert text.count("Bonferroni's promise") == 1
    pc["arms"]["default:confirmatory:clustered"]["overall"]["max_family_error"] = 0.08  # other targets
    text = section.pipeline(Report({"operating_characteristics": {"pipeline": pc}}, {}, None, None, 6.3, 8.5))
    assert text.count("Bonferroni's promise") == 2 and "family-wise error at most 8%" in text


def test_a_family_arm_with_no_records_names_its_measure_without_a_level():
    """No records, no HDI level yet: the measure reads 'adjusted HDI', not 'adjusted  HDI'."""
    empty = {"n": 0, "target_n": 200, "complete": False, "truth": 0.0, "check": "misspecified",
             "overall": {"family_error": None}}
    run = {**empty, "n": 16, "hdi_prob": [0.97], "overall": {"family_error": 0.0}}
    for arm, level in ((empty, "adjusted HDI"), (run, "adjusted 97% HDI")):
        rows = {r["key"]: r for r in validation_map(_results(**{"default:confirmatory:clustered": arm}))}
        (a,) = rows["confirmatory"]["arms"]
        assert a["measure"] == f"family-wise error: data sets in which some member's {level} excludes 0"


# --- issue 54: a kind is `checked` only when every arm meets its target -------------------------------

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "regression" / "results_default.json"
SHIPPED_PIPELINE = ROOT / "analysis" / "data" / "pipeline_operating_characteristics.json"


def _dprime_arms() -> dict[str, dict[str, Any]]:
    """A null, a misspecified and a coverage arm of the d' slope, each meeting its targets."""
    return {"default:dprime": _arm(200, 200, model="sdt"), "default:dprime:clustered": _arm(200, 200, model="sdt"),
            "default:dprime:slope0.4": _arm(100, 100, truth=0.4, model="sdt")}


def test_one_arm_that_misses_its_target_makes_its_kind_missed_on_the_first_screen():
    """The d' coverage arm covering 0.90 (against 0.91-0.97): the kind is ``missed``, named with
    the arm's figures in the map, in the verdict's findings and on the report's first screen."""
    from selfmodel.decisions.verdict import findings
    from selfmodel.report.sections import verdict as verdict_section

    arms = _dprime_arms()
    row = {r["key"]: r for r in validation_map(_results(**arms))}["dprime"]
    assert row["status"] == "checked" and row["missed_arms"] == [] and row["status_words"] == ""
    cov = rate(90, 100)  # 0.90, exact interval [0.82, 0.95]: overlaps the range, the point is outside
    arms["default:dprime:slope0.4"]["overall"] |= {"hdi94_coverage": cov["rate"], "hdi94_coverage_ci": cov["ci95"]}
    rows = validation_map(_results(**arms))
    row = {r["key"]: r for r in rows}["dprime"]
    assert row["status"] == "missed"
    (missed,) = row["missed_arms"]
    assert missed["arm"] == "default:dprime:slope0.4" and missed["rate"] == 0.9
    assert missed["ci95"] == cov["ci95"] and missed["target"] == {"within": [0.91, 0.97]}
    said = (f"d' slope with scale, overall and per task -- missed: the coverage arm default:dprime:slope0.4, 94% HDI "
            f"coverage of the true slope 0.90 [{cov['ci95'][0]:.2f}, {cov['ci95'][1]:.2f}], target 0.91-0.97.")
    assert row["status_words"] == said
    brief = "missed a target: d' slope (0.90), against coverage 0.91-0.97"
    # the first screen: the default run's results with this map
    results = json.loads(FIXTURE.read_text()) | {"validation_map": rows}
    found = {f["key"]: f["text"] for f in findings(results)}
    assert brief in found["validation"]
    text = verdict_section.summary(Report(results, {}, None, None, 6.3, 8.5)).replace("\\", "")
    verdict = text.split("::: {#verdict .verdict}", 1)[1]
    first_screen = verdict[:verdict.index("\n:::\n", verdict.index("**Question:**"))]  # the verdict block
    assert brief in first_screen
    # and the map's own text says it with the arm and its interval
    assert said in section.validation_map(Report(results, {}, None, None, 6.3, 8.5)).replace("\\", "")
    # once the arm meets its target, the first screen says nothing of it
    arms["default:dprime:slope0.4"]["overall"]["hdi94_coverage"] = 0.93
    results["validation_map"] = validation_map(_results(**arms))
    assert "d' slope" not in (next((f["text"] for f in findings(results) if f["key"] == "validation"), ""))


def test_a_rate_misses_its_bound_only_when_its_exact_interval_lies_wholly_above_it():
    """False 'improves' at most 5%: 14 of 200 (7%, interval reaching below 5%) meets it within its
    Monte Carlo error; the first count whose exact interval lies wholly above 5% misses it."""
    from selfmodel.common.binomial import clopper_pearson

    def arms_with(k: int) -> dict[str, dict[str, Any]]:
        r = rate(k, 200)
        null = _arm(200, 200)
        null["overall"] |= {"false_improves": r["rate"], "false_improves_ci": r["ci95"]}
        return {"default:accuracy": null, "default:accuracy:clustered": _arm(200, 200),
                "default:accuracy:slope0.4": _arm(100, 100, truth=0.4)}

    first_missed = next(k for k in range(201) if clopper_pearson(k, 200)[0] > 0.05)
    for k in (14, first_missed - 1, first_missed):
        row = {r["key"]: r for r in validation_map(_results(**arms_with(k)))}["accuracy"]
        a = next(a for a in row["arms"] if a["arm"] == "default:accuracy")
        lo, hi = a["ci95"]
        straddles = lo <= 0.05 < hi
        assert k / 200 > 0.05 and a["meets_target"] is straddles, k  # every k here is above the bound
        assert row["status"] == ("checked" if straddles else "missed"), k
    assert 14 < first_missed  # 14 of 200 straddles
    row = {r["key"]: r for r in validation_map(_results(**arms_with(first_missed)))}["accuracy"]
    assert row["missed_arms"][0]["target"] == {"at_most": 0.05}
    assert f"false 'improves' {100 * first_missed / 200:.1f}%" in row["status_words"]


def test_a_coverage_meets_its_range_by_the_point_not_by_its_interval():
    """0.97 with an interval reaching 0.99: met; 0.98 with an interval reaching 0.93: missed."""
    arms = {"default:accuracy": _arm(200, 200), "default:accuracy:clustered": _arm(200, 200, cov=0.97),
            "default:accuracy:slope0.4": _arm(100, 100, truth=0.4)}
    assert {r["key"]: r for r in validation_map(_results(**arms))}["accuracy"]["status"] == "checked"
    arms["default:accuracy:clustered"] = _arm(200, 200, cov=0.98)  # interval 0.95-1.01 overlaps the range
    row = {r["key"]: r for r in validation_map(_results(**arms))}["accuracy"]
    assert row["status"] == "missed" and [m["arm"] for m in row["missed_arms"]] == ["default:accuracy:clustered"]
    assert "the misspecified arm default:accuracy:clustered, 94% HDI coverage of the true slope 0.98" in row["status_words"]


def test_an_arm_at_other_settings_or_not_recording_them_is_not_at_settings_with_its_records_counted():
    arms = _dprime_arms()
    other = copy.deepcopy(arms)
    other["default:dprime"]["model_sampler"] = [_sampled_as("scale")]  # the SDT model at 2000/1000/0.99
    row = {r["key"]: r for r in validation_map(_results(**other))}["dprime"]
    a = next(a for a in row["arms"] if a["arm"] == "default:dprime")
    assert row["status"] == "not_at_settings" and a["at_pipeline_settings"] is False and a["settings"] == "other"
    assert a["records_at_other_settings"] == row["records_at_other_settings"] == 200
    assert "default:dprime (200 records at other settings)" in row["status_words"]
    # records that do not say: they ran at the study's declared settings, the scale model's
    # defaults, which are not the SDT model's (the shipped SEB d' arms)
    bare = copy.deepcopy(arms)
    bare["default:dprime"] |= {"model_sampler": [], "records_without_model_sampler": 200, "versions": [],
                               "records_without_versions": 200}
    row = {r["key"]: r for r in validation_map(_results(**bare))}["dprime"]
    assert row["status"] == "not_at_settings"
    assert (row["records_at_other_settings"], row["records_without_settings"], row["records_without_versions"]) == (
        200, 200, 200)
    # the same records of the accuracy model, whose settings those are: not recorded, still not at settings
    acc = {"default:accuracy": _arm(200, 200) | {"model_sampler": [], "records_without_model_sampler": 200},
           "default:accuracy:clustered": _arm(200, 200), "default:accuracy:slope0.4": _arm(100, 100, truth=0.4)}
    row = {r["key"]: r for r in validation_map(_results(**acc))}["accuracy"]
    a = next(a for a in row["arms"] if a["arm"] == "default:accuracy")
    assert row["status"] == "not_at_settings" and a["settings"] == "not_recorded" and a["at_pipeline_settings"] is None
    assert row["records_at_other_settings"] == 0 and "default:accuracy (settings of 200 not recorded)" in row["status_words"]
    # a missed target is said first, the settings after it
    acc["default:accuracy:clustered"] = _arm(200, 200, cov=0.99)
    row = {r["key"]: r for r in validation_map(_results(**acc))}["accuracy"]
    assert row["status"] == "missed"
    assert row["status_words"].index("missed:") < row["status_words"].index("not at the pipeline's settings:")


def test_the_shipped_evidence_gives_each_kind_its_real_status():
    """From the shipped summaries: a pipeline arm meets its target exactly when the study's own
    ``meets_targets`` says so (the figures are far from the bounds, so the rules agree), a kind
    is ``missed`` when some arm does not, else ``not_at_settings`` when some arm's records are
    at other settings or do not record them; the figures are printed. Not every kind is checked."""
    from selfmodel.decisions.study_arms import EFFECT_MODEL
    from selfmodel.pipeline.results import shipped_studies

    shipped = json.loads(SHIPPED_PIPELINE.read_text())
    rows = {r["key"]: r for r in validation_map({}, shipped_studies())}
    assert {r["status"] for r in rows.values()} != {"checked"}
    keys = ("draws", "tune", "chains", "target_accept")
    for key in ("accuracy", "dprime", "criterion", "confounds", "within_between", "confirmatory"):
        row = rows[key]
        arms = {a["arm"]: shipped["arms"][a["arm"]] for a in row["arms"]}
        missed = [name for name, a in arms.items() if a["overall"]["meets_targets"] is False]
        for a in row["arms"]:
            assert a["meets_target"] is arms[a["arm"]]["overall"]["meets_targets"], a["arm"]

        def settings_known_and_pipelines(name: str, a: dict[str, Any]) -> bool:
            want = _sampled_as(EFFECT_MODEL[name.split(":")[1]])
            return (not a["records_without_model_sampler"] and not a["records_without_versions"]
                    and all(all(m[k] == want[k] for k in keys) for m in a["model_sampler"]))

        off = [name for name, a in arms.items() if not settings_known_and_pipelines(name, a)]
        assert row["status"] == ("missed" if missed else "not_at_settings" if off else "checked"), key
        assert sorted({m["arm"] for m in row["missed_arms"]}) == sorted(missed), key
        for name in missed:
            o = arms[name]["overall"]
            assert f"{name}, 94% HDI coverage" in row["status_words"] or "family" in row["status_words"]
            assert f"{o['hdi94_coverage']:.2f}" in row["status_words"], name
        for name in off:
            assert f"{name} (" in row["status_words"], name
        # records that ran at the study's declared settings, not the model's, are counted
        declared_other = {k: shipped["settings"][k] for k in keys} != {k: _sampled_as(EFFECT_MODEL[key if key in
                                                                        EFFECT_MODEL else "within"])[k] for k in keys}
        unrecorded = sum(a["records_without_model_sampler"] for a in arms.values())
        if key in ("dprime", "criterion"):
            assert declared_other and row["records_at_other_settings"] == unrecorded > 0
        assert row["records_without_settings"] == unrecorded
        assert row["records_without_versions"] == sum(a["records_without_versions"] for a in arms.values())
