"""Model and diagnostics (``#sec-model``, ``#sec-within``, ``#sec-checks``, ``#sec-richer``)."""

from __future__ import annotations

from typing import Any

import arviz as az
import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from selfmodel.models import REGISTRY
from selfmodel.records.contract import UNDECIDED
from selfmodel.report.methods import model_markdown, prior_rows
from selfmodel.report.sections.common import Out, Report, code, esc, md_table, num, pct

__all__ = [
    "checks_table", "description", "diagnostics_table", "loo_table", "priors_table", "rank_figure",
    "richer_models", "within_between",
]

#: the variables shown in the rank plots, when the fitted model has them
RANK_VARS = ("beta", "sigma_delta", "sigma_family", "sigma_model", "sigma_cell")


def _zoo(rep: Report) -> dict[str, Any]:
    return rep.results.get("model_zoo") or {}


def description(rep: Report) -> str:
    """The fitted model's declaration (equations and parameters)."""
    fit = rep.results.get("fit")
    return model_markdown(fit) + "\n" if fit else "The verdict model was not fitted.\n"


def priors_table(rep: Report) -> str:
    """The priors as fitted."""
    fit = rep.results.get("fit")
    return md_table(["parameter", "prior"], prior_rows(fit)) if fit else ""


def diagnostics_table(rep: Report) -> str:
    """The named diagnostic checks with their thresholds."""
    diag = rep.results["diagnostics"]
    if not diag.get("checks"):
        return esc(diag.get("note", "no diagnostics"))
    return md_table(["check", "value", "threshold", "passed"],
                    [[c["name"], num(c["value"], ".4g") if c["value"] is not None else "n/a", c["threshold"],
                      "yes" if c["passed"] else "**no**"] for c in diag["checks"]])


