"""The verdict's sentences, chosen by code from the numbers of ``results.json``.

Every interpretive sentence of the report's first screen comes from :func:`findings` (a
pure function of the results dictionary; no fitting, no files), so each one changes with the
numbers it speaks of and is tested against perturbed results (``tests/decisions/test_verdict.py``):

``accuracy``
    the accuracy slope (the declared estimand: the average over tasks of the task slopes),
    its direction and whether its size exceeds the ROPE, in the words of
    ``selfmodel.records.contract.DECISION_MEANING``; when tasks have credible slopes of opposite
    signs the average is named as such and not read as a summary;
``accuracy_tasks``
    the per-task accuracy slopes;
``sensitivity``, ``criterion``
    the signal-detection slopes per task, the criterion's direction in words (a negative
    criterion slope: larger models are more ready to say yes; positive: more cautious);
``validation``
    each kind of decision printed in this run whose operating characteristics are not
    ``checked`` (``results.json`` ``validation_map``: an arm missed its target, ran at other
    settings or does not record them, or is missing), in words with the arm's figures;
``baseline``
    how many models beat always giving their most common outcome, per binary task;
``detectable``
    the smallest slope the design declares ``improves`` 80% of the time;
``checks``
    whether any fit failed its diagnostics and whether the decisions survived the
    robustness refits (and which models those refits covered);
``confounds``
    the top of the scale axis held by one family, the share of the range one family spans,
    the slope without the largest family, and mixture-of-experts total vs active sizes.

A finding is omitted when its section is absent from the results (not run), never filled
with a placeholder.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from selfmodel.decisions.targets import first_screen
from selfmodel.records.contract import DECISION_MEANING, NEGATIVE_DECISIONS, POSITIVE_DECISIONS

Results = Mapping[str, Any]


def fmt_number(v: float | None, fmt: str = ".2f") -> str:
    """``v`` in ``fmt``; a value that is not 0 but would print as 0 gets two significant digits.

    A printed interval bound then never reads as 0 when it is not, so an interval beside a
    "credibly positive" is seen to exclude 0 (issue 28.3). The report's ``num`` is this.

    Examples
    --------
    >>> fmt_number(0.0031, "+.2f"), fmt_number(-0.0004, "+.2f"), fmt_number(0.0, "+.2f")
    ('+0.0031', '-0.0004', '+0.00')
    >>> fmt_number(None), fmt_number(1234.5, ",.0f"), fmt_number(0.25, ".1%")
    ('n/a', '1,234', '25.0%')
    """
    if v is None:
        return "n/a"
    out = format(v, fmt)
    if v != 0 and fmt.endswith("f"):
        try:
            shown = float(out.replace(",", ""))
        except ValueError:
            return out
        if shown == 0:
            out = format(v, ("+" if "+" in fmt else "") + ".2g")
    return out


_n = fmt_number


def _exploratory(results: Results) -> bool:
    """Whether the run used ``--preset exploratory`` (a short run: failed checks expected)."""
    return (results.get("settings") or {}).get("preset") == "exploratory"


#: What the report shows instead of a decision word for a fit that failed its diagnostics
#: (results.json's ``not_decided``: ``selfmodel.decisions.gate``)
NOT_DECIDED = DECISION_MEANING["not_decided"]


def failed_gate(results: Results, fit_model: str | None = None) -> str | None:
    """Which diagnostics a fit failed, in words (``None``: it passed, or the run is exploratory).

    ``fit_model``: a model of ``model_zoo`` (default: the accuracy model, ``diagnostics``).
    At ``--preset exploratory`` failed checks are expected and the whole report says so
    first, so its decisions are shown, labelled; at any other settings a failed fit's
    decisions are never shown as decisions (issue 28.4).
    """
    if _exploratory(results):
        return None
    if fit_model is None or fit_model == (results.get("scale_effect") or {}).get("fit_model"):
        diag = results.get("diagnostics") or {}
    else:
        diag = ((results.get("model_zoo") or {}).get(fit_model) or {}).get("diagnostics") or {}
    return failed_checks(diag)


def failed_checks(diag: Mapping[str, Any]) -> str | None:
    """The failed checks of a fit's ``diagnostics`` in words (``None`` when it passed).

    >>> failed_checks({"passed": False, "checks": [{"name": "r_hat", "passed": False,
    ...                "value": 1.03, "threshold": "<= 1.01"}]})
    'max R-hat 1.03 against <= 1.01'
    """
    if diag.get("passed", True):
        return None
    failed = [c for c in diag.get("checks") or [] if not c.get("passed", True)]
    if not failed:
        return "diagnostics failed"
    return ", ".join(f"{_CHECK_WORDS.get(c['name'], c['name'])} {_n(c.get('value'), '.4g')} "
                     f"against {c.get('threshold')}" for c in failed)


_CHECK_WORDS = {"r_hat": "max R-hat", "ess_bulk": "min bulk ESS", "divergences": "divergences",
                "bfmi": "min E-BFMI"}


def _interval(e: Mapping[str, Any]) -> str:
    return (f"{_n(e.get('mean'), '+.2f')}, {e.get('hdi_prob', 0.94):.0%} HDI "
            f"{_n(e.get('hdi_low'), '+.2f')} to {_n(e.get('hdi_high'), '+.2f')}")


def _ci(e: Mapping[str, Any]) -> str:
    """Compact ``mean [low, high]``."""
    return f"{_n(e.get('mean'), '+.2f')} [{_n(e.get('hdi_low'), '+.2f')}, {_n(e.get('hdi_high'), '+.2f')}]"


def _grouped(per_task: Mapping[str, Mapping[str, Any]], words: Any) -> str:
    """Tasks grouped by what their decision says: ``words in a (ci) and b (ci); ...``."""
    groups: dict[str, list[str]] = {}
    for t, r in sorted(per_task.items()):
        what = words(r)
        groups.setdefault(what, []).append(
            f"{_task(t)} ({_ci(r)})" if r.get("mean") is not None else _task(t))
    return "; ".join(f"{what} in {_list(ts)}" for what, ts in groups.items())


def _task(t: str) -> str:
    return t.replace("_", " ")


def _list(parts: Sequence[str]) -> str:
    parts = list(parts)
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def signs_disagree(per_task: Mapping[str, Mapping[str, Any]]) -> bool:
    """True when one task's slope is credibly positive and another's credibly negative."""
    ds = {r.get("decision") for r in per_task.values()}
    return bool(ds & POSITIVE_DECISIONS) and bool(ds & NEGATIVE_DECISIONS)


def rope_text(e: Mapping[str, Any]) -> str:
    """What the ROPE of a decision is (``rope_meaning.text``, else the bare half-width)."""
    m = e.get("rope_meaning") or {}
    if m.get("text"):
        return str(m["text"])
    return f"±{_n(e.get('rope'), 'g')}"


def slope_sentence(e: Mapping[str, Any], *, quantity: str, units: str, rope: str) -> str:
    """One sentence saying what a slope decision means, with its numbers.

    ``quantity`` names what changes ("self-prediction accuracy"), ``units`` the slope's
    units, ``rope`` the ROPE in words.
    """
    d = e.get("decision")
    if d == "not_estimable" or e.get("mean") is None:
        return f"The slope of {quantity} is not estimable: {e.get('reason') or 'no fit'}."
    nums = (f"slope {_n(e.get('mean'), '+.2f')} {units} ({e.get('hdi_prob', 0.94):.0%} HDI "
            f"{_n(e.get('hdi_low'), '+.2f')} to {_n(e.get('hdi_high'), '+.2f')}), "
            f"P(slope > 0) = {_n(e.get('prob_positive'), '.3f')}")
    q = quantity[0].upper() + quantity[1:]
    if d == "improves":
        return f"{q} rises with scale, by more than the ROPE of {rope}: {nums}."
    if d == "credibly_positive":
        return (f"{q} rises with scale, but the rise is not shown to exceed the ROPE of {rope}: "
                f"{nums}; the sign is credible, the HDI reaches into the ROPE.")
    if d == "worsens":
        return f"{q} falls with scale, by more than the ROPE of {rope}: {nums}."
    if d == "credibly_negative":
        return (f"{q} falls with scale, but the fall is not shown to exceed the ROPE of {rope}: "
                f"{nums}; the sign is credible, the HDI reaches into the ROPE.")
    if d == "practically_null":
        return (f"Scale makes no practical difference to {quantity}: {nums}; the whole HDI lies "
                f"inside the ROPE of {rope}.")
    return (f"The data do not say whether {quantity} rises or falls with scale: {nums}; neither "
            f"sign is credible, so the result is inconclusive.")


def _short(e: Mapping[str, Any]) -> str:
    """Per-task phrase: the decision's meaning with the interval."""
    d = e.get("decision", "not_estimable")
    if d == "not_estimable" or e.get("mean") is None:
        return f"not estimable ({e.get('reason') or 'no fit'})"
    return f"{DECISION_MEANING.get(d, d)}, {_interval(e)}"


