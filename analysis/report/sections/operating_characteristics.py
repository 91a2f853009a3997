"""Operating characteristics (``#sec-operating-characteristics``, ``#sec-appendix-operating-characteristics``): does the rule do what it claims."""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.figure import Figure
from scipy.stats import binom

from selfmodel.decisions.study_arms import EFFECT_MODEL, arm_components
from selfmodel.decisions.targets import status_words
from selfmodel.report.sections.common import (
    PALETTE,
    Out,
    Report,
    code,
    esc,
    first_col,
    md_table,
    num,
    panels,
)

__all__ = ["appendix", "arms_table", "intro", "pipeline", "rank_figure", "rate", "study", "validation_map"]

#: the versions compared between the study and this run
VERSION_KEYS = ("python", "pymc", "pytensor", "nutpie", "arviz", "selfmodel")


def study(rep: Report) -> dict[str, Any] | None:
    """The shipped operating-characteristics study (``operating_characteristics``), or None."""
    return rep.results.get("operating_characteristics") or None


def rate(r: dict[str, Any] | None) -> str:
    """A rate with its exact 95% interval, in percent."""
    return "n/a" if not r else f"{100 * r['rate']:.0f}% [{100 * r['ci95'][0]:.0f}, {100 * r['ci95'][1]:.0f}]"


def intro(rep: Report) -> str:
    """What the study did, and whether it ran on this run's stack."""
    shipped, out = study(rep), Out()
    if not shipped:
        return ("No operating-characteristics study found (`validation/results/operating_characteristics.json`; run `make validate`, "
                "i.e. `validation/operating_characteristics.py`).")
    out(f"Does the decision rule do what it claims? {code(shipped['command'])} simulated {shipped['sims_per_arm']} data "
        f"sets per arm and fitted each with the project's model files of that date (results in "
        f"{code(shipped['file'])}, SHA-256 `{shipped['sha256'][:16]}…`, generated {esc(shipped['generated_utc'])}; run now by "
        "`make validate`). Intervals with their stated coverage cover the "
        "truth in about 50% of the 50% intervals and 90% of its 90% intervals; under a null slope (`*_null` "
        "arms) `improves` must be declared in at most 5% of data sets. Brackets are exact 95% intervals of each "
        "rate. Per-task coverage and the rank histograms are in the [appendix](#sec-appendix-operating-characteristics).\n")
    study_v, run_v = shipped.get("versions") or {}, (rep.results.get("fit") or {}).get("versions") or {}
    differ = [k for k in VERSION_KEYS if study_v.get(k) and run_v.get(k) and study_v[k] != run_v[k]]
    if differ:
        out("**The study predates this run's stack**: it ran on "
            + ", ".join(f"{k} {esc(study_v[k])}" for k in differ) + "; this run used "
            + ", ".join(f"{k} {esc(run_v[k])}" for k in differ) + ". It has not been re-run on this "
            "stack, nor since later changes to the model files (see their history); its rates describe the "
            "decision rule with that code.\n")
    return str(out)


def arms_table(rep: Report) -> str:
    """Coverage, 'improves' rate, rank p-value and divergent fits per arm."""
    shipped = study(rep)
    if not shipped:
        return ""
    rows = []
    for a in shipped["arms"]:
        check = ""
        if a.get("null_check"):
            check = " (**pass**)" if a["null_check"]["passed"] else " (**FAIL**)"
        rows.append([f"{code(a['arm'])}", f"{code(a['effect'])}", esc(a["generator"]), a["n_fits"],
                     rate(a["coverage50"]), rate(a["coverage90"]), rate(a["improves_rate"]) + check,
                     num((a.get("rank_histogram") or {}).get("p_value"), ".2f"), a["fits_with_divergences"]])
    return md_table(["arm", "slope", "truth", "fits", "50% coverage", "90% coverage", "'improves'", "rank p",
                     "div. fits"], rows, ["---", "---", "---", "---:", "---:", "---:", "---:", "---:", "---:"])


