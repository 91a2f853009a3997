"""The report's first screen (``#sec-verdict``): status, question, findings, verdict tables.

Every sentence is chosen by :mod:`selfmodel.decisions.verdict` and :mod:`selfmodel.decisions.status` from the
numbers of ``results.json``; these functions lay them out.
"""

from __future__ import annotations

from typing import Any

from selfmodel.decisions.status import status_lines
from selfmodel.decisions.verdict import (
    NOT_DECIDED,
    criterion_words,
    failed_gate,
    findings,
    signs_disagree,
)
from selfmodel.records.contract import DECISION_MEANING, word_meanings
from selfmodel.report.sections.common import Out, Report, esc, md_table, num, pct

__all__ = ["left_out", "page_marks", "robustness_summary", "sdt_table", "summary", "table"]

#: the reviewer checks, listed on their own after the other findings
CHECK_KEYS = {"self_vs_other", "missingness", "mixed_predictive", "sdt_crosscheck", "effect_priors"}
#: findings that follow the decision rule (the d'/criterion scale-variable and strict refits)
LATER_KEYS = {"effect_robustness"}


def page_marks(rep: Report) -> str:
    """Running header and footer of the PDF pages (the HTML shows them under the title)."""
    started = str(rep.run.get("started_utc") or "")
    when = f"run {started[:10]} {started[11:16]} UTC" if len(started) >= 16 else "run date not recorded"
    return (f"::: {{.running-header}}\nselfmodel report · {esc(when)}\n:::\n\n"
            f"::: {{.running-footer}}\ndata SHA-256 {esc(rep.results['data']['sha256'])}\n:::\n")


def summary(rep: Report) -> str:
    """Status lines, the question, the findings, the accuracy-points reading and the decision rule."""
    results, effect, out = rep.results, rep.eff, Out()
    out("::: {#verdict .verdict}\n")
    status = results.get("status") or status_lines(results)
    if status:
        out("::: {.callout-warning}\n" + "\n\n".join(f"**{esc(x['text'])}**" if i == 0 else esc(x["text"])
                                                   for i, x in enumerate(status)) + "\n:::\n")
    out(f"**Question:** does self-prediction get better as models get larger (`{effect['registry_column']}`, "
        f"{effect['n_models']} models with a known value)?\n")
    found = findings(results)
    if found:
        out(f"**{esc(found[0]['text'])}**\n")
    # the per-task accuracy slopes are the table below; the data's answers lead (first screen)
    rest = [f for f in found[1:] if f["key"] != "accuracy_tasks"]
    first = [f for f in rest if f["key"] in ("sensitivity", "criterion", "sdt_diagnostics", "validation")]
    for f in first:
        out(f"- {esc(f['text'])}")
    out()
    out(":::\n")
    for f in rest:
        if f not in first and f["key"] not in CHECK_KEYS | LATER_KEYS:
            out(f"- {esc(f['text'])}")
    out()
    checks = [f for f in found if f["key"] in CHECK_KEYS]
    if checks:
        out("**Checks a reviewer asks for** (each sentence chosen from the numbers of its section below):\n")
        for f in checks:
            out(f"- {esc(f['text'])}")
        out()
    out(_points_and_rule(results, effect))
    return str(out)