def accuracy_finding(results: Results) -> str | None:
    """The headline: the accuracy slope's direction and size (the average over tasks)."""
    effect = results.get("scale_effect")
    if not effect:
        return None
    per = effect.get("per_task") or {}
    units = effect.get("units", "")
    estimand = (f"averaged over the {len(per)} tasks" if len(per) > 1 else "")
    quantity = "self-prediction accuracy" + (f" ({estimand})" if estimand else "")
    if signs_disagree(per):
        pos = [f"{_task(t)} ({_ci(r)})" for t, r in sorted(per.items())
               if r.get("decision") in POSITIVE_DECISIONS]
        neg = [f"{_task(t)} ({_ci(r)})" for t, r in sorted(per.items())
               if r.get("decision") in NEGATIVE_DECISIONS]
        return (f"The tasks disagree on the direction: accuracy credibly rises with scale in "
                f"{_list(pos)} and credibly falls in {_list(neg)}. The average over tasks "
                f"({_interval(effect)} {units}) is a declared estimand, not a summary of these effects.")
    gate = failed_gate(results) if effect.get("decision") != "not_estimable" else None
    if gate:
        return (f"The accuracy model's fit failed its diagnostics ({gate}), so the {quantity} slope is "
                f"not decided; as computed it is {_interval(effect)} {units}.")
    text = slope_sentence(effect, quantity=quantity, units=units, rope=rope_text(effect))
    if not effect.get("finding", True) and effect.get("decision") != "not_estimable":
        text += (" At the exploratory settings the fit's checks do not pass, so this is not a "
                 "finding." if _exploratory(results) else
                 " The fit failed its diagnostics, so this is not a finding.")
    return text


