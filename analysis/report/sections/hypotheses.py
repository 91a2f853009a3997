"""Declared hypotheses (``#sec-hypotheses``): each decided by its own rule, with Bayes factors."""

from __future__ import annotations

from typing import Any

from selfmodel.decisions.elpd_words import elpd_sentence
from selfmodel.decisions.verdict import confirmatory_finding
from selfmodel.report.sections.common import Out, Report, code, esc, md_table, num, yes_no

__all__ = ["intro", "scale_term", "table"]


def _hyp(rep: Report) -> dict[str, Any] | None:
    return rep.results.get("hypotheses")


def intro(rep: Report) -> str:
    """Where the hypotheses were declared and how to read the table."""
    hypotheses = _hyp(rep)
    if not hypotheses:
        return ""
    return (f"Declared in {code(hypotheses['file'])} (SHA-256 `{hypotheses['sha256'][:16]}…`) before the fit; each row applies "
            "that hypothesis' own rule (ROPE, probability threshold, HDI mass). *Supported* means the decision is "
            "the predicted one; a row whose model failed its diagnostics is *not a finding*, whatever its decision. BF10 is the "
            "Savage-Dickey Bayes factor for a slope different from 0 against exactly 0 (`~`: density estimated from "
            "the draws; `>1000`: beyond what the draws can resolve).\n")


def bf_width_cells(b: dict[str, Any] | None, widths: list[float]) -> list[str]:
    """One cell per prior width: BF10 and its interval over draws."""
    by = {w["prior_sd"]: w for w in (b or {}).get("widths", [])}
    out = []
    for sd in widths:
        w = by.get(sd)
        if not w or w["bf_10"] is None:
            out.append("n/a")
            continue
        lo, hi = w["interval"]
        out.append(f"{w['bf_10']:.3g}" + (f" [{lo:.2g}, {hi:.2g}]" if lo is not None else ""))
    return out


def bf_widths(hypotheses: dict[str, Any]) -> list[float]:
    """The prior sds of the Bayes-factor range (those of the first row that has one)."""
    for r in hypotheses["rows"]:
        if r.get("bayes_factor_range"):
            return [w["prior_sd"] for w in r["bayes_factor_range"]["widths"]]
    return []


def _row(r: dict[str, Any]) -> list[str]:
    est = (f"{num(r.get('mean'))} [{num(r.get('hdi_low'))}, {num(r.get('hdi_high'))}]"
           if r.get("hdi_low") is not None else "n/a")
    sup = f"{yes_no(r.get('supported'))} / {yes_no(r.get('direction_supported'))}"
    param = r["parameter"] if r.get("label") in (None, "*") else f"{r['parameter'].split('[')[0]}[{r['label']}]"
    if r.get("supported") is not None and not r["finding"]:
        sup += " (not a finding)"
    sign = ">" if r["direction"] == "increase" else "<"
    return [esc(r["name"]), esc(r.get("role") or "exploratory"), f"{code(r['model'])}: {code(param)} {sign} 0",
            num(r.get("prob_direction")), est, code(r["decision"]), esc(r.get("bf_display") or "n/a"), sup]


