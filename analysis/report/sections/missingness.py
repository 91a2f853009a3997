"""Missingness and scale (``#sec-missingness``): absent and unreadable predictions against size."""

from __future__ import annotations

from typing import Any

from selfmodel.report.sections.common import Out, Report, esc, md_table, num, yes_no

__all__ = ["strict_refit", "summary"]


def summary(rep: Report) -> str:
    """The missingness slope per task beside the readable and strict accuracy slopes."""
    missingness, out = rep.results.get("missingness"), Out()
    if not missingness:
        return "No missingness analysis in these results."
    tot = missingness["totals"]
    out(f"Of {tot['possible']} possible self-predictions (every item of a task for every model that ran it), "
        f"{tot['missing']} have no record and {tot['unreadable']} could not be read. "
        f"Method: {esc(missingness['method'])}.\n")
    per = (missingness.get("slope_of_missingness") or {}).get("per_task") or {}
    sens = missingness.get("strict_accuracy_sensitivity") or {}
    strict = (sens.get("strict") or {}).get("per_task") or {}
    readable = (sens.get("readable") or {}).get("per_task") or {}
    rows = []
    for t in sorted(missingness["depends_on_scale"]):
        e = per.get(t) or {}
        rows.append([esc(t), num(e.get("estimate"), "+.2f"),
                     f"[{num(e.get('ci_low'), '+.2f')}, {num(e.get('ci_high'), '+.2f')}]",
                     num(e.get("p_value")), yes_no(missingness["depends_on_scale"][t]),
                     num((readable.get(t) or {}).get("estimate"), "+.3f"),
                     num((strict.get(t) or {}).get("estimate"), "+.3f")])
    out(md_table(["task", "missingness slope", "95% CI", "p", "depends on scale",
                  "accuracy slope (readable)", "accuracy slope (strict)"], rows, ["---"] + ["---:"] * 6))
    if missingness["any_depends_on_scale"]:
        out("\n**Missingness depends on scale** in at least one task: the models' accuracy on readable "
            "predictions assumes it does not. Compare the readable and strict accuracy slopes (log-odds per "
            "unit of the scale variable, cluster-robust GLM) to see how much that assumption matters.")
    else:
        out("\nNo task's missingness is shown to depend on scale (p >= "
            f"{missingness['alpha']}); the readable-only analysis is not contradicted by the missingness pattern.")
    return str(out)


def _slope(e: dict[str, Any]) -> tuple[str, str]:
    return (f"{num(e.get('mean'), '+.2f')} [{num(e.get('hdi_low'), '+.2f')}, {num(e.get('hdi_high'), '+.2f')}]",
            esc(str(e.get("decision", "n/a")).replace("_", " ")))


def strict_refit(rep: Report) -> str:
    """The verdict model refitted with absent and unreadable predictions counted as wrong."""
    refit, out = (rep.results.get("missingness") or {}).get("strict_accuracy_refit"), Out()
    if not refit:
        return "The strict-accuracy refit was not run (it runs with the robustness refits)."
    if refit.get("estimable") is False:
        return f"The strict-accuracy refit is not estimable: {esc(refit['reason'])}."
    rows = [["average over tasks", *_slope(refit["main"]), *_slope(refit["strict"]),
             "no" if refit["same_decision"] else "**yes**"]]
    for t in sorted(refit["main"].get("per_task") or {}):
        rows.append([esc(t), *_slope(refit["main"]["per_task"][t]),
                     *_slope((refit["strict"].get("per_task") or {}).get(t) or {}),
                     "no" if refit["same_per_task"].get(t) else "**yes**"])
    out(md_table(["", "readable: slope", "decision", "strict: slope", "decision", "changed"], rows,
                 ["---", "---:", "---", "---:", "---", "---"]))
    out(f"\n{refit['n_missing']} absent items and {refit['n_unreadable']} unreadable predictions are counted "
        "as wrong in the strict refit. "
        + ("Missingness does not change the accuracy answer." if not refit["changes_answer"] else
           "**Missingness changes the accuracy answer** for " + ", ".join(esc(c) for c in refit["changed"]) + "."))
    return str(out)