def accuracy_tasks_finding(results: Results) -> str | None:
    """The per-task accuracy slopes, each task's decision in words."""
    effect = results.get("scale_effect") or {}
    per = effect.get("per_task") or {}
    if len(per) < 2:
        return None
    if failed_gate(results):
        return None  # said by the accuracy finding: the fit failed, nothing per task is decided
    parts = [f"{_task(t)} — {_short(r)}" for t, r in sorted(per.items())]
    return f"Accuracy slope per task ({effect.get('units', '')}): " + "; ".join(parts) + "."


def criterion_words(e: Mapping[str, Any]) -> str:
    """The criterion slope's direction in words (negative: more ready to say yes)."""
    d = e.get("decision")
    if d in NEGATIVE_DECISIONS:
        size = "by more than the ROPE" if d == "worsens" else "size not shown to exceed the ROPE"
        return f"larger models are more ready to say yes ({size})"
    if d in POSITIVE_DECISIONS:
        size = "by more than the ROPE" if d == "improves" else "size not shown to exceed the ROPE"
        return f"larger models are more cautious, slower to say yes ({size})"
    if d == "practically_null":
        return "the readiness to say yes does not change in practice (HDI inside the ROPE)"
    if d == "not_estimable":
        return f"not estimable ({e.get('reason') or 'no fit'})"
    return "no credible change in the readiness to say yes (sign not credible)"


