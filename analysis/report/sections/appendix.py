"""Appendix: per-task tables (``#sec-appendix``), a subsection per task."""

from __future__ import annotations

from selfmodel.report.sections.common import Out, Report, esc, md_table, num
from selfmodel.report.sections.descriptives import tasks

__all__ = ["per_task_tables"]


def per_task_tables(rep: Report) -> str:
    """Per task: each model's accuracy, strict accuracy, baseline, skill, hit and false-alarm rates."""
    out = Out()
    for task in tasks(rep):
        out(f"\n## {esc(task)}\n")
        rows = [r for r in rep.results["by_model_task"] if r["task"] == task]
        out(md_table(["model", "n", "accuracy [95% CI]", "strict", "baseline", "skill", "hit", "FA"],
                     [[esc(r["model"]), r["n"], f"{num(r['accuracy'])} [{num(r['ci_low'])}, {num(r['ci_high'])}]",
                       num(r["accuracy_strict"]), num(r["baseline_accuracy"]), num(r["skill_over_baseline"], "+.3f"),
                       num(r["hit_rate"]), num(r["false_alarm_rate"])] for r in rows],
                     ["---", "---:", "---:", "---:", "---:", "---:", "---:", "---:"]))
        e = rep.eff["per_task"].get(task)
        if e:
            out(f"\nScale slope for this task: {num(e['mean'])} [{num(e['hdi_low'])}, {num(e['hdi_high'])}], "
                f"decision `{e['decision']}`.\n")
    return str(out)
