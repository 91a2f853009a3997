"""Frequentist cross-checks (``#sec-crosscheck``, ``#sec-sdt-crosscheck``) of the Bayesian slopes."""

from __future__ import annotations

from typing import Any

from selfmodel.report.sections.common import Out, Report, code, esc, md_table, num, yes_no

__all__ = ["intro", "sdt_table", "table"]

#: the frequentist methods, by their key in ``results["frequentist"]``
METHODS = (("glm_task_slopes", "GLM with task slopes"), ("glm_common", "GLM with a common slope"),
           ("wild_bootstrap", "wild cluster bootstrap"), ("two_stage", "two-stage WLS"),
           ("correlations", "correlations"), ("permutation", "permutation test"))


def intro(rep: Report) -> str:
    """What the cross-checks estimate, when they agree, and the methods not estimable here."""
    frequentist, out = rep.results.get("frequentist") or {}, Out()
    if not frequentist.get("estimable"):
        return "Frequentist cross-checks were not run: " + esc(frequentist.get("reason", "no cells")) + "."
    out(f"The same slope estimated without the Bayesian model, on the {frequentist['n_models']} models with a "
        f"known scale value, with models as the unit of evidence ({frequentist['level']:.0%} intervals; the "
        f"Bayesian column is its HDI). `agrees` requires the same sign verdict, the estimate inside the "
        f"HDI and an interval within 2x of the HDI's width. ")
    wild_bootstrap = frequentist.get("wild_bootstrap") or {}
    if wild_bootstrap.get("estimable"):
        out(f"The wild cluster bootstrap ({wild_bootstrap['weights']} weights, {wild_bootstrap['reps']} "
            f"{'enumerated sign vectors' if wild_bootstrap['enumerated'] else 'draws'}) is the check "
            "that stays valid with few clusters. ")
    out("Per-task p-values carry a Holm adjustment across tasks.\n")
    skipped = [(name, frequentist[key]["reason"]) for key, name in METHODS
               if isinstance(frequentist.get(key), dict) and frequentist[key].get("estimable") is False]
    if skipped:
        out("**Not estimable on this design:**\n")
        for name, why in skipped:
            out(f"- *{esc(name)}*: {esc(why)}.")
        out()
    return str(out)


def _row(r: dict[str, Any]) -> list[str]:
    ci = f"[{num(r.get('ci_low'))}, {num(r.get('ci_high'))}]" if r.get("ci_low") is not None else ""
    hdi = f"{num(r.get('bayes_mean'))} [{num(r.get('bayes_hdi_low'))}, {num(r.get('bayes_hdi_high'))}]"
    pv = r.get("p_value")
    p = (("< 1e-6" if pv == 0 else num(pv, ".3g"))
         + (f" (Holm {num(r['p_holm'], '.3g')})" if r.get("p_holm") is not None else ""))
    return [esc(r["effect"]), esc(r["method"]), num(r.get("estimate")), ci, p, hdi, yes_no(r.get("agrees"), "**no**")]


def table(rep: Report) -> str:
    """Frequentist estimates beside the Bayesian posterior, and where they differ."""
    crosscheck, out = rep.results.get("crosscheck") or [], Out()
    out(md_table(["effect", "method", "estimate", "CI", "p", "Bayesian mean [HDI]", "agrees"],
                 [_row(r) for r in crosscheck], ["---", "---", "---:", "---:", "---:", "---:", "---"]))
    notes = [r for r in crosscheck if r.get("note")]
    if notes:
        out("\n**Where they differ:**\n")
        for r in notes:
            out(f"- *{esc(r['effect'])}, {esc(r['method'])}*: {esc(r['note'])}")
    return str(out)


def sdt_table(rep: Report) -> str:
    """Frequentist slopes of per-cell d' and criterion beside the Bayesian decisions."""
    sdt_crosscheck, out = rep.results.get("sdt_crosscheck"), Out()
    if not sdt_crosscheck or not sdt_crosscheck.get("per_task"):
        return "No frequentist cross-check of the signal-detection slopes in these results."
    out(f"Method: {esc(sdt_crosscheck['method'])}. Slopes per unit of the scale variable; 'agrees' compares a significant "
        "(p < 0.05) frequentist slope's sign with the Bayesian decision's direction.\n")
    rows = []
    for t, row in sorted(sdt_crosscheck["per_task"].items()):
        for q, word in (("dprime", "d'"), ("criterion", "criterion")):
            e = row[q]
            if not e.get("estimable"):
                rows.append([esc(t), word, "n/a", "n/a", "n/a", "n/a", "n/a", "n/a", esc(e.get("reason", ""))])
                continue
            rows.append([esc(t), word, num(e["estimate"], "+.3f"),
                         f"[{num(e['ci_low'], '+.3f')}, {num(e['ci_high'], '+.3f')}]",
                         num(e["p_value"]), num(e["wild_bootstrap_p"]), num(e.get("p_holm")),
                         code(e.get("bayes_decision") or "n/a"), yes_no(e["agrees"], "**no**")])
    out(md_table(["task", "quantity", "slope", "95% CI", "p", "wild p", "Holm p", "Bayesian decision", "agrees"],
                 rows, ["---", "---"] + ["---:"] * 5 + ["---", "---"]))
    return str(out)