def sdt_findings(results: Results) -> list[tuple[str, str]]:
    """Sensitivity d' and criterion per task (the signal-detection model)."""
    sdt = results.get("sdt_effect")
    if not sdt:
        return []
    out: list[tuple[str, str]] = []
    sens, bias = sdt.get("sensitivity") or {}, sdt.get("bias") or {}
    gate = failed_gate(results, sdt.get("fit_model") or "sdt") if sdt.get("fitted") is not False else None
    if gate:
        return [("sdt_diagnostics", f"The signal-detection fit failed its diagnostics ({gate}): its d' "
                 "and criterion slopes are not decided (the table below shows them as computed).")]
    if sens.get("per_task"):
        words = _grouped(sens["per_task"], lambda r: (
            f"not estimable ({r.get('reason') or 'no fit'})" if r.get("decision") == "not_estimable"
            else DECISION_MEANING.get(r.get("decision"), "")))
        out.append(("sensitivity", f"Sensitivity d' slope per task, mean [94% HDI], ROPE "
                    f"{rope_text(sens)}: {words}."))
    if bias.get("per_task"):
        words = _grouped(bias["per_task"], criterion_words)
        out.append(("criterion", f"Criterion (readiness to say yes), slope per task: {words}."))
    if sdt.get("fitted") is False:
        out.append(("sdt_diagnostics", "The signal-detection model was not fitted "
                    f"({sdt.get('reason') or 'no reason recorded'}): d' and criterion are not estimable."))
    elif not sdt.get("sensitivity", {}).get("finding", True):
        why = ("The signal-detection fit's checks do not pass at the exploratory settings"
               if _exploratory(results) else "The signal-detection fit failed its diagnostics")
        out.append(("sdt_diagnostics", f"{why}: its slopes are reported as computed and are "
                    "not findings."))
    return out


def validation_finding(results: Results) -> str | None:
    """The kinds of decision this run printed whose operating characteristics are not ``checked``.

    Read from ``validation_map`` (each arm held to its target there); every figure is the
    arm's own. ``None`` when every kind printed is ``checked`` or the results carry no map.
    """
    rows = [r for r in results.get("validation_map") or [] if r.get("in_this_run") and r.get("status") != "checked"]
    if not rows:
        return None
    return "Operating characteristics (arms against targets; all in the validation map): " + first_screen(rows) + "."


def baseline_finding(results: Results) -> str | None:
    """How many models beat always giving their most common outcome, per binary task."""
    rows = [r for r in results.get("skill") or [] if r.get("binary") and r.get("skill_over_mode") is not None]
    if not rows:
        return None
    parts = []
    for task in sorted({r["task"] for r in rows}):
        rs = [r for r in rows if r["task"] == task]
        beat = sum(r["skill_over_mode"] > 0 for r in rs)
        modes = {("yes" if (r.get("outcome_rate") or 0) >= 0.5 else "no") for r in rs}
        what = f"always saying {modes.pop()}" if len(modes) == 1 else "always giving their own most common outcome"
        parts.append(f"in {_task(task)}, {beat} of {len(rs)} models beat {what}")
    return ("Against the simplest baseline (point estimates of accuracy): " + "; ".join(parts) + ".")


def detectable_finding(results: Results) -> str | None:
    """The smallest slope the design would declare ``improves`` 80% of the time."""
    design_sensitivity = results.get("design_sensitivity") or {}
    mde = design_sensitivity.get("mde_80")
    if mde is None:
        return None
    effect = results.get("scale_effect") or {}
    drawn = design_sensitivity.get("variance_components") == "posterior_draws"
    dp = (design_sensitivity.get("dprime") or {}).get("mde_80")
    dprime = f"d' slope: {_n(dp, '.2f')}; " if dp is not None else ""
    how = ("variance components drawn from the posterior" if drawn
           else "simulated from the fitted variance components")
    return (f"What the design could detect: a true slope of {_n(mde, '.2f')} {effect.get('units', '')} "
            f"would be declared 'improves' 80% of the time ({dprime}{how}).")


def was_fitted(diagnostics: Mapping[str, Any]) -> bool:
    """Whether diagnostics come from a fit (a model not fitted has no R-hat and no ESS)."""
    return diagnostics.get("max_rhat") is not None or diagnostics.get("min_ess_bulk") is not None