def table(rep: Report) -> str:
    """The hypotheses table, Bayes factors by prior width, rules, confirmatory family, multiplicity."""
    hypotheses, out = _hyp(rep), Out()
    if not hypotheses:
        return ""
    out(md_table(["hypothesis", "role", "model: predicted", "P(predicted)", "mean [HDI]", "decision", "BF10",
                  "supported: size / sign"], [_row(r) for r in hypotheses["rows"]],
                 ["---", "---", "---", "---:", "---:", "---", "---:", "---"]))
    widths = bf_widths(hypotheses)
    if widths:
        out("\nBayes factor BF10 of each hypothesis under slope priors of each sd (normal approximation, "
            "bootstrap interval over draws):\n")
        out(md_table(["hypothesis", *[f"sd {w:g}" for w in widths]],
                     [[esc(r["name"]), *bf_width_cells(r.get("bayes_factor_range"), widths)] for r in hypotheses["rows"]
                      if r.get("bayes_factor_range")],
                     ["---", *["---:"] * len(widths)]))
    rules = sorted({(r["rule"]["rope"], r["rule"]["hdi_prob"]) for r in hypotheses["rows"]})
    out("\nRules: " + "; ".join(f"ROPE ±{a:g}, direction credible when the {c:.0%} HDI excludes 0"
                                for a, c in rules) + ".\n")
    conf = confirmatory_finding(rep.results)
    out(f"\n**Confirmatory family.** {esc(conf)}\n" if conf else
        "\n**Confirmatory family.** No hypothesis is declared confirmatory: every decision is exploratory.\n")
    out(f"Rule source: {esc((rep.results.get('settings') or {}).get('rule_source', 'n/a'))}.\n")
    if hypotheses.get("multiplicity"):
        out(_multiplicity(hypotheses["multiplicity"]))
    for r in hypotheses["rows"]:
        if r["decision"] == "not_estimable" and r.get("reason"):
            out(f"\n- *{esc(r['name'])}*: not estimable: {esc(r['reason'])}.")
    return str(out)


def _multiplicity(multiplicity: dict[str, Any]) -> str:
    joint = "; ".join(f"{esc(j['hypothesis'])}: P(all task slopes of the predicted sign) = "
                      f"{num(j['prob_all_predicted_sign'])}" for j in multiplicity["joint_task_signs"]
                      if j.get("prob_all_predicted_sign") is not None)
    holm = multiplicity.get("holm_adjusted_p", {}).get("glm_cluster") or {}
    return (f"\n**Multiplicity.** {multiplicity['n_hypotheses']} declared hypotheses make {multiplicity['n_decisions']} decisions "
            f"({multiplicity['n_supported']} supported). Read together, not one at a time: "
            + (joint + ". " if joint else "")
            + ("Holm-adjusted p-values of the frequentist per-task slopes (cluster-robust GLM): "
               + ", ".join(f"{esc(t)} {num(p)}" for t, p in sorted(holm.items())) + "." if holm else "")
            + " The prior-width columns give the Bayes factor under slope priors of each sd (normal approximation, "
            "bootstrap interval over draws): where they disagree in direction, the Bayes factor says more about "
            "the prior than about the data.\n")


def scale_term(rep: Report) -> str:
    """With and without the scale term: PSIS-LOO and the leave-one-group-out refits."""
    hypotheses, out = _hyp(rep) or {}, Out()
    loo = hypotheses.get("scale_term_loo")
    if loo and loo.get("estimable") is False:
        out(f"\n**With and without the scale term (PSIS-LOO)**: not estimable: {esc(loo['reason'])}.")
    elif loo:
        verdict = elpd_sentence(loo["elpd_diff"], loo["dse"], better="model with the scale term",
                                worse="model without the scale term", unit="cells")
        out(f"\n**With and without the scale term (PSIS-LOO).** The scale model against "
            f"{code(loo['without_scale_model'])} (same intercepts and group effects, no scale term), both on the "
            f"same cells with each cell's own effect integrated out. A held-out cell keeps its model's other cells, "
            f"so this asks about new cells of known models, not about a new model. "
            f"{esc(verdict)} Stacking weight {num(loo['weights'].get('with_scale'), '.2f')} on the scale model. "
            f"Cells with Pareto k > 0.7: {loo['with_scale']['n_high_k']} (with) and "
            f"{loo['without_scale']['n_high_k']} (without)."
            + ("" if loo["without_scale_diagnostics_passed"] else " The model without the scale term failed its "
               "diagnostics: read its ELPD with care.") + "\n")
    holdout = hypotheses.get("scale_term_holdout")
    if holdout:
        group = esc(holdout.get("group", "group"))
        out(f"\n**Leave-one-{group}-out (exact refits).** Each {group} "
            "was left out, both models refitted on the rest, and its cells predicted as a new one from each refit's "
            f"population: {esc(holdout.get('sentence', ''))}\n")
    return str(out)
