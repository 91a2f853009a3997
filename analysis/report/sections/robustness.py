"""Robustness (``#sec-robustness``): the predictive check on new models, prior and scale-variable refits."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from selfmodel.report.sections.common import Out, Report, code, esc, md_table, num

__all__ = [
    "effects_prior_tables", "effects_scale_variable_tables", "mixed_check", "prior_summary", "prior_table",
    "scale_variable_summary", "scale_variable_table",
]

HOLD = {True: "**holds**", False: "**changes**", None: "cannot be checked"}
#: words for the SDT model's effects
EFFECT_WORDS = {"sensitivity": "d'", "bias": "criterion"}


def how_obtained(label: str, reweighting: Mapping[str, Any] | None) -> str:
    """The report's sentence on how a prior variant was obtained: reweighted or refitted, why.

    ``reweighting`` is a variant's ``reweighting`` entry (``prior_variant`` of
    :mod:`selfmodel.fitting.reweight`, saved in ``results.json``); ``None`` (a fit made before it was recorded) says so.
    """
    if not reweighting:
        return f"{label}: refitted (how was not recorded)"
    k, thr = reweighting.get("pareto_k"), reweighting.get("k_threshold")
    if reweighting.get("method") == "psis":
        return (f"{label}: the main fit's draws reweighted by PSIS (Pareto k {k:.2f}, at most "
                f"{thr:.2f}), no refit")
    return f"{label}: refitted ({reweighting.get('reason', 'reason not recorded')})"


def _check_row(kind: str, name: str, r: dict[str, Any]) -> list[object]:
    lo, hi = r["replicated_accuracy_94"]
    return [kind, esc(name), r["cells"], num(r["observed_accuracy"]), f"[{num(lo)}, {num(hi)}]",
            num(r["p_value"]), "yes" if r["flagged"] else "no"]


def mixed_check(rep: Report) -> str:
    """The predictive check on new families, models and cells, and the held-out family."""
    mixed, out = rep.results.get("mixed_predictive"), Out()
    if not mixed or mixed.get("status") != "estimated":
        return ("No predictive check on new models: "
                + esc((mixed or {}).get("reason", "the accuracy model was not fitted")) + ".")
    out(f"A check that can fail: {esc(mixed['method'])}. {mixed['draws']} draws; {mixed['n_tests']} tests, each at "
        f"{mixed['threshold']:.4f} ({mixed['alpha']} / {mixed['n_tests']}). Overall discrepancy "
        f"{mixed['overall']['discrepancy']:.1f}, p = {mixed['overall']['p_value']:.3f}. "
        + ("**The check passes**: new families, models and cells drawn from the fitted population reproduce "
           "every task, model and family." if mixed["passed"] else
           "**The check fails**: " + ", ".join(f"{esc(f['kind'])} {esc(f['group'])} (p = {f['p_value']:.4f})"
                                               for f in mixed["flagged"]) + ".") + "\n")
    rows = [_check_row("task", r["task"], r) for r in mixed["by_task"]]
    worst = (sorted(mixed["by_family"], key=lambda r: r["p_value"])[:5]
             + sorted(mixed["by_model"], key=lambda r: r["p_value"])[:5])
    rows += [_check_row("family" if "family" in r else "model", r.get("family") or r.get("model"), r)
             for r in worst]
    out(md_table(["group", "name", "cells", "observed acc.", "replicated 94%", "p", "flagged"], rows,
                 ["---", "---"] + ["---:"] * 5))
    out("\nTasks, then the five families and five models with the smallest p-values.")
    holdout = mixed.get("holdout_family")
    if holdout and holdout.get("status") == "estimated":
        out(f"\nIn-sample, an outlying family inflates the family spread it is judged against. The most extreme "
            f"family, **{esc(holdout['family'])}**, was therefore refitted out and predicted as a new family from the "
            f"refit: observed accuracy {num(holdout['observed_accuracy'])}, replicated 94% "
            f"[{num(holdout['replicated_accuracy_94'][0])}, {num(holdout['replicated_accuracy_94'][1])}], "
            f"p = {num(holdout['p_value_accuracy'])} (accuracy), {num(holdout['p_value_discrepancy'])} (discrepancy): "
            + ("**flagged**." if holdout["flagged"] else "not flagged.")
            + ("" if holdout["refit_diagnostics_passed"] else " The refit failed its diagnostics."))
    elif holdout:
        out(f"\nHeld-out family check not estimable: {esc(holdout.get('reason', ''))}.")
    return str(out)


def _sens(rep: Report, key: str) -> dict[str, Any] | None:
    return (rep.results.get("sensitivity") or {}).get(key)


def prior_summary(rep: Report) -> str:
    """Whether the verdict holds with every prior scale halved and doubled."""
    priors = _sens(rep, "priors")
    if not priors:
        return "Not run (`--no-robustness`, or no scale model was fitted)."
    return (f"The {code(priors['model'])} model refitted with {esc(priors['what'])}. The overall verdict "
            f"{HOLD[priors['verdict_holds']]}; the per-task verdicts {HOLD[priors['per_task_verdicts_hold']]}."
            + (f" Changed: {', '.join(esc(c) for c in priors['changed'])}." if priors["changed"] else "") + "\n")


def sens_rows(entries: list[dict[str, Any]], main_label: str) -> list[list[str]]:
    """A row per refit: label, mean, HDI, decision, same as the main fit, per-task decisions, diagnostics."""
    rows = []
    for e in entries:
        same = {True: "same", False: "**changed**", None: "n/a"}[
            e.get("matches_main", True if e["label"] == main_label else None)]
        hdi = f"[{num(e.get('hdi_low'))}, {num(e.get('hdi_high'))}]" if e.get("hdi_low") is not None else "n/a"
        tasks_txt = "; ".join(f"{esc(t)}: `{v['decision']}`" for t, v in sorted(e.get("per_task", {}).items()))
        diag = "yes" if e.get("diagnostics_passed") else "**no**"
        rows.append([esc(e["label"]), num(e.get("mean")), hdi, f"`{e['decision']}`", same, tasks_txt, diag])
    return rows


def prior_table(rep: Report) -> str:
    """The scale slope under the default, halved and doubled priors, and how each was obtained."""
    priors = _sens(rep, "priors")
    if not priors:
        return ""
    table = md_table(["fit", "mean", "HDI", "decision", "vs default", "per task", "diagnostics passed"],
                     sens_rows([priors["main"]] + priors["variants"], priors["main"]["label"]),
                     ["---", "---:", "---:", "---", "---", "---", "---"])
    ways = "\n".join(f"- {esc(how_obtained(v['label'], v.get('reweighting')))}" for v in priors["variants"])
    return f"{table}\n\n{ways}\n"


def _effect_rows(entry: dict[str, Any], words: dict[str, str], marks: bool) -> list[list[str]]:
    """A row per effect and task: the main decision (mean), then each variant's."""
    rows = []
    for key, base in sorted(entry["main"].items()):
        for lab, b in [("overall", base)] + sorted(base["per_task"].items()):
            cells = [esc(words.get(key, key)), esc(lab), f"{code(b['decision'])} ({num(b['mean'], '+.2f')})"]
            for v in entry["variants"]:
                e = v[key] if lab == "overall" else v[key].get("per_task", {}).get(lab, {})
                mark = {True: "", False: " **changed**", None: ""}[e.get("matches_main")] if marks else ""
                cells.append(f"{code(e.get('decision', 'n/a'))} ({num(e.get('mean'), '+.2f')}){mark}")
            rows.append(cells)
    return rows