def checks_finding(results: Results) -> str:
    """Diagnostics of every fit and the robustness refits' outcome, with their coverage."""
    failed = []
    main = results.get("diagnostics") or {}
    fitted = was_fitted(main)  # the accuracy model is not fitted when the scale is not estimable
    if fitted and not main.get("passed", True):
        failed.append("the accuracy model")
    for name, m in (results.get("model_zoo") or {}).items():
        if isinstance(m, dict) and m.get("fitted"):
            fitted = True
            if not (m.get("diagnostics") or {}).get("passed", True) and name != (
                    results.get("scale_effect") or {}).get("fit_model"):
                failed.append(f"the {name} model")
    contrast = (results.get("contrasts") or {}).get("diagnostics") or {}
    if was_fitted(contrast):
        fitted = True
        if not contrast.get("passed", True):
            failed.append("the contrast model")
    diag = ("No model was fitted (the first lines say why)." if not fitted
            else "Every fit passed its diagnostics." if not failed
            else f"Checks not passed at the exploratory settings (not findings): {_list(failed)}."
            if _exploratory(results)
            else f"Failed diagnostics (reported, not findings): {_list(failed)}.")
    sens = results.get("sensitivity") or {}
    rob = []
    priors = sens.get("priors")
    if priors and _failed_refits(results, priors.get("model", "scale"), priors):
        rob.append(f"the prior-width refits are not compared ({_failed_refits(results, priors.get('model', 'scale'), priors)})")
    elif priors:
        held = priors.get("verdict_holds")
        rob.append({True: f"the {priors.get('model', 'accuracy')} model's decision is unchanged with every "
                          "prior scale halved and doubled",
                    False: f"the {priors.get('model', 'accuracy')} model's decision changes with the prior "
                           f"width ({_list(priors.get('changed') or [])})",
                    None: "the prior-width refits could not be compared"}[held])
    scale_variable = sens.get("scale_variable")
    if scale_variable and _failed_refits(results, scale_variable.get("model", "scale"), scale_variable):
        rob.append(f"the scale-variable refits are not compared ({_failed_refits(results, scale_variable.get('model', 'scale'), scale_variable)})")
    elif scale_variable:
        held = scale_variable.get("verdict_holds")
        others = [e["variable"] for e in scale_variable.get("variants", []) if e.get("variable") != scale_variable.get("main_scale")]
        on = "direction" if scale_variable.get("compared_on") == "direction" else "decision"
        rob.append({True: f"the {on} is the same with {_list(others)} as the scale variable",
                    False: f"the {on} changes with {_list(scale_variable.get('changed') or [])} as the scale variable",
                    None: "the scale-variable refits could not be compared"}[held])
    if rob:
        covered = priors.get("model", "scale") if priors else "scale"
        others = sorted((sens.get("effects") or {}).keys())
        scope = (f"{covered} model; prior variants of the {_list(others)} effects are listed below"
                 if others else f"{covered} model only; the other models' slopes were not refitted")
        return diag + " Robustness (" + scope + "): " + "; ".join(rob) + "."
    return diag + " Robustness refits were not run."


_EFFECT_WORDS = {"sensitivity": "d'", "bias": "criterion"}


def _failed_refits(results: Results, model: str, entry: Mapping[str, Any]) -> str | None:
    """Which fits of a robustness entry failed their diagnostics, in words (``None``: none).

    The model's main fit and each variant (a scale variable, or a prior factor). A failed
    fit's decisions are not decisions (issue 28.4), so they neither confirm nor contradict
    the main fit's. At the exploratory preset nothing is held back (the report says so first).
    """
    if _exploratory(results):
        return None
    bad = [str(v["variable"]) if v.get("variable") else
           f"priors x{v['factor']:g}" if v.get("factor") is not None else "a variant"
           for v in entry.get("variants") or [] if v.get("diagnostics_passed") is False]
    if failed_gate(results, model):
        bad.insert(0, f"the main {model} fit")
    return f"failed diagnostics: {_list(bad)}" if bad else None


def companion_scale_variable_clauses(results: Results) -> list[str]:
    """Which companion effects (d', criterion) kept their direction with the other scale variables."""
    sens, out = results.get("sensitivity") or {}, []
    for model, entry in sorted((sens.get("effects_scale_variable") or {}).items()):
        others = [v["variable"] for v in entry.get("variants", [])]
        if not others:
            continue
        failed = _failed_refits(results, model, entry)
        if failed:
            out.append(f"the {model} directions with {_list(others)} are not compared ({failed})")
            continue
        held = [_EFFECT_WORDS.get(k, k) for k, ok in sorted((entry.get("holds") or {}).items()) if ok]
        changed = [f"{_EFFECT_WORDS.get(k, k)} with {_list(v)}"
                   for k, v in sorted((entry.get("changed") or {}).items()) if v]
        if held:
            out.append(f"the {_list(held)} direction ({model}) is the same with {_list(others)}")
        if changed:
            out.append(f"the {model} direction changes, overall or in a task, for {_list(changed)}")
    return out


