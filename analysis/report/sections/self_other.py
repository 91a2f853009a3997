"""Self versus other (``#sec-self-other``): a model predicting itself against others predicting it."""

from __future__ import annotations

from typing import Any

from selfmodel.report.sections.common import Out, Report, esc, md_table, num

__all__ = ["tables"]


def _model_row(r: dict[str, Any]) -> list[object]:
    lo, hi = r["advantage_dprime_ci"]
    tlo, thi = r["target_advantage_dprime_ci"]
    return [esc(r["model"]), r["n_others"], num(r["self_dprime"], ".2f"), num(r["other_dprime"], ".2f"),
            num(r["advantage_dprime"], "+.2f"), f"[{num(lo, '+.2f')}, {num(hi, '+.2f')}]",
            num(r["target_advantage_dprime"], "+.2f"), f"[{num(tlo, '+.2f')}, {num(thi, '+.2f')}]",
            num(r["advantage_accuracy"], "+.3f")]


def tables(rep: Report) -> str:
    """The method, a sentence and a table per task, and the direct cross-prediction records."""
    SO, out = rep.results.get("self_vs_other_rescored"), Out()
    if not SO:
        return "No self-versus-other analysis in these results."
    out("Does a model predict its own behaviour better than it predicts other models' behaviour on the same "
        f"items? Method: {esc(SO['method'])}; {SO['interval']:.0%} intervals, {SO['n_boot']} replicates. "
        "d' is the item-level measure (it does not reward knowing one's own base rate, accuracy does). "
        "The target-side column compares the model with the other models predicting the same outcomes.\n")
    for task, t in sorted(SO["per_task"].items()):
        out(f"\n**{esc(task)}.** {esc(t.get('sentence') or t.get('reason') or '')}\n")
        if t.get("status") != "estimated":
            continue
        models = sorted(t["models"], key=lambda r: (r["scale_log10"] is None, r["scale_log10"] or 0, r["model"]))
        out(md_table(["model", "others", "d' self", "d' others", "advantage", "interval", "target side", "interval",
                      "acc. advantage"], [_model_row(r) for r in models], ["---"] + ["---:"] * 8))
    cp = SO.get("cross_prediction")
    if cp:
        out("\n**Cross-prediction records** (a model predicting another model's behaviour directly):\n")
        out(md_table(["task", "predictor", "self acc.", "other acc.", "advantage", "95% CI"],
                     [[esc(r["task"]), esc(r["predictor"]), num(r["self_accuracy"]), num(r["other_accuracy"]),
                       num(r["advantage_accuracy"], "+.3f"),
                       f"[{num(r['advantage_accuracy_ci'][0], '+.3f')}, {num(r['advantage_accuracy_ci'][1], '+.3f')}]"]
                      for r in cp], ["---", "---"] + ["---:"] * 4))
    return str(out)
