"""The verdict's sentences follow the numbers: perturbed results change the sentences.

Hand-made results dictionaries (no fitting): each test perturbs one number (sign, HDI width,
diagnostics, a task's decision, a baseline count) and checks that the sentence speaking of it
changes as the decision vocabulary says, and that no other reading leaks in.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

from selfmodel.decisions.hypotheses import DecisionRule, decide
from selfmodel.decisions.verdict import (
    NOT_DECIDED,
    criterion_words,
    findings,
    headline,
    signs_disagree,
)
from selfmodel.records.contract import DECISION_MEANING, DECISIONS
from selfmodel.robustness.confounds import scale_axis_confounds
from selfmodel.robustness.sensitivity import direction_of


def _eff(mean: float, sd: float, *, n_models: int = 14, rope: float = 0.1) -> dict:
    """A decision record from normal draws (the real rule, not a hand-typed decision)."""
    draws = np.random.default_rng(0).normal(mean, sd, 8000)
    return decide(draws, DecisionRule(rope=rope), n_models=n_models)


def _results(beta=(0.2, 0.065), tasks=None, crit=None) -> dict:
    tasks = tasks or {"refusal": (0.2, 0.08), "word_association": (0.15, 0.08)}
    crit = crit or {"refusal": (0.25, 0.1), "word_association": (-0.3, 0.1)}
    effect = _eff(*beta)
    effect.update({"units": "logits per 10x total parameters", "finding": True, "fit_model": "scale",
              "rope_meaning": {"text": "±0.1 logits of accuracy per 10x total parameters",
                               "basis": "per 10x total parameters"},
              "per_task": {t: _eff(*v) for t, v in tasks.items()}})
    sens = {**_eff(0.4, 0.1), "finding": True,
            "rope_meaning": {"text": "±0.1 d' units per 10x total parameters",
                             "basis": "per 10x total parameters"},
            "per_task": {t: _eff(0.4, 0.1) for t in tasks}}
    bias = {**_eff(0.0, 0.1), "finding": True, "per_task": {t: _eff(*v) for t, v in crit.items()}}
    skill = []
    for i in range(5):
        skill.append({"task": "word_association", "binary": True, "outcome_rate": 0.15,
                      "skill_over_mode": -0.1 - i / 10, "model": f"m{i}"})
        skill.append({"task": "refusal", "binary": True, "outcome_rate": 0.7,
                      "skill_over_mode": 0.1 if i < 3 else -0.05, "model": f"m{i}"})
    return {
        "scale_effect": effect,
        "sdt_effect": {"sensitivity": sens, "bias": bias},
        "skill": skill,
        "diagnostics": {"passed": True, "max_rhat": 1.002, "min_ess_bulk": 900.0},
        "model_zoo": {"scale": {"fitted": True, "diagnostics": {"passed": True}},
                      "sdt": {"fitted": True, "diagnostics": {"passed": True}}},
        "design_sensitivity": {"mde_80": 0.31},
        "sensitivity": {
            "priors": {"model": "scale", "verdict_holds": True, "changed": []},
            "scale_variable": {"main_scale": "params", "compared_on": "direction",
                               "verdict_holds": True, "changed": [],
                               "variants": [{"variable": "params", "decision": effect["decision"]},
                                            {"variable": "capability", "decision": effect["decision"]}]},
        },
    }


def _text(results: dict, key: str) -> str:
    return next(f["text"] for f in findings(results) if f["key"] == key)


def test_default_like_numbers_say_credibly_positive_and_size_not_shown() -> None:
    results = _results()
    assert results["scale_effect"]["decision"] == "credibly_positive"
    h = headline(results)
    assert h.startswith("Self-prediction accuracy (averaged over the 2 tasks) rises with scale")
    assert "not shown to exceed the ROPE" in h
    assert "±0.1 logits of accuracy per 10x total parameters" in h
    assert "+0.20" in h and "no credible" not in h


def test_headline_follows_each_decision() -> None:
    expect = {
        (0.6, 0.1): ("improves", "rises with scale, by more than the ROPE"),
        (0.2, 0.065): ("credibly_positive", "rises with scale, but"),
        (0.0, 0.02): ("practically_null", "no practical difference"),
        (-0.2, 0.065): ("credibly_negative", "falls with scale, but"),
        (-0.6, 0.1): ("worsens", "falls with scale, by more than the ROPE"),
        (0.0, 0.3): ("no_credible_effect", "do not say whether"),
    }
    seen = set()
    for beta, (decision, phrase) in expect.items():
        results = _results(beta=beta, tasks={"refusal": beta, "word_association": beta})
        assert results["scale_effect"]["decision"] == decision
        assert phrase in headline(results), (decision, headline(results))
        assert f"P(slope > 0) = {results['scale_effect']['prob_positive']:.3f}" in headline(results)
        seen.add(decision)
    assert seen | {"not_estimable", "not_decided"} == set(DECISIONS)


def test_flipping_the_sign_flips_the_words() -> None:
    up, down = _results(beta=(0.2, 0.065)), _results(beta=(-0.2, 0.065))
    assert "rises" in headline(up) and "falls" not in headline(up)
    assert "falls" in headline(down) and "rises" not in headline(down)
    assert "-0.20" in headline(down)


def test_shrinking_the_hdi_moves_from_direction_to_size() -> None:
    wide, narrow = _results(beta=(0.2, 0.065)), _results(beta=(0.2, 0.02))
    assert "not shown to exceed" in headline(wide)
    assert "by more than the ROPE" in headline(narrow) and "not shown" not in headline(narrow)


def test_opposite_task_signs_are_not_summarised() -> None:
    results = _results(beta=(0.0, 0.05), tasks={"refusal": (0.4, 0.08), "word_association": (-0.4, 0.08)})
    assert signs_disagree(results["scale_effect"]["per_task"])
    h = headline(results)
    assert "The tasks disagree on the direction" in h
    assert "rises with scale in refusal" in h and "falls in word association" in h
    assert "declared estimand, not a summary" in h
    assert "practical difference" not in h and "inconclusive" not in h


def test_failed_diagnostics_are_said() -> None:
    results = _results()
    results["scale_effect"]["finding"] = False
    results["diagnostics"]["passed"] = False
    assert "not decided" in headline(results)
    assert "Failed diagnostics" in _text(results, "checks") and "the accuracy model" in _text(results, "checks")
    results2 = _results()
    results2["model_zoo"]["sdt"]["diagnostics"]["passed"] = False
    assert "the sdt model" in _text(results2, "checks")
    assert "Every fit passed" in _text(_results(), "checks")


def test_criterion_direction_in_words_per_task() -> None:
    results = _results()
    c = _text(results, "criterion")
    assert "larger models are more ready to say yes (by more than the ROPE) in word association (-0.30" in c
    assert "larger models are more cautious, slower to say yes (size not shown to exceed the ROPE) in refusal (+0.25" in c
    flipped = _results(crit={"refusal": (-0.25, 0.1), "word_association": (0.3, 0.1)})
    c2 = _text(flipped, "criterion")
    assert "more ready to say yes (size not shown to exceed the ROPE) in refusal" in c2
    assert "more cautious, slower to say yes (by more than the ROPE) in word association" in c2
    same = _results(crit={"refusal": (0.0, 0.3), "word_association": (0.05, 0.3)})
    assert "no credible change in the readiness to say yes (sign not credible) in refusal (+0.00" in \
        _text(same, "criterion").replace("-0.00", "+0.00")
    assert criterion_words({"decision": "no_credible_effect"}).startswith("no credible change")
    assert "more ready" not in criterion_words({"decision": "practically_null"})


def test_baseline_counts_follow_the_skill_rows() -> None:
    results = _results()
    b = _text(results, "baseline")
    assert "in word association, 0 of 5 models beat always saying no" in b
    assert "in refusal, 3 of 5 models beat always saying yes" in b
    results["skill"][0]["skill_over_mode"] = 0.2
    assert "in word association, 1 of 5 models beat always saying no" in _text(results, "baseline")


def test_robustness_changes_and_direction_comparison_are_said() -> None:
    results = _results()
    results["sensitivity"]["priors"].update({"verdict_holds": False, "changed": ["priors x2"]})
    results["sensitivity"]["scale_variable"].update({"verdict_holds": False, "changed": ["capability"]})
    t = _text(results, "checks")
    assert "changes with the prior width (priors x2)" in t
    assert "the direction changes with capability" in t
    assert "the other models' slopes were not refitted" in t  # no companion refits in R
    results["sensitivity"]["effects"] = {"sdt": {"holds": {"sensitivity": True}}}
    assert "prior variants of the sdt effects are listed below" in _text(results, "checks")


def test_robustness_line_names_the_sdt_effects_that_held_and_the_strict_refit() -> None:
    results = _results()
    results["sensitivity"]["effects_scale_variable"] = {"sdt": {
        "variants": [{"variable": "active_params"}, {"variable": "capability"}],
        "holds": {"bias": True, "sensitivity": False},
        "changed": {"bias": [], "sensitivity": ["active_params"]}}}
    results["missingness"] = {"strict_accuracy_refit": {"changes_answer": False, "changed": []}}
    assert _text(results, "effect_robustness").startswith("Robustness beyond the accuracy slope: the criterion")
    t = _text(results, "effect_robustness")
    assert "the criterion direction (sdt) is the same with active_params and capability" in t
    assert "the sdt direction changes, overall or in a task, for d' with active_params" in t
    assert "(strict accuracy) leaves every accuracy decision unchanged" in t
    results["missingness"]["strict_accuracy_refit"] = {
        "changes_answer": True, "changed": ["overall", "refusal"],
        "strict": {"decision": "no_credible_effect", "mean": 0.05, "hdi_low": -0.1, "hdi_high": 0.2}}
    t = _text(results, "effect_robustness")
    assert "changes the accuracy decision (overall and refusal; strict-accuracy slope:" in t
    assert "unchanged" not in t.split("strict accuracy")[-1]


def test_absent_sections_give_no_finding_not_a_placeholder() -> None:
    results = _results()
    for k in ("sdt_effect", "skill", "design_sensitivity", "confounds"):
        results.pop(k, None)
    keys = [f["key"] for f in findings(results)]
    assert keys == ["accuracy", "accuracy_tasks", "checks"]
    results["scale_effect"] = {**results["scale_effect"], "decision": "not_estimable", "mean": None,
                         "reason": "only 2 model(s) have 'params_b'"}
    assert headline(results) == "The slope of self-prediction accuracy (averaged over the 2 tasks) is not estimable: only 2 model(s) have 'params_b'."


def test_every_meaning_is_stated_and_distinct() -> None:
    assert set(DECISION_MEANING) == set(DECISIONS)
    assert len(set(DECISION_MEANING.values())) == len(DECISIONS)
    assert {direction_of(d) for d in DECISIONS} == {"positive", "negative", "null", "unresolved"}


def test_confounds_top_family_share_and_moe() -> None:
    import polars as pl

    rows = []
    for m, fam, p, a in [("a1", "A", 7, 7), ("a2", "A", 70, 70), ("b1", "B", 8, 8),
                         ("d1", "D", 671, 37), ("d2", "D", 671, 37), ("d3", "D", 671, 37)]:
        for t in ("t1", "t2"):
            rows.append({"model": m, "family": fam, "task": t, "params_b": float(p),
                         "active_params_b": float(a), "capability": None, "x": float(np.log10(p))})
    confounds = scale_axis_confounds(pl.DataFrame(rows), "params")
    assert confounds["top"]["one_family"] and confounds["top"]["family"] == "D" and confounds["top"]["n_models"] == 3
    assert confounds["largest_family"] == "D"
    assert confounds["family_share"]["A"] == pytest.approx(1 / (np.log10(671) - np.log10(7)), rel=1e-9)
    assert confounds["mixture_of_experts"]["models"] == ["d1", "d2", "d3"]
    results = _results()
    results["confounds"] = confounds
    results["confounds"]["without_family"] = {"family": "D", "n_models": 3, **_eff(0.05, 0.2)}
    t = _text(results, "confounds")
    assert "the 3 largest models (671 B total parameters) are all D" in t
    assert "without the D family (3 models left)" in t
    assert "inconclusive" in t
    results2 = copy.deepcopy(results)
    results2["confounds"]["top"]["one_family"] = False
    assert "are all D" not in _text(results2, "confounds")


def _svo(direction: str, slope_dir: str) -> dict:
    d = {"mean_advantage": 0.3 if direction == "positive" else 0.01,
         "mean_advantage_ci": [0.1, 0.5] if direction == "positive" else [-0.1, 0.12],
         "mean_direction": direction,
         "slope_on_scale": {"direction": slope_dir}}
    return {"per_task": {"refusal": {"status": "estimated", "summary": {"dprime": d}},
                         "other": {"status": "not_estimable", "reason": "x"}}}


def test_self_other_finding_follows_the_numbers() -> None:
    from selfmodel.decisions.verdict import self_other_finding

    assert self_other_finding({}) is None
    pos = self_other_finding({"self_vs_other_rescored": _svo("positive", "positive")})
    assert "predict themselves better" in pos and "growing with scale" in pos
    null = self_other_finding({"self_vs_other_rescored": _svo("unclear", "unclear")})
    assert "no clear self advantage" in null and "not shown to change" in null
    assert "other" not in null.split(":", 1)[1]  # the not-estimable task is not spoken of


def test_missingness_finding_only_when_it_depends_on_scale() -> None:
    from selfmodel.decisions.verdict import missingness_finding

    base = {"slope_of_missingness": {"per_task": {"t": {"estimate": -1.0, "p_value": 0.01}}}}
    assert missingness_finding({"missingness": {**base, "depends_on_scale": {"t": False}}}) is None
    text = missingness_finding({"missingness": {**base, "depends_on_scale": {"t": True}}})
    assert "falls with scale" in text and "p = 0.010" in text


def test_mixed_check_finding_only_when_the_check_fails() -> None:
    from selfmodel.decisions.verdict import mixed_check_finding

    sec = {"status": "estimated", "passed": True, "flagged": [], "overall": {"p_value": 0.5}}
    assert mixed_check_finding({"mixed_predictive": sec}) is None
    bad = {**sec, "passed": False, "flagged": [{"kind": "family", "group": "llama", "p_value": 1e-4}]}
    assert "family llama" in mixed_check_finding({"mixed_predictive": bad})


def test_effect_priors_finding_names_what_held() -> None:
    from selfmodel.decisions.verdict import effect_priors_finding

    assert effect_priors_finding({}) is None
    results = {"sensitivity": {"effects": {"sdt": {"holds": {"sensitivity": True, "bias": False}}}}}
    text = effect_priors_finding(results)
    assert "unchanged for d' (sdt)" in text and "changes for criterion (sdt)" in text


_FAILED_RHAT = {"passed": False, "checks": [
    {"name": "r_hat", "passed": False, "threshold": "<= 1.01", "value": 1.0126},
    {"name": "divergences", "passed": True, "threshold": "== 0", "value": 0}]}


def _decision_words(text: str) -> list[str]:
    return [m for m in DECISION_MEANING.values() if m in text] + [d for d in DECISIONS if d in text]


def test_a_failed_sdt_fit_has_no_decision_on_the_first_screen() -> None:
    """Issue 28.4: a fit that failed its gate speaks only of the failure, with the numbers."""
    results = _results()
    passed = {f["key"] for f in findings(results)}
    assert {"sensitivity", "criterion"} <= passed
    results["model_zoo"]["sdt"]["diagnostics"] = _FAILED_RHAT
    results["sdt_effect"]["sensitivity"]["finding"] = False
    results["sdt_effect"]["fit_model"] = "sdt"
    found = {f["key"]: f["text"] for f in findings(results)}
    assert "sensitivity" not in found and "criterion" not in found
    text = found["sdt_diagnostics"]
    assert "max R-hat 1.013 against <= 1.01" in text and "not decided" in text
    assert _decision_words(text) == []
    # at the exploratory preset the (expected) failure is labelled and the decisions stay
    results["settings"] = {"preset": "exploratory"}
    found = {f["key"]: f["text"] for f in findings(results)}
    assert "sensitivity" in found and "exploratory" in found["sdt_diagnostics"]


def test_a_failed_accuracy_fit_has_no_decision_on_the_first_screen() -> None:
    results = _results()
    results["diagnostics"] = _FAILED_RHAT
    results["scale_effect"]["finding"] = False
    found = {f["key"]: f["text"] for f in findings(results)}
    assert "accuracy_tasks" not in found
    assert "not decided" in found["accuracy"] and "max R-hat 1.013" in found["accuracy"]
    assert _decision_words(found["accuracy"]) == []
    assert f"{results['scale_effect']['mean']:+.2f}" in found["accuracy"]  # the estimate, as computed


def test_a_failed_refit_without_a_family_is_not_decided() -> None:
    results = _results()
    results["confounds"] = {"without_family": {"family": "A", "n_models": 9, **_eff(0.3, 0.05),
                                         "diagnostics_passed": False}}
    assert NOT_DECIDED in _text(results, "confounds")
    results["confounds"]["without_family"]["diagnostics_passed"] = True
    assert NOT_DECIDED not in _text(results, "confounds")


def test_robustness_of_a_failed_fit_is_not_compared() -> None:
    """A failed main fit or refit neither confirms nor contradicts a decision (issue 28.4)."""
    from selfmodel.decisions.verdict import effect_priors_finding

    results = _results()
    results["sensitivity"]["effects"] = {"sdt": {"holds": {"sensitivity": True, "bias": True},
                                           "variants": [{"factor": 0.5, "diagnostics_passed": True},
                                                        {"factor": 2.0, "diagnostics_passed": False}]}}
    results["sensitivity"]["effects_scale_variable"] = {"sdt": {
        "variants": [{"variable": "capability", "diagnostics_passed": False}],
        "holds": {"bias": True, "sensitivity": True}, "changed": {}}}
    text = effect_priors_finding(results)
    assert "unchanged" not in text and "not compared for criterion (sdt) and d' (sdt)" in text
    assert "the sdt directions with capability are not compared (failed diagnostics: capability)" in _text(
        results, "effect_robustness")
    for v in results["sensitivity"]["effects"]["sdt"]["variants"]:
        v["diagnostics_passed"] = True
    results["sensitivity"]["effects_scale_variable"]["sdt"]["variants"][0]["diagnostics_passed"] = True
    assert "decisions unchanged for criterion (sdt) and d' (sdt)" in effect_priors_finding(results)
    results["model_zoo"]["sdt"]["diagnostics"] = _FAILED_RHAT  # the main fit failed: nothing to compare
    assert "not compared" in effect_priors_finding(results)
    assert "failed diagnostics: the main sdt fit" in _text(results, "effect_robustness")


def test_the_crosscheck_of_a_failed_sdt_fit_is_not_compared() -> None:
    results = _results()
    results["sdt_effect"]["fit_model"] = "sdt"
    results["sdt_crosscheck"] = {"per_task": {"refusal": {"dprime": {"agrees": True, "estimate": 0.3,
                                                               "p_value": 0.01}}}}
    assert "agrees for d' in refusal" in _text(results, "sdt_crosscheck")
    results["model_zoo"]["sdt"]["diagnostics"] = _FAILED_RHAT
    text = _text(results, "sdt_crosscheck")
    assert "agrees" not in text and "not compared" in text and "max R-hat 1.013" in text


def test_the_accuracy_robustness_of_a_failed_refit_is_not_compared() -> None:
    results = _results()
    assert "decision is unchanged with every prior scale" in _text(results, "checks")
    results["sensitivity"]["priors"]["variants"] = [{"factor": 0.5, "diagnostics_passed": True},
                                              {"factor": 2.0, "diagnostics_passed": False}]
    results["sensitivity"]["scale_variable"]["variants"][1]["diagnostics_passed"] = False
    text = _text(results, "checks")
    assert "the prior-width refits are not compared (failed diagnostics: priors x2)" in text
    assert "the scale-variable refits are not compared (failed diagnostics: capability)" in text
    assert "unchanged" not in text and "the same with" not in text