def _strict_outcome(results: Results) -> str | None:
    """What the strict-accuracy refit did to the accuracy decisions (a predicate), or ``None``."""
    sdt = (results.get("missingness") or {}).get("strict_accuracy_refit") or {}
    if "changes_answer" not in sdt:
        return None
    if not sdt["changes_answer"]:
        return "leaves every accuracy decision unchanged"
    where = [c if c == "overall" else _task(c) for c in sdt.get("changed") or []]
    return (f"changes the accuracy decision ({_list(where)}; strict-accuracy slope: "
            f"{_short(sdt.get('strict') or {})})")


def effect_robustness_finding(results: Results) -> str | None:
    """The robustness line beyond the accuracy slope.

    Which d' and criterion findings held with the other scale variables, and whether strict
    accuracy (missing counted wrong) changes the accuracy answer.
    """
    parts = companion_scale_variable_clauses(results) + strict_accuracy_clauses(results)
    if not parts:
        return None
    text = "; ".join(parts)
    return "Robustness beyond the accuracy slope: " + text[0].lower() + text[1:] + "."


def strict_accuracy_clauses(results: Results) -> list[str]:
    """Whether the Bayesian refit on strict accuracy (missing counted wrong) changes the decision."""
    outcome = _strict_outcome(results)
    return [] if outcome is None else [
        f"counting absent and unreadable predictions as wrong (strict accuracy) {outcome}"]


def confounds_finding(results: Results) -> str | None:
    """Family and mixture-of-experts confounds of the scale axis (``confounds`` section)."""
    confounds = results.get("confounds")
    if not confounds:
        return None
    parts = []
    top = confounds.get("top")
    if top and top.get("n_models", 0) >= 2 and top.get("one_family"):
        parts.append(f"the {top['n_models']} largest models ({top['value_text']}) are all {top['family']}, "
                     "so the top of the scale axis is one family")
    sh = confounds.get("largest_share")
    if sh:
        parts.append(f"{sh['family']} spans {sh['share']:.0%} of the range of the scale variable")
    wo = confounds.get("without_family")
    if wo and wo.get("decision"):
        word = (NOT_DECIDED if wo.get("diagnostics_passed") is False and not _exploratory(results)
                else DECISION_MEANING.get(wo["decision"], wo["decision"]))
        parts.append(f"without the {wo['family']} family ({wo['n_models']} models left) the slope is "
                     f"{_interval(wo)}, {word}")
    moe = confounds.get("mixture_of_experts")
    if moe and moe.get("models"):
        variants = ((results.get("sensitivity") or {}).get("scale_variable") or {}).get("variants") or []
        alt = next((v.get("decision") for v in variants if v.get("variable") == "active_params"
                    and confounds.get("scale_variable") != "active_params"), None)
        s = (f"{len(moe['models'])} model(s) are mixture-of-experts (active parameters "
             f"{moe['active_range_text']} of {moe['total_range_text']} total)")
        if alt:
            s += f"; with active parameters as the scale variable the accuracy slope is {DECISION_MEANING.get(alt, alt)}"
        parts.append(s)
    if not parts:
        return None
    return "Confounds of the scale axis: " + "; ".join(parts) + "."


def self_other_finding(results: Results) -> str | None:
    """Per task: whether models predict themselves better than others (d') and the trend."""
    sec = results.get("self_vs_other_rescored") or {}
    parts = []
    for task, t in sorted((sec.get("per_task") or {}).items()):
        if t.get("status") != "estimated":
            continue
        d = t["summary"]["dprime"]
        lo, hi = d["mean_advantage_ci"]
        better = {"positive": "models predict themselves better than other models",
                  "negative": "models predict other models better than themselves",
                  }.get(d["mean_direction"], "no clear self advantage")
        sl = d["slope_on_scale"]["direction"]
        trend = {"positive": "growing with scale", "negative": "shrinking with scale",
                 "unclear": "not shown to change with scale"}.get(sl, "its trend not estimable")
        parts.append(f"in {_task(task)}, {better} (d' {d['mean_advantage']:+.2f} "
                     f"[{_n(lo)}, {_n(hi)}]), {trend}")
    if not parts:
        return None
    return "Self versus other (each model's predictions rescored against the others' outcomes): " + "; ".join(parts) + "."