def effects_prior_tables(rep: Report) -> str:
    """Every effect of the other models with priors halved and doubled, a table per model."""
    out = Out()
    for model, entry in sorted((_sens(rep, "effects") or {}).items()):
        out(f"\n**{esc(model)}: every effect with priors halved and doubled.** "
            + "; ".join(f"{esc(k)}: {'holds' if ok else 'changes'}" for k, ok in sorted(entry["holds"].items()))
            + ".\n")
        out(md_table(["effect", "task", "default priors"] + [f"priors x{v['factor']:g}" for v in entry["variants"]],
                     _effect_rows(entry, {}, marks=False),
                     ["---", "---"] + ["---"] * (1 + len(entry["variants"]))))
        ways = [how_obtained(f"priors x{v['factor']:g}", v.get("reweighting")) for v in entry["variants"]]
        out("\n" + "\n".join(f"- {esc(w)}" for w in ways) + "\n")
    return str(out)


def scale_variable_summary(rep: Report) -> str:
    """Whether the verdict holds with each other scale variable (each ROPE in its own units)."""
    scale_variable = _sens(rep, "scale_variable")
    if not scale_variable:
        return "Not run (`--no-robustness`, or no scale model was fitted)."
    ropes = "; ".join(f"{code(e['variable'])}: {esc((e.get('rope_meaning') or {}).get('text', ''))}"
                      for e in scale_variable["variants"] if (e.get("rope_meaning") or {}).get("text"))
    part = "direction" if scale_variable.get("compared_on") == "direction" else "decision"
    return (f"{esc(scale_variable['what'][0].upper() + scale_variable['what'][1:])}. Each variable's ROPE is in its own units"
            + (f" ({ropes})" if ropes else "") + ". "
            f"Against the main variable ({code(scale_variable['main_scale'])}) the overall {part} {HOLD[scale_variable['verdict_holds']]}; "
            f"the per-task {part}s {HOLD[scale_variable['per_task_verdicts_hold']]}."
            + (f" Changed: {', '.join(esc(c) for c in scale_variable['changed'])}." if scale_variable["changed"] else "") + "\n")


