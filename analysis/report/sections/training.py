"""Did training help? (``#sec-training``): checkpoints against their base, privileged access, operating characteristics."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from selfmodel.report.sections.common import (
    PALETTE,
    Out,
    Report,
    code,
    count_rate,
    esc,
    md_table,
    num,
)

__all__ = ["effects", "figure", "operating_characteristics"]

#: the two groups of tasks, decided separately and never pooled
GROUPS = (("trained", "trained tasks"), ("held_out", "held-out tasks (transfer)"))
EFFECT_ALIGN = ["---", "---", "---:", "---:", "---:", "---"]


def _training(rep: Report) -> dict[str, Any]:
    return rep.results.get("training_effect") or {}


def _effect_row(label: str, tasks: str, d: dict[str, Any]) -> list[str]:
    return [label, tasks, num(d["mean"]), f"[{num(d['hdi_low'])}, {num(d['hdi_high'])}]",
            num(d["prob_positive"]), code(d["decision"])]


def _header(training: dict[str, Any]) -> list[str]:
    return ["effect", "tasks / status", "mean", f"{training['rule']['hdi_prob']:.0%} HDI", "P(> 0)", "decision"]


def effects(rep: Report) -> str:
    """The design (checkpoints and their bases) and the training effect on trained and held-out tasks."""
    training, out = _training(rep), Out()
    if not training.get("available"):
        return (f"Not estimated: {esc(training.get('reason', 'no training_effect in these results'))}. A registry row with "
                "`base_model`, `intervention` and `trained_tasks` declares a trained checkpoint "
                "(`docs/registry.md`).\n")
    out(f"Each trained checkpoint is compared with its base on the same items (`models/training.py`); the effect is "
        f"in {esc(training['units'])}. Trained and held-out tasks are decided separately and never pooled; the ROPE is "
        f"{esc(training['rope_meaning'])}. Derived checkpoints are not points on the scale axis: "
        f"{esc(training['design']['scale_models'])}."
        + ("" if training["finding"] else " **Diagnostics failed: these are not findings** (each decision reads "
           "`not_decided` unless the run is exploratory; the estimates are as computed).") + "\n")
    out(md_table(["checkpoint", "base", "intervention", "trained on", "held out"],
                 [[code(c["model"]), code(c["base_model"]), code(c["intervention"]),
                   ", ".join(c["trained_tasks"]), ", ".join(c["held_out_tasks"])] for c in training["design"]["checkpoints"]]))
    out()
    rows = [_effect_row(f"**{label}**", ", ".join(training[key].get("tasks", [])), training[key])
            for key, label in (("trained", "trained tasks"), ("held_out", "held-out tasks (transfer)"))]
    rows += [_effect_row(esc(e["task"]), esc(e["status"].replace("_", "-")), e) for e in training["per_task"]]
    out(md_table(_header(training), rows, EFFECT_ALIGN))
    sdt = training.get("sdt") or {}
    if sdt.get("dprime", {}).get("per_task"):
        out(f"\n**Sensitivity and criterion.** The same pairs on the signal-detection scale of `models/sdt.py`: "
            f"{esc(sdt['units'])}. The ROPE is ±{training['rule']['rope']:g} in d' (criterion) units; a criterion "
            "effect above 0 means the checkpoint says \"yes\" less readily than its base.\n")
        rows = []
        for side, label in (("dprime", "d'"), ("criterion", "criterion")):
            b = sdt[side]
            rows += [_effect_row(f"**{label}, {lab}**", ", ".join(b[key].get("tasks", [])), b[key])
                     for key, lab in GROUPS]
            rows += [_effect_row(f"{label}, {esc(e['task'])}", esc(e["status"].replace("_", "-")), e)
                     for e in b["per_task"]]
        out(md_table(_header(training), rows, EFFECT_ALIGN))
    return str(out)


def operating_characteristics(rep: Report) -> str:
    """The shipped study of these decisions (the older null study without it); estimates against the truth."""
    training, out = _training(rep), Out()
    if not training.get("available"):
        return ""
    null_study = training.get("null_operating_characteristics") or {}
    study = training.get("operating_characteristics") or {}
    if study.get("available"):
        out(_study(study))
    elif null_study.get("available"):
        rates, ung = null_study["rates"], null_study.get("rates_ignoring_diagnostics", {})
        labels = {"accuracy:trained": "accuracy, trained tasks", "accuracy:held_out": "accuracy, held-out tasks",
                  "dprime:trained": "d', trained tasks", "dprime:held_out": "d', held-out tasks",
                  "criterion:trained": "criterion, trained tasks", "criterion:held_out": "criterion, held-out tasks"}
        out(f"\n**Null study.** How often does the rule declare `improves` when training changed nothing? "
            f"{null_study['n_datasets']} data sets simulated on the default design with no training effect "
            f"({code(null_study['source'])}, made by {code(null_study['command'])}; {null_study['sampler']['chains']} chains x "
            f"{null_study['sampler']['draws']} draws per fit); {null_study['n_failed_diagnostics']} fits failed the diagnostics "
            "gate and count as not improving (the last column ignores the gate). The declared rule aims at under "
            "5%. Measured on simulated data of the default design, not on these data.\n")
        out(md_table(["null quantity", "declared improves", "rate", f"{esc(null_study['interval'])} interval",
                      "ignoring diagnostics"],
                     [[esc(lab), f"{rates[k]['improves']} of {null_study['n_datasets']}", num(rates[k]["rate"]),
                       f"[{num(rates[k]['ci_low'])}, {num(rates[k]['ci_high'])}]",
                       str(ung[k]["improves"]) if k in ung else "—"] for k, lab in labels.items() if k in rates],
                     ["---", "---:", "---:", "---:", "---:"]))
    truth = training.get("truth_comparison") or []
    if truth:
        out("\nSimulated data: estimates against the known truth (`truth.json`).\n")
        out(md_table(["quantity", "truth", "mean", "HDI", "covered"],
                     [[esc(t["quantity"]), num(t["truth"]), num(t["mean"]),
                       f"[{num(t['hdi_low'])}, {num(t['hdi_high'])}]", "yes" if t["covered"] else "**no**"]
                      for t in truth], ["---", "---:", "---:", "---:", "---"]))
    return str(out)


def _study(study: dict[str, Any]) -> str:
    """The training study at the pipeline's settings (``validation/training_study.py``), per quantity."""
    arms = study["arms"]
    st = study["settings"]
    out = Out()
    parts = [f"{code(k)} {a['n']} of {a['target_n']} data sets ({a['failed_gate']} failed the gate)"
             for k, a in sorted(arms.items())]
    out(f"\n**Operating characteristics.** How often does the rule declare a training effect that is not there, and does "
        f"the 94% HDI cover a known one? Data from an independent generator ({code(study['generator'])}: records "
        "of four base/checkpoint pairs, one trained and two held-out tasks, a logistic readout), fitted at the "
        f"pipeline's settings ({st['chains']} chains x {st['draws']} draws after {st['tune']} tuning, "
        f"target_accept {st['target_accept']}) and decided by the declared rule: {'; '.join(parts)}. "
        "`null` and `misspecified` (clusters of 3-5 items, overdispersed) have no effect at all, so any credible "
        "decision there is false: a 94% HDI with its stated coverage excludes a true 0 in about 6% of data sets (3% each way), "
        "and `improves` (the HDI beyond the ROPE as well) is rarer. `truth` has known gains on the trained task "
        "and a quarter of them held out. "
        "A fit failing its gate is not a finding. Commands: "
        f"{'; '.join(code(c) for c in study.get('commands', []))}. Measured on simulated data, not on these "
        f"data; intervals {esc(study['interval'])}.\n")
    keys = sorted({k for a in arms.values() for k in a["quantities"]},
                  key=lambda k: (k.split(":")[0], ":task:" in k, k))
    null, mis, tru = arms.get("null", {}), arms.get("misspecified", {}), arms.get("truth", {})
    rows = []
    for k in keys:
        q = {name: (a.get("quantities") or {}).get(k) or {} for name, a in (("n", null), ("m", mis), ("t", tru))}
        same = (null or mis or tru).get("same_as", {}).get(k)
        label = k.replace(":task:", ", task ").replace(":", ", ").replace("_", "-")
        if same:
            label += f" (= {same.split(':task:')[1].replace('_', '-')}, its only task)"
        rows.append([esc(label),
                     count_rate(q["n"].get("false_credible")), count_rate(q["m"].get("false_credible")),
                     num(q["t"].get("truth_mean"), "+.2f"), count_rate(q["t"].get("coverage")),
                     count_rate(q["t"].get("power_improves"))])
    for name, a in (("null", null), ("misspecified", mis)):
        imp = [(q["false_improves"]["k"], k) for k, q in (a.get("quantities") or {}).items()
               if "false_improves" in q and k not in (a.get("same_as") or {})]
        if imp:
            k_max = max(imp)[0]
            anyc = a.get("any_false_credible") or {}
            family = (f" {count_rate(anyc)} of its data sets had at least one false credible decision among the "
                      "quantities: each decision is at its level, the family is not." if anyc.get("n") else "")
            out(f"In `{name}` the rule said `improves` in at most {k_max} of {a['n']} data sets for any quantity "
                f"({sum(k for k, _ in imp)} such decisions over its {len(imp)} quantities).{family}")
    out("\n")
    out(md_table(["quantity", "null: false credible", "misspecified: false credible", "truth (mean)",
                  "truth: 94% HDI coverage", "truth: improves (power)"], rows,
                 ["---", "---:", "---:", "---:", "---:", "---:"]))
    return str(out)


