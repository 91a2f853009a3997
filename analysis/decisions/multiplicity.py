r"""Additions to the hypotheses table: Bayes factors over a range of prior widths, multiplicity.

Bayes factors over the declared prior widths (``WIDTHS``, with bootstrap intervals) and the
multiplicity block (counts, joint sign probabilities over tasks, Holm-adjusted frequentist
p-values): how each is computed, ``docs/hypotheses.md``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

import numpy as np

from selfmodel.decisions.hypotheses import DecisionRule, decide

#: Declared slope-prior widths of the Bayes factor range (sd, in the effect's units).
WIDTHS: Final = (0.1, 0.25, 0.5, 1.0)
#: Bootstrap resamples of the posterior draws for the interval of each Bayes factor.
N_BOOT: Final = 200


def _npdf(x: float, mu: float, var: float) -> float:
    return math.exp(-0.5 * (x - mu) ** 2 / var) / math.sqrt(2 * math.pi * var)


def _bf10(mean: float, var: float, s0: float, s: float) -> float | None:
    """Closed-form BF10 under prior N(0, s^2) from a posterior N(mean, var) under N(0, s0^2)."""
    prec_l = 1.0 / var - 1.0 / s0**2
    if prec_l <= 0:
        return None  # the data carry no information beyond the prior: no likelihood to reuse
    m_l = (mean / var) / prec_l
    prec = prec_l + 1.0 / s**2
    m = (m_l * prec_l) / prec
    return _npdf(0.0, 0.0, s**2) / _npdf(0.0, m, 1.0 / prec)


def bayes_factor_range(
    draws: np.ndarray,
    prior_density0: float,
    *,
    widths: Sequence[float] = WIDTHS,
    n_eff: int | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """BF10 of a point null at 0 for each prior width (see the module docstring)."""
    flat = np.asarray(draws, dtype=float).ravel()
    flat = flat[np.isfinite(flat)]
    s0 = 1.0 / (math.sqrt(2 * math.pi) * prior_density0)
    mean, var = float(flat.mean()), float(flat.var(ddof=1))
    size = int(min(flat.size, n_eff)) if n_eff else flat.size
    rng = np.random.default_rng(seed)
    boot = [rng.choice(flat, size=size, replace=True) for _ in range(N_BOOT)]
    rows = []
    for s in widths:
        point = _bf10(mean, var, s0, s)
        reps = [_bf10(float(b.mean()), float(b.var(ddof=1)), s0, s) for b in boot]
        reps_f = np.array([r for r in reps if r is not None], dtype=float)
        lo, hi = (np.quantile(reps_f, [0.025, 0.975]) if reps_f.size >= 10 else (None, None))
        rows.append({"prior_sd": float(s), "bf_10": point,
                     "interval": [None if lo is None else float(lo), None if hi is None else float(hi)]})
    vals = [r["bf_10"] for r in rows if r["bf_10"] is not None]
    return {
        "method": "normal approximation of the likelihood (posterior / fitted prior), "
                  "closed-form Savage-Dickey per prior width; bootstrap interval over draws",
        "fitted_prior_sd": s0,
        "n_eff": size,
        "widths": rows,
        "min": min(vals) if vals else None,
        "max": max(vals) if vals else None,
    }


def _param_draws(idata: Any, parameter: str, label: str | None) -> np.ndarray | None:
    name = parameter.split("[", 1)[0]
    post = idata["posterior"]
    if name not in post:
        return None
    arr = post[name]
    if label is not None:
        dims = [d for d in arr.dims if d not in ("chain", "draw")]
        if len(dims) != 1:
            return None
        arr = arr.sel({dims[0]: label})
    return np.asarray(arr.values, dtype=float).ravel()


def _ess(idata: Any, parameter: str, label: str | None) -> int | None:
    import arviz as az

    name = parameter.split("[", 1)[0]
    try:
        e = az.ess(idata, var_names=[name])[name]
        if label is not None:
            dims = [d for d in e.dims]
            e = e.sel({dims[0]: label})
        return int(float(e.values))
    except (KeyError, ValueError, IndexError):
        return None


def add_bayes_factor_ranges(rows: list[dict[str, Any]], evidence: Mapping[str, Any], *,
                            seed: int) -> None:
    """Add ``bayes_factor_range`` to every row with an estimated Bayes factor (in place)."""
    for row in rows:
        bf = row.get("bayes_factor") or {}
        ev = evidence.get(str(row.get("model")))
        if not bf.get("prior_density_0") or ev is None or isinstance(ev, str):
            continue
        draws = _param_draws(ev.idata, row["parameter"], row.get("label"))
        if draws is None:
            continue
        row["bayes_factor_range"] = bayes_factor_range(
            draws, float(bf["prior_density_0"]),
            n_eff=_ess(ev.idata, row["parameter"], row.get("label")), seed=seed,
        )


def multiplicity(
    hypotheses: Sequence[Any],
    rows: Sequence[Mapping[str, Any]],
    evidence: Mapping[str, Any],
    frequentist: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The ``hypotheses.multiplicity`` block (see the module docstring)."""
    joint = []
    for h in hypotheses:
        if not h.parameter.endswith("[*]"):
            continue
        ev = evidence.get(h.model)
        labels = [r.get("label") for r in rows if r.get("hypothesis") == h.name and r.get("label")]
        if ev is None or isinstance(ev, str) or not labels:
            joint.append({"hypothesis": h.name, "prob_all_predicted_sign": None,
                          "reason": ev if isinstance(ev, str) else "no fitted labels"})
            continue
        draws = [_param_draws(ev.idata, h.parameter, lab) for lab in labels]
        stacks = [s for s in draws if s is not None]
        if len(stacks) < len(draws):
            continue
        m = np.vstack(stacks)  # (labels, draws)
        sign = m > 0 if h.direction == "increase" else m < 0
        joint.append({"hypothesis": h.name, "labels": labels,
                      "prob_all_predicted_sign": float(sign.all(axis=0).mean()),
                      "prob_any_predicted_sign": float(sign.any(axis=0).mean())})
    holm = (frequentist or {}).get("holm") or {}
    return {
        "confirmatory": confirmatory_family(rows, evidence),
        "n_hypotheses": len(hypotheses),
        "n_decisions": len(rows),
        "n_supported": sum(1 for r in rows if r.get("supported")),
        "n_findings": sum(1 for r in rows if r.get("finding")),
        "joint_task_signs": joint,
        "holm_adjusted_p": {k: v for k, v in holm.items() if isinstance(v, Mapping)},
        "holm_family": holm.get("family"),
        "note": (
            "each row is one decision from the declared rule; P(all task slopes have the "
            "predicted sign) is the family-wise Bayesian statement for a hypothesis over tasks, "
            "the Holm-adjusted p-values the frequentist one"
        ),
    }