def _pm(o: dict[str, Any], key: str) -> str:
    if not o or o.get(key) is None:
        return "n/a"
    lo, hi = o[f"{key}_ci"]
    return f"{100 * o[key]:.0f}% ±{100 * o[f'{key}_pm']:.0f} [{100 * lo:.0f}, {100 * hi:.0f}]"


class _Targets:
    """The pipeline study's targets: false `improves` at most ``fi_max``, coverage in ``[lo, hi]``."""

    def __init__(self, fi_max: float, lo: float, hi: float) -> None:
        self.fi_max, self.lo, self.hi = fi_max, lo, hi

    def missed(self, o: dict[str, Any], ci: bool = False) -> list[str]:
        """The targets a component (overall slope or one task's) misses, by point estimate.

        The rule the study's own ``meets_targets`` applies; with ``ci`` each with its exact interval.
        """
        def _ci(key: str) -> str:
            return f" [{100 * o[key + '_ci'][0]:.0f}, {100 * o[key + '_ci'][1]:.0f}]" if ci else ""
        fi, cov = o.get("false_improves"), o["hdi94_coverage"]
        # a component's own coverage range when the study gives one (the confirmatory family's
        # adjusted HDIs: a floor only), else the study's
        lo, hi = o.get("coverage_range") or (self.lo, self.hi)
        fe, fe_max = o.get("family_error"), o.get("max_family_error")
        within = f"below {100 * lo:g}%" if hi >= 1 else f"outside {100 * lo:g}-{100 * hi:g}%"
        return ([f"false `improves` {100 * fi:.1f}%{_ci('false_improves')} > {100 * self.fi_max:g}%"]
                if fi is not None and fi > self.fi_max else []) + (
            [f"family-wise error {100 * fe:.1f}%{_ci('family_error')} > {100 * fe_max:g}%"]
            if fe is not None and fe_max is not None and fe > fe_max else []) + (
            [f"coverage {100 * cov:.1f}%{_ci('hdi94_coverage')} {within}"]
            if not lo <= cov <= hi else [])

    def arm_line(self, arm: str, a: dict[str, Any]) -> tuple[str, bool, bool]:
        """The arm's list item, whether it meets both targets, and whether its interval crosses a bound."""
        o = a["overall"]
        missed = self.missed(o, ci=True)
        lo, hi = o["hdi94_coverage_ci"]
        null = o.get("false_improves") is not None
        met = (f"meets both (false `improves` {100 * o['false_improves']:.1f}%, " if null else
               f"meets its coverage target at the true slope {a.get('truth', 0):g} (")
        if o.get("family_error") is not None:
            met = (f"meets its targets (family-wise error {100 * o['family_error']:.1f}%, false 'supported' "
                   f"{100 * o['false_improves']:.1f}%, joint ")
        elif a.get("member_truths") and null:  # the family at known members' truths, one of them 0
            met = (f"meets its targets at the members' true slopes ({_truths(a)}: false 'supported' "
                   f"{100 * o['false_improves']:.1f}%, joint ")
        text = (f"- {code(arm)}: misses " + " and ".join(missed) if missed else
                f"- {code(arm)}: {met}coverage {100 * o['hdi94_coverage']:.1f}% [{100 * lo:.0f}, {100 * hi:.0f}])")
        tasks = {k: v for k, v in arm_components(a).items() if v["hdi94_coverage"] is not None}
        task_missed = [f"{code(k)} misses {' and '.join(self.missed(v, ci=True))}"
                       for k, v in sorted(tasks.items()) if self.missed(v)]
        if task_missed:
            text += f"; per task, {', '.join(task_missed)}" + (
                ", the others meet both targets" if len(task_missed) < len(tasks) else "")
        elif tasks and a.get("family_size"):  # the confirmatory family: members, not per-task slopes
            text += f"; each of its {len(tasks)} members meets its targets"
        elif tasks:
            text += f"; each of its {len(tasks)} per-task slopes meets " + ("both targets" if null else "it")
        c_lo, c_hi = o.get("coverage_range") or (self.lo, self.hi)  # the component's own range, as `missed`
        return text + ".", not missed, not missed and (lo < c_lo or hi > c_hi)