def _points_and_rule(results: dict[str, Any], effect: dict[str, Any]) -> str:
    """The accuracy-points reading of the slope (when fitted) and the decision rule."""
    out = Out()
    points = (results.get("accuracy_points") or {}).get("overall")
    if effect["mean"] is not None and points and points.get("scale_at_median") is not None:
        at, by_size = points["scale_at_median"], effect["scale_variable"] in ("params", "active_params")
        size = f"{10 ** at:,.3g} B parameters" if by_size else f"capability {at:.2f}"
        step = "ten times the size" if by_size else "one unit more capability"
        out(f"In accuracy points: for an average model at the median size ({size}, accuracy "
            f"{pct(points['accuracy_at_median'])} averaged over tasks), {step} means "
            f"{num(points['gain_per_10x_points'], '+.1f')} points (94% interval "
            f"{num(points['gain_low'], '+.1f')} to {num(points['gain_high'], '+.1f')}).\n")
    rm = effect.get("rope_meaning") or {}
    sdt_rope = {k: ((results.get("sdt_effect") or {}).get(k) or {}).get("rope_meaning") or {}
                for k in ("sensitivity", "bias")}
    ropes = [f"accuracy {esc(rm['text'])}"] if rm.get("text") else []
    ropes += [f"{lab} {esc(m['text'])}" for lab, m in (("d'", sdt_rope["sensitivity"]),
                                                        ("criterion", sdt_rope["bias"])) if m.get("text")]
    out(f"Decision rule (declared before fitting; one rule, one level): a direction is credible when the printed "
        f"{effect['hdi_prob']:.0%} HDI excludes 0; a size is shown when the same HDI clears the ROPE"
        + (" (" + "; ".join(ropes) + ")" if ropes else "") + ". The decisions and their meanings are listed "
        "below the table.\n")
    return str(out)


def table(rep: Report) -> str:
    """The scale effect per task and averaged, with accuracy points per 10x and the decision words."""
    effect, out = rep.eff, Out()
    rows = []
    pts = rep.results.get("accuracy_points") or {}
    failed = failed_gate(rep.results)
    for name, e in [("overall", effect)] + sorted(effect["per_task"].items()):
        gain = pts.get(name, {})
        rows.append([
            "average over tasks" if name == "overall" else esc(name), num(e["mean"]),
            f"[{num(e['hdi_low'])}, {num(e['hdi_high'])}]", num(e["prob_positive"]),
            f"{num(gain.get('gain_per_10x_points'), '+.1f')} [{num(gain.get('gain_low'), '+.1f')}, "
            f"{num(gain.get('gain_high'), '+.1f')}]" if gain else "",
            NOT_DECIDED if failed and e["decision"] != "not_estimable" else f"`{e['decision']}`",
        ])
    out(md_table(["effect", "mean", f"{effect['hdi_prob']:.0%} HDI", "P(>0)", "acc. points per 10x", "decision"],
                 rows, ["---", "---:", "---:", "---:", "---:", "---"]))
    out("\n**What the decisions mean.** Direction and size are separate: "
        + "; ".join(f"`{d}`: {esc(m)}" for d, m in word_meanings().items()) + ". Full rule: "
        + esc(effect["rule"]) + "\n")
    return str(out)


def _sdt_row(label: str, v: dict[str, Any], words: str, failed: bool = False) -> list[str]:
    if failed and v["decision"] != "not_estimable":
        return [esc(label), num(v["mean"]), f"[{num(v['hdi_low'])}, {num(v['hdi_high'])}]",
                num(v["prob_positive"]), NOT_DECIDED, ""]
    return [esc(label), num(v["mean"]), f"[{num(v['hdi_low'])}, {num(v['hdi_high'])}]",
            num(v["prob_positive"]), f"`{v['decision']}`", esc(words)]


