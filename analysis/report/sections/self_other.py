"""Self versus other (``#sec-self-other``): a model predicting itself against others predicting it."""

from __future__ import annotations

from typing import Any

from selfmodel.report.sections.common import Out, Report, code, count_rate, esc, md_table, num, pct

__all__ = ["operating_characteristics", "tables"]


def _model_row(r: dict[str, Any]) -> list[object]:
    lo, hi = r["advantage_dprime_ci"]
    tlo, thi = r["target_advantage_dprime_ci"]
    return [esc(r["model"]), r["n_others"], num(r["self_dprime"], ".2f"), num(r["other_dprime"], ".2f"),
            num(r["advantage_dprime"], "+.2f"), f"[{num(lo, '+.2f')}, {num(hi, '+.2f')}]",
            num(r["target_advantage_dprime"], "+.2f"), f"[{num(tlo, '+.2f')}, {num(thi, '+.2f')}]",
            num(r["advantage_accuracy"], "+.3f") + (" †" if r.get("responder", "varied") != "varied" else "")]


def _responder_note(t: dict[str, Any]) -> str:
    """Which models are (near-)constant responders, and why their accuracy is not counted."""
    flagged = [r for r in t["models"] if r.get("responder", "varied") != "varied"]
    if not flagged:
        return ""
    names = ", ".join(f"{esc(r['model'])} ({r['responder'].replace('_', '-')}, "
                      f"{pct(r['prediction_true_share'])} of its predictions `true`)" for r in flagged)
    return (f"\n† {names}: {esc(flagged[0]['responder_note'])}. Accuracy counts "
            f"{t['summary']['accuracy']['n_models_counted']} of "
            f"{t['summary']['accuracy']['n_models_compared']} models.\n")


def tables(rep: Report) -> str:
    """The method, a sentence and a table per task, and the direct cross-prediction records."""
    self_vs_other, out = rep.results.get("self_vs_other_rescored"), Out()
    if not self_vs_other:
        return "No self-versus-other analysis in these results."
    out("Does a model predict its own behaviour better than it predicts other models' behaviour on the same "
        f"items? Method: {esc(self_vs_other['method'])}; {self_vs_other['interval']:.0%} intervals, {self_vs_other['n_boot']} replicates. "
        "d' is the item-level measure (it does not reward knowing one's own base rate, accuracy does). "
        "The target-side column compares the model with the other models predicting the same outcomes.\n")
    for task, t in sorted(self_vs_other["per_task"].items()):
        out(f"\n**{esc(task)}.** {esc(t.get('sentence') or t.get('reason') or '')}\n")
        if t.get("status") != "estimated":
            continue
        models = sorted(t["models"], key=lambda r: (r["scale_log10"] is None, r["scale_log10"] or 0, r["model"]))
        out(md_table(["model", "others", "d' self", "d' others", "advantage", "interval", "target side", "interval",
                      "acc. advantage"], [_model_row(r) for r in models], ["---"] + ["---:"] * 8))
        out(_responder_note(t))
    cp = self_vs_other.get("cross_prediction")
    if cp:
        out("\n**Cross-prediction records** (a model predicting another model's behaviour directly):\n")
        out(md_table(["task", "predictor", "self acc.", "other acc.", "advantage", "95% CI"],
                     [[esc(r["task"]), esc(r["predictor"]), num(r["self_accuracy"]), num(r["other_accuracy"]),
                       num(r["advantage_accuracy"], "+.3f"),
                       f"[{num(r['advantage_accuracy_ci'][0], '+.3f')}, {num(r['advantage_accuracy_ci'][1], '+.3f')}]"]
                      for r in cp], ["---", "---"] + ["---:"] * 4))
    return str(out)