def _flag_size(sec: Mapping[str, Any], flag: Mapping[str, Any]) -> str:
    """A flagged group's size and effect beside its p-value (cells, observed vs replicated)."""
    rows = sec.get(f"by_{flag['kind']}") or []
    row = next((r for r in rows if r.get(flag["kind"]) == flag["group"]), None)
    p = f"p = {_n(flag.get('p_value'), '.2g')}"
    if row is None or not row.get("replicated_accuracy_94"):
        return f" ({p})"
    lo, hi = row["replicated_accuracy_94"]
    return (f" ({row['cells']} cells; accuracy {_n(row['observed_accuracy'], '.2f')} against "
            f"{_n(lo, '.2f')}-{_n(hi, '.2f')} replicated, {p})")


def mixed_check_finding(results: Results) -> str | None:
    """Said only when the predictive check on new families, models and cells fails."""
    sec = results.get("mixed_predictive") or {}
    if sec.get("status") != "estimated" or sec.get("passed"):
        return None
    groups = [f"{f['kind']} {f['group']}{_flag_size(sec, f)}" for f in sec.get("flagged", [])]
    where = f": flagged {_list(groups)}" if groups else f" (overall p = {_n(sec['overall']['p_value'], '.3f')})"
    return ("The accuracy model fails its predictive check on new families, models and cells"
            f"{where}; the population it assumes does not reproduce these data.")


def sdt_crosscheck_finding(results: Results) -> str | None:
    """Whether the frequentist meta-regressions agree with the d' and criterion decisions."""
    sec = results.get("sdt_crosscheck") or {}
    if not results.get("sdt_effect"):
        return None
    gate = failed_gate(results, (results.get("sdt_effect") or {}).get("fit_model") or "sdt")
    if gate and sec.get("per_task"):
        return ("Frequentist cross-check of the signal-detection slopes: not compared, the "
                f"signal-detection fit failed its diagnostics ({gate}).")
    held: list[str] = []
    failed: list[str] = []
    for task, row in sorted((sec.get("per_task") or {}).items()):
        for q, word in (("dprime", "d'"), ("criterion", "criterion")):
            e = row.get(q) or {}
            if e.get("agrees") is None:
                continue
            label = f"{word} in {_task(task)}"
            (held if e["agrees"] else failed).append(
                label if e["agrees"] else f"{label} (frequentist slope {_n(e['estimate'], '+.2f')}, "
                f"p = {_n(e['p_value'], '.3f')}, Holm {_n(e.get('p_holm'), '.3f')})")
    if not held and not failed:
        return None
    text = "Frequentist cross-check of the signal-detection slopes (meta-regression of per-model values): "
    text += f"agrees for {_list(held)}" if held else "agrees for none"
    return text + (f"; differs for {_list(failed)}." if failed else ".")


def effect_priors_finding(results: Results) -> str | None:
    """Whether each companion model's decisions survive priors halved and doubled."""
    eff = (results.get("sensitivity") or {}).get("effects") or {}
    names = {"sensitivity": "d'", "bias": "criterion"}
    held: list[str] = []
    changed: list[str] = []
    unchecked: list[str] = []
    for model, entry in sorted(eff.items()):
        failed = _failed_refits(results, model, entry)
        for key, ok in sorted((entry.get("holds") or {}).items()):
            label = f"{names.get(key, key)} ({model})"
            (unchecked if failed else held if ok else changed).append(label)
    if not held and not changed and not unchecked:
        return None
    text = "Prior sensitivity beyond the accuracy model (every prior scale halved and doubled): "
    parts = [] if not unchecked else [f"not compared for {_list(unchecked)} (a fit failed its diagnostics)"]
    if held:
        parts.append(f"decisions unchanged for {_list(held)}")
    if changed:
        parts.append(f"some decision changes for {_list(changed)}, so those rest on the prior")
    return text + "; ".join(parts) + "."


def _missing_size(sec: Mapping[str, Any], task: str) -> str:
    """The effect size beside a p-value: how many predictions of the task are unusable.

    A significant slope on 3 unusable predictions of 4,000 is a flag on 3 records; the
    count and share say so where the p-value cannot.
    """
    rows = [r for r in sec.get("per_model_task") or [] if r.get("task") == task]
    if not rows:
        return ""
    bad = sum(int(r["n_missing"]) + int(r["n_unreadable"]) for r in rows)
    possible = sum(int(r["n_records"]) + int(r["n_missing"]) for r in rows)
    if possible == 0:
        return ""
    return f"{bad:,} of {possible:,} predictions unusable, {100 * bad / possible:.2g}%; "