def confirmatory_family(rows: Sequence[Mapping[str, Any]], evidence: Mapping[str, Any]) -> dict[str, Any]:
    """The confirmatory family's decision, controlled together.

    The hypotheses file marks hypotheses ``role = "confirmatory"``; every decision row of one
    (a ``NAME[*]`` hypothesis gives one per task) is a member of the family, of size
    :math:`k`. Each member is decided again with the Bonferroni-adjusted HDI mass
    :math:`1 - (1 - m)/k` (:math:`m` the declared mass): a sign is claimed only when that
    wider interval excludes 0. By Bonferroni's inequality, if each adjusted interval wrongly
    excludes 0 on one side at most at its nominal rate :math:`(1 - m')/2`, the family claims
    some wrong sign at most at :math:`k (1 - m')/2 = (1 - m)/2`; that is a frequentist
    statement only as far as the intervals' coverage is calibrated; under the joint null
    (every member's slope 0) some member claims a sign at most at :math:`1 - m`, which the
    arm ``default:confirmatory`` of ``validation/pipeline_operating_characteristics.py`` measures by this
    function at the pipeline's settings. The family is
    ``supported`` when every member's adjusted decision is its predicted one (``None``, with
    the ``reason``, when a member is not a finding: its fit failed its diagnostics). Beside
    it, per fit, the joint posterior probability that every member on that fit has its
    predicted sign (members on different fits have no joint posterior).

    Examples
    --------
    >>> import xarray as xr
    >>> from selfmodel.common import arviz_ops
    >>> rng = np.random.default_rng(0)
    >>> post = xr.Dataset({"beta": (("chain", "draw"), rng.normal(0.3, 0.1, (2, 2000)))})
    >>> class Ev:
    ...     idata, n_models = arviz_ops.from_datasets(posterior=post), 10
    >>> row = {"role": "confirmatory", "name": "h", "hypothesis": "h", "model": "scale",
    ...        "parameter": "beta", "label": None, "predicted": "improves", "direction": "increase",
    ...        "rule": {"rope": 0.1, "hdi_prob": 0.94, "min_models": 3}, "decision": "improves"}
    >>> fam = confirmatory_family([row, {**row, "name": "h2"}], {"scale": Ev()})
    >>> fam["size"], round(fam["hdi_prob"], 3), fam["members"][0]["decision"]
    (2, 0.97, 'credibly_positive')
    """
    members = [r for r in rows if r.get("role") == "confirmatory"]
    k = len(members)
    out: dict[str, Any] = {
        "size": k,
        "method": ("Bonferroni over the confirmatory family: each member decided with HDI mass "
                   "1 - (1 - hdi_prob) / size; supported when every member's decision is the "
                   "predicted one; joint P(every member has its predicted sign) per fit"),
        "hdi_prob": None, "members": [], "supported": None, "joint": [],
    }
    if k == 0:
        out["reason"] = "no hypothesis is declared confirmatory (role = \"confirmatory\")"
        return out
    signs: dict[str, list[np.ndarray]] = {}
    for r in members:
        rule_d = r.get("rule") or {}
        base = DecisionRule(**{key: rule_d[key] for key in ("rope", "hdi_prob", "min_models")
                               if key in rule_d})
        level = 1.0 - (1.0 - base.hdi_prob) / k
        out["hdi_prob"] = level
        ev = evidence.get(str(r.get("model")))
        draws = (None if ev is None or isinstance(ev, str)
                 else _param_draws(ev.idata, str(r["parameter"]), r.get("label")))
        member = {"name": r.get("name"), "hypothesis": r.get("hypothesis"), "predicted": r.get("predicted"),
                  "unadjusted_decision": r.get("decision"), "finding": r.get("finding")}
        if draws is None or r.get("decision") == "not_estimable":
            member.update(decision="not_estimable", supported=None,
                          reason=r.get("reason") or "no draws of the parameter")
        else:
            n_models = int(getattr(ev, "n_models", base.min_models))
            d = decide(draws, DecisionRule(rope=base.rope, hdi_prob=level, min_models=base.min_models),
                       n_models=n_models)
            member.update({key: d[key] for key in ("decision", "mean", "hdi_low", "hdi_high", "hdi_prob",
                                                   "reason")})
            member["supported"] = d["decision"] == r.get("predicted")
            sign = draws > 0 if r.get("direction") == "increase" else draws < 0
            signs.setdefault(str(r.get("model")), []).append(sign)
        out["members"].append(member)
    sup = [m["supported"] for m in out["members"]]
    out["supported"] = None if any(v is None for v in sup) else all(sup)
    failed = [str(m["name"]) for m in out["members"] if m.get("finding") is False]
    if failed:  # a member whose fit failed its diagnostics decides nothing for the family
        out["supported"] = None
        out["reason"] = f"not a finding: {', '.join(failed)} (fit failed its diagnostics or not estimable)"
    for model, ss in sorted(signs.items()):
        n = min(len(x) for x in ss)
        joint = np.all(np.vstack([x[:n] for x in ss]), axis=0)
        out["joint"].append({"fit": model, "members": len(ss),
                             "prob_all_predicted_sign": float(joint.mean())})
    return out
