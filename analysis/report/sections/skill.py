"""Skill beyond base rates (``#sec-skill``): kappa, balanced accuracy, d', c, Brier, AUROC, confidence calibration."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from selfmodel.report.sections.common import Out, Report, esc, md_table, num

__all__ = ["ECE_OF_CONFIDENCE", "ECE_OF_STATED", "binning_words", "intro", "table"]

#: The names of the two ECEs wherever the report prints one (one measure per name).
ECE_OF_CONFIDENCE: Final = "ECE of the prediction's confidence"
ECE_OF_STATED: Final = "ECE of the stated probability"

def intro(rep: Report) -> str:
    """What the skill measures are, and the d'/c that the rates do not allow."""
    results, out = rep.results, Out()
    out("Accuracy alone rewards a model for guessing the common outcome. For binary self-predictions "
        "the table gives skill measures that are zero for a model that ignores itself: Cohen's kappa, "
        "balanced accuracy (0.5 = no skill), the SDT sensitivity d' (log-linear correction, Hautus 1995) "
        "and criterion c (negative = yes-bias), and, where models stated a confidence, the Brier score, "
        "the AUROC of the implied probability for the outcome and the ECE of the prediction's confidence "
        "(the expected calibration error of the stated confidence that the prediction is right: "
        f"{esc(binning_words(results))}, against whether it was). "
        f"Confidence is read as: {esc((results.get('confidence_calibration') or {}).get('semantics', 'n/a'))}.\n")
    notes = [r for r in results.get("skill") or [] if r.get("binary") and r.get("sdt_note")]
    if notes:
        out("d' and c where the rates do not allow them (a constant responder has d' 0: its hit and false-alarm "
            "rates are equal): " + "; ".join(f"{esc(r['model'])} / {esc(r['task'])}: {esc(r['sdt_note'])}"
                                           for r in notes) + ".\n")
    unscored = [r for r in results.get("skill") or [] if not r.get("n") and r.get("sdt_note")]
    if unscored:
        out("Cells with no self-prediction to score (n/a in the table): " + "; ".join(
            f"{esc(r['model'])} / {esc(r['task'])}: {esc(r['sdt_note'])}" for r in unscored) + ".\n")
    return str(out)


def binning_words(results: Mapping[str, Any]) -> str:
    """The bins of the ECEs in words, from ``confidence_calibration.bin_edges`` (10 equal-width bins by default)."""
    edges = (results.get("confidence_calibration") or {}).get("bin_edges") or [b / 10 for b in range(11)]
    return (f"{len(edges) - 1} equal-width bins over [0, 1], edges {', '.join(f'{e:g}' for e in edges[:3])}, "
            f"..., {edges[-1]:g}, each bin [lower, upper) and the last one closed")


def table(rep: Report) -> str:
    """Skill per model and task (the ECE is the ECE of the prediction's confidence)."""
    return md_table(["model", "task", "acc.", "mode", "kappa", "bal. acc.", "d'", "c", "Brier", "AUROC",
                     ECE_OF_CONFIDENCE],
                    [[esc(r["model"]), esc(r["task"]), num(r["accuracy"]), num(r["mode_baseline"]),
                      num(r["kappa"], "+.3f"), num(r["balanced_accuracy"]), num(r["dprime"], "+.2f"),
                      num(r["criterion"], "+.2f"), num(r["brier"]), num(r["auroc"]),
                      num(r.get("ece_prediction_confidence", r.get("ece")))]
                     for r in rep.results.get("skill") or []],
                    ["---", "---"] + ["---:"] * 9)