def _arm_verdicts(arms: dict[str, Any], targets: _Targets, n_t: int) -> str:
    """The verdicts of the arms run to their target, and the other arms named.

    A list item per arm run to its target, a sentence on the intervals that reach past a bound,
    and the other arms named with their n.
    """
    items, crossing, met = [], 0, 0
    for arm, a in sorted(arms.items()):
        if not a["complete"] or (a.get("overall") or {}).get("hdi94_coverage") is None:
            continue
        text, ok, crosses = targets.arm_line(arm, a)
        items.append(text)
        met += ok
        crossing += crosses
    rest = [f"{code(arm)} ({a['n']} of {a['target_n']})" for arm, a in sorted(arms.items()) if not a["complete"]]
    out = ("Run to the target, by point estimate (brackets: exact 95% intervals):\n\n" + "\n".join(items)
           + "\n" if items else "No arm is run to the target.\n")
    if crossing:
        which = f"each of the {met} arms" if crossing == met else f"{crossing} of the {met} arms"
        out += (f"\nFor {which} that meet both targets the coverage interval still reaches "
                f"past {targets.lo * 100:g}% or {targets.hi * 100:g}%: {n_t} data sets cannot tell a coverage "
                "that close from the bound.")
    return out + ("\nNot yet run to the target, so not judged: " + ", ".join(rest) + "." if rest else "")


def _truths(a: dict[str, Any]) -> str:
    """The confirmatory members' true slopes, as the family's coverage arm sets them."""
    return ", ".join(f"{name} {t:g}" for name, t in sorted(a["member_truths"].items()))


def _data_sets(a: dict[str, Any]) -> str:
    """``n of target`` (``(partial)`` when short); an arm run past its target says so.

    An arm whose fits are shared with a null arm has that arm's data sets (200 for a coverage
    target of 100): "200 of 100" would read as a slip.
    """
    n, want = a["n"], a["target_n"]
    if n > want:
        return f"{n} (target {want})"
    return f"{n} of {want}" + ("" if a["complete"] else " (partial)")