def figure(rep: Report) -> Figure | None:
    """Accuracy of each checkpoint's base (open) and of the checkpoint (filled) per task."""
    pairs = _training(rep).get("per_pair_task") or []
    if not pairs:
        return None
    tasks_tr = sorted({p["task"] for p in pairs if p["status"] == "trained"})
    tasks_ho = sorted({p["task"] for p in pairs if p["status"] == "held_out"})
    order = tasks_tr + tasks_ho
    ckpts = sorted({p["model"] for p in pairs})
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    width = 0.8 / max(len(ckpts), 1)
    for j, m in enumerate(ckpts):
        colour = PALETTE[j % 10]
        for p in (q for q in pairs if q["model"] == m):
            xpos = order.index(p["task"]) - 0.4 + width * (j + 0.5)
            ax.plot([xpos, xpos], [p["accuracy_base"], p["accuracy_trained"]], color=colour, lw=1.5)
            ax.scatter([xpos], [p["accuracy_base"]], facecolors="white", edgecolors=colour, zorder=3)
            ax.scatter([xpos], [p["accuracy_trained"]], color=colour, zorder=3,
                       label=m if p["task"] == order[0] else None)
    if tasks_tr and tasks_ho:
        ax.axvline(len(tasks_tr) - 0.5, color="grey", ls="--", lw=1)
    ax.set_xticks(range(len(order)), [f"{t}\n({'trained' if t in tasks_tr else 'held out'})" for t in order])
    ax.set_ylabel("self-prediction accuracy")
    ax.legend(fontsize=8, frameon=False, loc="best")
    return fig