def missingness_finding(results: Results) -> str | None:
    """Said only when missing or unreadable predictions depend on scale."""
    sec = results.get("missingness") or {}
    dep = [t for t, v in sorted((sec.get("depends_on_scale") or {}).items()) if v]
    if not dep:
        return None
    per = (sec.get("slope_of_missingness") or {}).get("per_task") or {}
    words = []
    for t in dep:
        e = per.get(t) or {}
        way = "falls" if (e.get("estimate") or 0) < 0 else "rises"
        words.append(f"in {_task(t)} it {way} with scale ({_missing_size(sec, t)}slope "
                     f"{_n(e.get('estimate'), '+.2f')} log-odds per unit of scale, "
                     f"p = {_n(e.get('p_value'), '.3f')})")
    strict = _strict_outcome(results)
    tail = (f" Refitted on strict accuracy (missing counted as wrong), the accuracy model {strict}."
            if strict else " See the strict-accuracy sensitivity.")
    return ("Missing and unreadable predictions depend on scale, so accuracy on readable predictions "
            "is not missing at random: " + "; ".join(words) + "." + tail)


def confirmatory_finding(results: Results) -> str | None:
    """The confirmatory family, decided together (``hypotheses.multiplicity.confirmatory``).

    Every other decision of the first screen is exploratory: one decision at a time at the
    declared HDI mass, not controlled for the number of decisions.
    """
    fam = ((results.get("hypotheses") or {}).get("multiplicity") or {}).get("confirmatory") or {}
    if not fam.get("size"):
        return None
    parts = []
    for m in fam.get("members") or []:
        d = m.get("decision")
        if d == "not_estimable" or m.get("mean") is None:
            parts.append(f"{m.get('name')}: not estimable ({m.get('reason') or 'no fit'})")
            continue
        if m.get("finding") is False and not _exploratory(results):
            parts.append(f"{m.get('name')}: {NOT_DECIDED}; as computed {_interval(m)}")
            continue
        parts.append(f"{m.get('name')}: {DECISION_MEANING.get(d, d)}, {_interval(m)}"
                     + ("" if m.get("supported") else f" (predicted: {m.get('predicted')})")
                     + (" -- its fit's checks do not pass at the exploratory settings, not a finding"
                        if m.get("finding") is False else ""))
    verdict = {True: "supported as a family", False: "not supported as a family",
               None: "not decidable as a family"}[fam.get("supported")]
    if fam.get("supported") is None and fam.get("reason"):
        verdict += f" ({fam['reason']})"
    joint = "; ".join(f"P(every confirmatory slope of the {j['fit']} fit has its predicted sign) = "
                      f"{_n(j.get('prob_all_predicted_sign'), '.3f')}" for j in fam.get("joint") or []
                      if not failed_gate(results, j.get("fit")))
    return (f"Confirmatory hypotheses ({fam['size']}, declared in the hypotheses file), decided together "
            f"with Bonferroni-adjusted {_n(fam.get('hdi_prob'), '.1%')} HDIs: {verdict}. "
            + "; ".join(parts) + "."
            + (f" {joint}." if joint else "")
            + " Every other decision on this page is exploratory (one at a time, not adjusted).")


def findings(results: Results) -> list[dict[str, str]]:
    """The first screen's findings, in order (``key``, ``text``)."""
    out: list[tuple[str, str | None]] = [
        ("accuracy", accuracy_finding(results)),
        ("confirmatory", confirmatory_finding(results)),
        ("accuracy_tasks", accuracy_tasks_finding(results)),
    ]
    out += sdt_findings(results)
    out += [
        ("validation", validation_finding(results)),
        ("baseline", baseline_finding(results)),
        ("detectable", detectable_finding(results)),
        ("checks", checks_finding(results)),
        ("confounds", confounds_finding(results)),
        ("self_vs_other", self_other_finding(results)),
        ("missingness", missingness_finding(results)),
        ("mixed_predictive", mixed_check_finding(results)),
        ("sdt_crosscheck", sdt_crosscheck_finding(results)),
        ("effect_priors", effect_priors_finding(results)),
        ("effect_robustness", effect_robustness_finding(results)),
    ]
    return [{"key": k, "text": t} for k, t in out if t]


def headline(results: Results) -> str:
    """The first sentence of the report (the accuracy finding, or why there is none)."""
    return accuracy_finding(results) or "No accuracy slope was fitted."