def pipeline(rep: Report) -> str:
    """The operating characteristics at the pipeline's own settings: table, targets and a verdict per arm."""
    pipeline_study, out = (study(rep) or {}).get("pipeline"), Out()
    if not pipeline_study:
        return ("The operating-characteristics study at the pipeline's settings (`validation/pipeline_operating_characteristics.py`) "
                "has not been shipped.")
    rows = []
    for arm, a in sorted(pipeline_study["arms"].items()):
        o = a.get("overall") or {}
        truth = a.get("truth", 0.0)
        false, cover = _pm(o, "false_improves") if not truth else "", _pm(o, "hdi94_coverage")
        levels = "/".join(f"{100 * p:g}%" for p in a.get("hdi_prob") or [])
        shown_truth, power = f"{truth:g}", _pm(o, "improves_rate") + " (power)" if truth else ""
        if o.get("family_error") is not None:  # the confirmatory family: its own measures, named
            false = f"{false} 'supported'; family-wise error {_pm(o, 'family_error')}"
            cover = f"{cover} (joint, {levels} HDIs)"
        elif a.get("member_truths"):  # the family at its members' known slopes
            shown_truth, power = esc(_truths(a)), ""
            false = f"{_pm(o, 'false_improves')} 'supported'" if o.get("false_improves") is not None else ""
            cover = f"{cover} (joint, {levels} HDIs)" if levels else cover  # no records: no level yet
        rows.append([code(arm), shown_truth, _data_sets(a), false, power, cover,
                     a["diagnostics_failed"] if a["n"] else "n/a", num(a.get("median_seconds_per_fit"), ".1f")])
    out(md_table(["arm", "true slope", "data sets", "false 'improves'", "'improves' at the truth",
                  "94% HDI coverage", "failed diagnostics", "s per fit"],
                 rows, ["---", "---:", "---:", "---:", "---:", "---:", "---:", "---:"]))
    todo = sorted({a["command"] for a in pipeline_study["arms"].values() if a.get("command") and not a["complete"]})
    if any(a.get("command") for a in pipeline_study["arms"].values()):
        out("\nEach arm runs with its own command (`results.json` `operating_characteristics.pipeline.arms.*.command`), "
            "which resumes where its records end" + (": the arms short of their target continue with "
                                                      + "; ".join(code(c) for c in todo) if todo else "") + ".")
    gens = sorted({a["generator"] for a in pipeline_study["arms"].values() if a.get("generator")})
    if gens:
        out("\nGenerators: " + "; ".join(esc(g) for g in gens) + " (each arm's `generator` in `results.json`).")
    out(_versions_line(rep, pipeline_study))
    n_done = sum(a["n"] for a in pipeline_study["arms"].values())
    shipped_targets = pipeline_study.get("targets") or {}  # a summary shipped before the targets were part of it
    fi_max = shipped_targets.get("max_false_improves")
    # the precision the target number of data sets buys for a rate at the false-improves bound
    # (the study's exact-interval half-width; an older summary does not carry it)
    n_t, pm_t = pipeline_study["target_n"], shipped_targets.get("false_improves_pm_at_bound")
    targets_n = sorted({a["target_n"] for a in pipeline_study["arms"].values()}, reverse=True)
    per_arm = (f"against {n_t} per arm" if targets_n == [n_t] else
               f"of the {sum(a['target_n'] for a in pipeline_study['arms'].values())} their targets ask for "
               f"({' or '.join(str(t) for t in targets_n)} per arm: {n_t} under a null, fewer at a known slope, "
               "where only coverage is judged)")
    state = (f"\n{'The study is complete' if pipeline_study['complete'] else '**The study is partial**'}: {n_done} data sets "
             f"over {len(pipeline_study['arms'])} arms, {per_arm}")
    merged = f" Merged by {code(pipeline_study.get('command') or 'validation/pipeline_operating_characteristics.py --ship')}."
    if fi_max is None:
        out(state + ". This summary does not state its targets (it was shipped by an older version), so no "
            "arm is judged against them here; re-ship it with `validation/pipeline_operating_characteristics.py --ship`." + merged)
        return str(out)
    cov_lo, cov_hi = shipped_targets["hdi94_coverage"]
    targets = (f"false `improves` at most {100 * fi_max:g}%, 94% HDI coverage between "
               f"{100 * cov_lo:g}% and {100 * cov_hi:g}%")
    # the confirmatory family's arms under a joint null, one clause per set of targets
    fam: dict[tuple[float, float], list[str]] = {}
    for arm, a in sorted(pipeline_study["arms"].items()):
        o = a.get("overall") or {}
        if o.get("max_family_error") is not None:
            null = ("the joint null on clustered items, overdispersed cells" if a.get("check") == "misspecified"
                    else "the joint null")
            key = (o["max_family_error"], (o.get("coverage_range") or [cov_lo])[0])
            fam.setdefault(key, []).append(f"{code(arm)} ({null})")
    for (fe_max, lo), names in sorted(fam.items()):
        targets += (f"; for the confirmatory family at {' and '.join(names)} a family-wise error "
                    f"at most {100 * fe_max:g}% and a joint coverage of the members' adjusted HDIs "
                    f"of at least {100 * lo:g}% (Bonferroni's promise when each member's interval has its stated coverage, "
                    "less the same tolerance)")
    known = (f" (with {n_t} a {100 * fi_max:g}% rate is known to about ±{100 * pm_t:.1f} points, the half-width "
             "of its exact 95% interval)") if pm_t is not None else ""
    out(state + known + f". Targets: {targets}." + merged + other_settings(rep, pipeline_study) + "\n\n"
        + _arm_verdicts(pipeline_study["arms"], _Targets(fi_max, cov_lo, cov_hi), n_t))
    return str(out)