def sdt_table(rep: Report) -> str:
    """Knowing versus saying yes: the d' and criterion slopes of the signal-detection model."""
    sdt, out = rep.results.get("sdt_effect"), Out()
    if not sdt:
        return ""
    sens, bias = sdt["sensitivity"], sdt["bias"]
    out("\n**Knowing versus saying yes.** The signal-detection model (`models/sdt.py`) separates "
        "sensitivity d' (does the model know its own behaviour?) from the criterion c (does it simply "
        "say yes more often?).\n")
    gate = failed_gate(rep.results, sdt.get("fit_model") or "sdt") if sdt.get("fitted") is not False else None
    rows = [_sdt_row(f"d' {t}", v, DECISION_MEANING.get(v["decision"], ""), bool(gate))
            for t, v in sorted(sens["per_task"].items())]
    if not signs_disagree(sens["per_task"]):
        rows.append(_sdt_row("d' average over tasks", sens, DECISION_MEANING.get(sens["decision"], ""), bool(gate)))
    rows += [_sdt_row(f"criterion {t}", v, criterion_words(v), bool(gate))
             for t, v in sorted(bias["per_task"].items())]
    out(md_table(["effect", "mean", f"{sens['hdi_prob']:.0%} HDI", "P(>0)", "decision", "in words"], rows,
                 ["---", "---:", "---:", "---:", "---", "---"]))
    out("\nEach task has its own d' and criterion slope (no spread shared between tasks); the d' average "
        "over tasks is shown only when no two tasks have credible slopes of opposite sign, and the "
        "criterion has no average: a negative criterion slope means larger models say yes more readily.\n")
    if sdt.get("fitted") is False:
        out(f"::: {{.callout-warning}}\nThe SDT model was not fitted ({esc(sdt.get('reason') or '')}): d' and "
            "criterion are not estimable.\n:::\n")
    elif gate:
        out(f"::: {{.callout-warning}}\nThe SDT fit failed its diagnostics ({esc(gate)}): its slopes are shown "
            "as computed and are not decided.\n:::\n")
    elif not sdt["finding"]:
        out("::: {.callout-warning}\nThe SDT model's checks do not pass at these settings: its verdict is not "
            "a finding.\n:::\n")
    if sdt.get("excluded_cells"):
        out(f"Left out of the SDT model ({len(sdt['excluded_cells'])} cells; their d' is not informed by "
            "their data): " + "; ".join(f"{esc(e['model'])} / {esc(e['task'])}: {esc(e['reason'])}"
                                        for e in sdt["excluded_cells"]) + ".\n")
    return str(out)


def left_out(rep: Report) -> str:
    """The models without the scale variable, named (they stay in the descriptive tables)."""
    effect = rep.eff
    if not effect["models_without_scale_variable"]:
        return ""
    names = ", ".join(esc(m) for m in effect["models_without_scale_variable"])
    return (f"\n**Left out of the slope** (no `{effect['registry_column']}` in the registry): {names}. "
            "They appear in the descriptive tables below.\n")


def robustness_summary(rep: Report) -> str:
    """Whether the accuracy decision holds under the prior and scale-variable refits."""
    results, out = rep.results, Out()
    sensitivity = results.get("sensitivity") or {}
    held = []
    for key, what in (("priors", "priors half and twice as wide"), ("scale_variable", "the other scale variables")):
        fam = sensitivity.get(key)
        if not fam:
            continue
        part = "its direction" if fam.get("compared_on") == "direction" else "the decision"
        if fam["verdict_holds"] is None:
            held.append(f"under {what} it could not be checked")
        elif fam["verdict_holds"]:
            held.append(f"{part} **holds** under {what}")
        else:
            held.append(f"{part} **changes** under {what} ({', '.join(esc(c) for c in fam['changed'])})")
    if held:
        others = sorted((sensitivity.get("effects") or {}).keys())
        scope = (f"prior variants of the {', '.join(esc(o) for o in others)} effects: see the prior sensitivity tables"
                 if others else "the other models' slopes were not refitted")
        out(f"**Robustness of the accuracy decision** ({scope}): "
            + "; ".join(held) + " (see [Robustness](#sec-robustness)).\n")
    elif sensitivity.get("estimable") is False:
        out(f"Robustness refits are not estimable: {esc(sensitivity['reason'])}.\n")
    elif results.get("sensitivity") is None:
        out("Robustness refits were not run (`--no-robustness`, or no scale model was fitted).\n")
    for f in findings(results):
        if f["key"] in LATER_KEYS:
            out(f"{esc(f['text'])}\n")
    return str(out)