def operating_characteristics(rep: Report) -> str:
    """The shipped study of these decisions (``validation/self_vs_other_study.py``), arm by arm."""
    self_vs_other = rep.results.get("self_vs_other_rescored") or {}
    if not self_vs_other:
        return ""
    cal = self_vs_other.get("operating_characteristics") or {}
    if not cal.get("available"):
        return f"\n**Operating characteristics.** {esc(cal.get('reason') or 'No study of these decisions is shipped.')}\n"
    out = Out()
    truth = (cal.get("truths") or {}).get("truth") or {}
    mean_t, slope_t = (truth.get("mean") or {}).get("dprime"), (truth.get("slope") or {}).get("dprime")
    d = cal["design"]
    out(f"\n**Operating characteristics of these decisions** on simulated data with known truth ({code(cal['command'])}; "
        f"generator and arms in {code('validation/self_vs_other_study.py')}): {len(d['families']) * len(d['sizes_b'])} "
        f"models, {d['items']} shared items, {cal['n_boot']} bootstrap replicates, as this analysis runs. "
        "Under `null` no model knows anything about itself that it does not know about the others, while skill "
        "still grows with size; `misspecified` adds clusters of 3-5 items and overdispersion the records do not "
        "declare, `clustered_declared` the same with the `cluster` column; `truth` has self-knowledge growing "
        f"with size (true mean d' advantage {num(mean_t, '+.3f')}, slope {num(slope_t, '+.3f')} per 10x). "
        "A 95% interval excludes a true 0 in about 5% of data sets by construction (2.5% each way).\n")
    rows = []
    for name, a in sorted(cal["arms"].items(), key=lambda kv: ("null", "misspecified", "clustered_declared",
                                                                 "truth").index(kv[0])):
        m, sl, pm = a["means"]["dprime"], a["slopes"]["dprime"], a["models"]["dprime"]
        rows.append([code(name), esc(a["check"]), f"{a['n']} of {a['target_n']}", count_rate(m["positive"]),
                     count_rate(m["negative"]), count_rate(sl["positive"]), count_rate(pm["positive"]),
                     count_rate(m["coverage"]), count_rate(sl["coverage"]),
                     f"{num(m.get('width_ratio'), '.2f')} / {num(sl.get('width_ratio'), '.2f')}"])
    out(md_table(["arm", "check", "data sets", "mean d' positive", "mean d' negative", "slope d' positive",
                  "each model's d' positive", "coverage, mean d'", "coverage, slope d'",
                  "interval width ratio, mean / slope"], rows, ["---", "---", "---:"] + ["---:"] * 7))
    out("\nThe width ratio is the intervals' mean half-width over 1.96 times the standard deviation of the "
        "estimate across the arm's data sets (its sampling error): 1 for an interval of the right width.")
    wide = [name for name, a in sorted(cal["arms"].items())
            for c in (a["means"]["dprime"]["coverage"], a["slopes"]["dprime"]["coverage"])
            if c.get("n") and c["ci95"][0] > cal["interval_level"]]
    narrow = [name for name, a in sorted(cal["arms"].items())
              for c in (a["means"]["dprime"]["coverage"], a["slopes"]["dprime"]["coverage"])
              if c.get("n") and c["ci95"][1] < cal["interval_level"]]
    if wide:
        out(f"\nIn {', '.join(code(n) for n in dict.fromkeys(wide))} the intervals cover the truth more often than "
            f"their {cal['interval_level']:.0%}: they are wider than their level (conservative), so fewer true "
            "advantages are declared than the level allows.")
    if narrow:
        out(f"\nIn {', '.join(code(n) for n in dict.fromkeys(narrow))} the intervals cover the truth less often "
            f"than their {cal['interval_level']:.0%}: there they are too narrow, and a declared direction is less "
            "certain than it reads.")
    out("\nOn `truth` the positive rates are power, not false rates. The rate for each model's d' pools the 16 "
        "models of every data set; they share items, so the Clopper-Pearson interval of that rate is too narrow. The accuracy and target-side rows are in "
        "`results.json` (`self_vs_other_rescored.operating_characteristics`).\n")
    return str(out)