def _check_cell(arms: list[dict[str, Any]]) -> str:
    """The arms of one check: name, data sets of the target, rate with its interval, settings."""
    if not arms:
        return "**none**"
    parts = []
    for a in arms:
        n = f"{a['n']}" + (f" of {a['target_n']}" if a.get("target_n") else "")
        r = "" if a["rate"] is None else f" {100 * a['rate']:.1f}%"
        if a.get("ci95"):
            r += f" [{100 * a['ci95'][0]:.0f}, {100 * a['ci95'][1]:.0f}]"
        flag = " (other sampler settings)" if a["at_pipeline_settings"] is False else ""
        flag += " (settings or versions not recorded)" if a.get("settings") == "not_recorded" else ""
        flag += "" if a["complete"] else " (partial)"
        flag += " **missed its target**" if a.get("meets_target") is False else ""
        parts.append(f"{code(a['arm'])}: {n} data sets,{r} {esc(a['measure'])}{flag}")
    return "; ".join(parts)


def validation_map(rep: Report) -> str:
    """The validation map: which kinds of decision have which operating-characteristics checks (``results.json`` ``validation_map``)."""
    kinds = rep.results.get("validation_map")
    if not kinds:
        return "This run's results carry no validation map."
    rows = []
    for k in kinds:
        by = {c: [a for a in k["arms"] if a["check"] == c and a["n"]] for c in ("null", "coverage", "misspecified")}
        rows.append([esc(k["decision"]), "yes" if k["in_this_run"] else "no", _check_cell(by["null"]),
                     _check_cell(by["coverage"]), _check_cell(by["misspecified"]), k["status"]])
    out = Out()
    out(md_table(["decision", "in this run", "null: false positives", "coverage at known truths",
                  "misspecified", "status"], rows, ["---", "---", "---", "---", "---", "---"]))
    none = [k["decision"] for k in kinds if k["status"] == "none"]
    done = [k["decision"] for k in kinds if k["status"] == "checked"]
    out("\n" + (f"**No operating-characteristics study** for: {esc('; '.join(none))}. Their decision words rest on "
                 "the rule alone, untested on data with known truth." if none
                 else "Every kind of decision has an operating-characteristics study.")
        + " A kind is `checked` only when every arm ran to its data sets, at the pipeline's recorded sampler "
        "settings (or by a bootstrap, with no sampler), and met its target: a rate is missed when its exact 95% "
        "interval lies wholly above its bound, a coverage when it falls outside its range.")
    for k in kinds:
        if k["status"] not in ("checked", "none"):
            out(f"\n- {esc(k.get('status_words') or status_words(k))}")
    if done:
        out(f"\n\nChecked (every arm complete, at the pipeline's settings and within its target): "
            f"{esc('; '.join(done))}.")
    return str(out)


def _versions_line(rep: Report, pipeline_study: dict[str, Any]) -> str:
    """The stacks that fitted the study's records, against this run's, and the records without versions."""
    run_v = (rep.results.get("fit") or {}).get("versions") or {}
    stacks = {_stack_key(v) for a in pipeline_study["arms"].values() for v in a.get("versions") or []}
    bare = sum(a.get("records_without_versions", 0) for a in pipeline_study["arms"].values())
    parts = []
    for key in sorted(stacks):
        v = dict(key)
        differ = [k for k in VERSION_KEYS if v.get(k) and run_v.get(k) and v[k] != run_v[k]]
        shown = ", ".join(f"{k} {esc(v[k])}" for k in VERSION_KEYS if v.get(k))
        parts.append(shown + (f" (this run: {', '.join(f'{k} {esc(run_v[k])}' for k in differ)})" if differ
                              else (" (as this run)" if run_v else "")))
    text = "\nStack of the fits that recorded it: " + "; ".join(parts) + "." if parts else ""
    if bare:
        text += f" {bare} records carry no versions (made before each fit recorded them)."
    return text