def scale_variable_table(rep: Report) -> str:
    """The scale slope with each scale variable: models used, mean, HDI and decisions."""
    scale_variable, out = _sens(rep, "scale_variable"), Out()
    if not scale_variable:
        return ""
    rows = []
    for e in scale_variable["variants"]:
        r = sens_rows([e], scale_variable["main_scale"])[0]
        missing = ", ".join(esc(m) for m in e.get("models_without_variable", [])) or "none"
        rows.append([f"{code(e['variable'])} ({esc(e['units'])})", e["n_models"], missing] + r[1:])
    out(md_table(["variable (units)", "models", "models without it", "mean", "HDI", "decision", "vs main",
                  "per task", "diagnostics passed"], rows,
                 ["---", "---:", "---", "---:", "---:", "---", "---", "---", "---"]))
    drv = scale_variable["variants"][0].get("excluded_derived_checkpoints") if scale_variable["variants"] else None
    if drv:
        out(f"\nLeft out of every variable: {', '.join(esc(m) for m in drv['models'])} "
            f"({esc(drv['reason'])}).")
    return str(out)


def effects_scale_variable_tables(rep: Report) -> str:
    """Every effect of the other models with each scale variable, a table per model."""
    out = Out()
    for model, entry in sorted((_sens(rep, "effects_scale_variable") or {}).items()):
        if not entry.get("variants"):
            continue
        held = [EFFECT_WORDS.get(k, k) for k, ok in sorted(entry["holds"].items()) if ok]
        changed = [EFFECT_WORDS.get(k, k) for k, ok in sorted(entry["holds"].items()) if ok is False]
        out(f"\n**{esc(model)}: every effect with each scale variable** (direction compared, as above; each "
            f"variable's ROPE in its own units). Held: {esc(', '.join(held) or 'none')}; changed: "
            f"{esc(', '.join(changed) or 'none')}."
            + "".join(f" {code(v['variable'])}: {v['n_models']} models"
                      + ("" if v.get("diagnostics_passed") else ", **failed diagnostics**")
                      + (", same data as the main fit" if v.get("same_data_as_main") else "") + "."
                      for v in entry["variants"]) + "\n")
        out(md_table(["effect", "task", f"{code(entry['main_scale'])} (main)"]
                     + [code(v["variable"]) for v in entry["variants"]],
                     _effect_rows(entry, EFFECT_WORDS, marks=True),
                     ["---", "---"] + ["---"] * (1 + len(entry["variants"]))))
    return str(out)