def rank_figure(rep: Report) -> Figure | None:
    """Rank plots of the slope and the group-level sds, the test's p-value in each panel's title."""
    if rep.fit_file is None:
        return None
    idata = az.from_netcdf(rep.fit_file)
    names = [v for v in RANK_VARS if v in idata.posterior]
    ncol = max(1, min(len(names), int(rep.fig_w // 2.0)))
    nrow = -(-len(names) // ncol)
    az.plot_rank(idata, var_names=names, backend="matplotlib", col_wrap=ncol,
                 figure_kwargs={"figsize": (rep.fig_w, 2.0 * nrow)})
    fig = plt.gcf()
    for ax in fig.axes:  # the test's p-value into the title: inside the panel the marks covered it
        for t in list(ax.texts):
            if t.get_text().startswith("p="):
                ax.set_title(f"{ax.get_title()}\n{t.get_text().strip()}")
                t.remove()
    fig.tight_layout()
    return fig


def within_between(rep: Report) -> str:
    """The Mundlak split: the slope within a family and between family means."""
    section, out = _zoo(rep).get("within_between"), Out()
    if not (section and section.get("fitted")):
        return "The within/between model was not fitted" + (f": {esc(section['reason'])}." if section else ".")
    out("The Mundlak split (`models/within_between.py`) separates the slope *within* a family (a bigger "
        "sibling of the same model) from the slope *between* family means. The within part is the cleaner "
        "reading of \"scale\": it holds the family's data and recipe fixed.\n")
    out(md_table(["slope", "mean", "94% HDI", "P(>0)", "decision"],
                 [[label, num(e["mean"]), f"[{num(e['hdi_low'])}, {num(e['hdi_high'])}]", num(e["prob_positive"]),
                   f"`{e['decision']}`"] for label, e in (("within family", section["within"]),
                                                         ("between families", section["between"]))],
                 ["---", "---:", "---:", "---:", "---"]))
    return str(out)


def loo_table(rep: Report) -> str:
    """PSIS-LOO comparison of the models on the same cells."""
    loo_comparison = _zoo(rep).get("loo_comparison")
    if not loo_comparison:
        return ""
    return md_table(["model", "elpd_loo", "SE", "elpd_diff", "dSE", "p_loo", "weight", "Pareto k > 0.7"],
                    [[esc(r["model"]), num(r["elpd_loo"], ".1f"), num(r["se"], ".1f"), num(r["elpd_diff"], ".1f"),
                      num(r["dse"], ".1f"), num(r["p_loo"], ".1f"), num(r["weight"], ".2f"), r["n_high_k"]]
                     for r in loo_comparison], ["---"] + ["---:"] * 7)


def checks_table(rep: Report) -> str:
    """Per model: diagnostics, posterior predictive coverage and the prior-implied accuracy."""
    rows = []
    for name, e in _zoo(rep).items():
        if name == "loo_comparison" or not isinstance(e, dict) or not e.get("fitted"):
            continue
        d = e["diagnostics"]
        ppc = e.get("posterior_predictive") or {}
        q = ((e.get("prior_predictive") or {}).get("accuracy") or {}).get("quantiles") or {}
        prior_txt = (f"{num(q.get('0.5'), '.2f')} [{num(q.get('0.05'), '.2f')}, {num(q.get('0.95'), '.2f')}]"
                     if q else "n/a")
        rows.append([f"`{name}`", "yes" if d["passed"] else "**no**", num(d["max_rhat"], ".3f"),
                     num(d["min_ess_bulk"], ".0f"), d["divergences"], pct(ppc.get("coverage")),
                     num(ppc.get("chi2_p_value"), ".2f"), prior_txt])
    return md_table(["model", "passed", "max R-hat", "min ESS", "div.", "PPC coverage", "PPC p", "prior accuracy"],
                    rows, ["---", "---", "---:", "---:", "---:", "---:", "---:", "---:"])


def richer_models(rep: Report) -> str:
    """Each richer model's slope beside the main verdict; the models not fitted and why."""
    zoo, effect, out = _zoo(rep), rep.eff, Out()
    secs = rep.run.get("model_seconds") or {}
    rows = []
    beside = [(name, eff.key, eff.beside_verdict) for name, module in REGISTRY.items()
              for eff in module.SPEC.decides if eff.beside_verdict]  # as each model declares
    for name, key, label in beside:
        e = zoo.get(name)
        if e and e.get("fitted") and e.get(key):
            x = e[key]
            same = ("not compared" if UNDECIDED in (x["decision"], effect["decision"])  # a failed fit
                    else "same" if x["decision"] == effect["decision"] else "**changed**")
            rows.append([code(name), esc(label), num(x["mean"]), f"[{num(x['hdi_low'])}, {num(x['hdi_high'])}]",
                         code(x["decision"]), same, "yes" if e["diagnostics"]["passed"] else "**no**",
                         num(secs.get(name), ".0f")])
    if rows:
        out(f"Each model's scale slope beside the main verdict (`{effect['decision']}`); the last column is the "
            "fit's sampling time in seconds (compilation included), its cost.\n")
        out(md_table(["model", "slope", "mean", "HDI", "decision", "vs main verdict", "diagnostics passed",
                      "seconds"], rows, ["---", "---", "---:", "---:", "---", "---", "---", "---:"]))
    missing = [n for n in ("items", "self_vs_other") if not (zoo.get(n) or {}).get("fitted")]
    tried = [n for n in missing if (zoo.get(n) or {}).get("reason")]
    for n in tried:
        out(f"\n{code(n)} was requested but not fitted: {esc(zoo[n]['reason'])}.\n")
    untried = [n for n in missing if n not in tried]
    if untried:
        out("\nNot requested in this run: " + ", ".join(code(n) for n in untried) + " (record-level models; add "
            "them to `--models`, e.g. `--models scale,sdt,pooled,within_between,items,self_vs_other`). `items` "
            "adds a crossed model x item effect for tasks whose items are shared across models; `self_vs_other` "
            "needs cross-predictions (a `predictor` different from `model`).\n")
    self_vs_other = zoo.get("self_vs_other")
    if self_vs_other and self_vs_other.get("fitted") and self_vs_other.get("effect"):
        g = self_vs_other["effect"]
        out(f"\n**Privileged self-knowledge** (`models/self_vs_other.py`): the log-odds advantage of a model "
            f"predicting itself over other models predicting it is {num(g['mean'])} "
            f"({g['hdi_prob']:.0%} HDI {num(g['hdi_low'])} to {num(g['hdi_high'])}; P(> 0) = "
            f"{num(g['prob_positive'])}), decision {code(g['decision'])}"
            + ("" if self_vs_other["diagnostics"]["passed"] else " (diagnostics failed: not a finding)") + ".\n")
    return str(out)