def _stack_key(v: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """A hashable form of a versions dict (only the keys the report compares)."""
    return tuple(sorted((k, str(v[k])) for k in VERSION_KEYS if k in v))


def other_settings(rep: Report, pipeline_study: dict[str, Any]) -> str:
    """The arms whose model this run samples at other settings than the study did (issue 28.4)."""
    own = (rep.results.get("settings") or {}).get("sampler_by_model") or {}
    study_sm = pipeline_study.get("settings") or {}
    parts = []
    keys = ("draws", "tune", "target_accept")

    def sampled_as_this_run(a: dict[str, Any], sm: dict[str, Any]) -> bool:
        # an arm whose every record states what its model sampled with (model_sampler)
        recorded = a.get("model_sampler") or []
        return (bool(recorded) and not a.get("records_without_model_sampler")
                and all(all(m.get(k) == sm.get(k) for k in keys) for m in recorded))

    for model, sm in sorted(own.items()):
        arms = sorted(name for name, a in pipeline_study["arms"].items() if EFFECT_MODEL.get(name.split(":")[1]) == model
                      and a.get("n") and not sampled_as_this_run(a, sm))
        if arms and any(sm.get(k) != study_sm.get(k) for k in keys):
            parts.append(f" The arms {', '.join(code(a) for a in arms)} ran at {study_sm.get('draws')} draws, "
                         f"{study_sm.get('tune')} tuning, target_accept {study_sm.get('target_accept')}; this run "
                         f"samples `{esc(model)}` at {sm['draws']} draws, {sm['tune']} tuning, target_accept "
                         f"{sm['target_accept']} (its `SPEC.sampling`), so they are not at this run's settings "
                         "for that model.")
    return "".join(parts)


def appendix(rep: Report) -> str:
    """The study's command, rule and sampler per arm, and the per-task coverage."""
    shipped, out = study(rep), Out()
    if not shipped:
        return ""
    out(f"Command: {code(shipped['command'])}; seed {shipped['seed']}; {shipped['rank_draws']} thinned draws per fit for the "
        f"ranks. Decision rule: {esc(shipped['rule']['description'])}\n")
    out(f"Why not `simuk` (as recorded with the study, on its stack): {esc(shipped['simuk'])}\n")
    rows = []
    for a in shipped["arms"]:
        sm = a["sampler"]
        rows.append([f"{code(a['arm'])}", f"{code(a['model'])}", a["n_models"], a["cells"],
                     f"{sm['chains']} x {sm['draws']} (tune {sm['tune']}, target_accept {sm['target_accept']})",
                     num(a["rmse"]), num(a["mean_posterior_sd"]), f"{a['n_passed_diagnostics']}/{a['n_fits']}",
                     rate(a["coverage50_passed"]), rate(a["coverage90_passed"])])
    out(md_table(["arm", "model", "models", "cells", "sampler", "RMSE", "mean sd", "fits passing diagnostics",
                  "50% cov. (passing)", "90% cov. (passing)"], rows,
                 ["---", "---", "---:", "---:", "---", "---:", "---:", "---:", "---:", "---:"]))
    out()
    rows = []
    for a in shipped["arms"]:
        for t in sorted(a.get("task_coverage50") or {}):
            rows.append([f"{code(a['arm'])}", esc(t), rate(a["task_coverage50"][t]), rate(a["task_coverage90"][t]),
                         rate((a.get("task_improves_rate") or {}).get(t)) if a.get("task_improves_rate") else "n/a"])
    out("\nPer-task slopes:\n")
    out(md_table(["arm", "task", "50% coverage", "90% coverage", "'improves'"], rows,
                 ["---", "---", "---:", "---:", "---:"]))
    return str(out)


def rank_figure(rep: Report) -> Figure | None:
    """Histograms of the rank of the true slope among the posterior draws, a panel per arm."""
    shipped = study(rep)
    if not shipped:
        return None
    arms = [a for a in shipped["arms"] if a.get("rank_histogram")]
    fig, axes = panels(rep, len(arms), h=1.9, sharey=True)
    for ax, a in zip(axes, arms, strict=True):
        h = a["rank_histogram"]
        counts = np.array(h["counts"])
        lo, hi = binom.ppf([0.025, 0.975], int(counts.sum()), 1 / h["bins"])
        ax.axhspan(lo, hi, color="0.88", zorder=0)
        ax.axhline(h["expected_per_bin"], color="0.4", ls="--", lw=0.8)
        ax.bar(np.arange(h["bins"]), counts, color=PALETTE[0], width=0.85)
        ax.set_title(f"{a['arm']} (p = {h['p_value']:.2f})", fontsize=8)
        ax.set_xticks([])
        ax.set_xlabel("rank bin")
        if first_col(ax):
            ax.set_ylabel("data sets")
    return fig
