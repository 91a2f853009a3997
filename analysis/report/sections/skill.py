"""Skill beyond base rates (``#sec-skill``): kappa, balanced accuracy, d', c, Brier, AUROC, calibration."""

from __future__ import annotations

from selfmodel.report.sections.common import Out, Report, esc, md_table, num

__all__ = ["intro", "table"]

def intro(rep: Report) -> str:
    """What the skill measures are, and the d'/c that the rates do not allow."""
    R, out = rep.results, Out()
    out("Accuracy alone rewards a model for guessing the common outcome. For binary self-predictions "
        "the table gives skill measures that are zero for a model that ignores itself: Cohen's kappa, "
        "balanced accuracy (0.5 = no skill), the SDT sensitivity d' (log-linear correction, Hautus 1995) "
        "and criterion c (negative = yes-bias), and, where models stated a confidence, the Brier score, "
        "the AUROC of the implied probability for the outcome and the expected calibration error. "
        f"Confidence is read as: {esc((R.get('calibration') or {}).get('semantics', 'n/a'))}.\n")
    notes = [r for r in R.get("skill") or [] if r.get("binary") and r.get("sdt_note")]
    if notes:
        out("d' and c where the rates do not allow them (a constant responder has d' 0: its hit and false-alarm "
            "rates are equal): " + "; ".join(f"{esc(r['model'])} / {esc(r['task'])}: {esc(r['sdt_note'])}"
                                           for r in notes) + ".\n")
    unscored = [r for r in R.get("skill") or [] if not r.get("n") and r.get("sdt_note")]
    if unscored:
        out("Cells with no self-prediction to score (n/a in the table): " + "; ".join(
            f"{esc(r['model'])} / {esc(r['task'])}: {esc(r['sdt_note'])}" for r in unscored) + ".\n")
    return str(out)


def table(rep: Report) -> str:
    """Skill per model and task."""
    return md_table(["model", "task", "acc.", "mode", "kappa", "bal. acc.", "d'", "c", "Brier", "AUROC", "ECE"],
                    [[esc(r["model"]), esc(r["task"]), num(r["accuracy"]), num(r["mode_baseline"]),
                      num(r["kappa"], "+.3f"), num(r["balanced_accuracy"]), num(r["dprime"], "+.2f"),
                      num(r["criterion"], "+.2f"), num(r["brier"]), num(r["auroc"]), num(r["ece"])]
                     for r in rep.results.get("skill") or []],
                    ["---", "---"] + ["---:"] * 9)
