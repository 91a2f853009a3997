"""Evaluating each declared hypothesis on the fitted models (decision, P(direction), Bayes factor)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from selfmodel import models as model_registry
from selfmodel.decisions.hypotheses.bayes_factor import savage_dickey, slope_prior_density
from selfmodel.decisions.hypotheses.declared import Hypothesis
from selfmodel.decisions.hypotheses.rule import decide, not_estimable
from selfmodel.records.contract import decision_words

# --------------------------------------------------------------------------- evaluation


def _fit_priors(idata: Any, model: str) -> dict[str, Any]:
    import json


    prov = getattr(idata, "attrs", {}).get("selfmodel_provenance")
    if prov:
        saved = json.loads(prov).get("priors")
        if saved:
            return {k: (v[0], dict(v[1])) for k, v in saved.items()}
    return dict(model_registry.get(model).DEFAULT_PRIORS)


def _labels_of(da: Any) -> tuple[str | None, list[str]]:
    dims = [d for d in da.dims if d not in ("chain", "draw")]
    if not dims:
        return None, []
    if len(dims) > 1:
        raise ValueError(f"'{da.name}' has several dimensions {dims}; name one label per hypothesis")
    return dims[0], [str(v) for v in da[dims[0]].values]


def evaluate(
    hypothesis: Hypothesis,
    idata: Any,
    *,
    n_models: int,
    models_per_label: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """Evaluate one hypothesis on a fitted model's posterior.

    Parameters
    ----------
    hypothesis
        The declared hypothesis.
    idata
        The fit's draws (an :class:`xarray.DataTree`, ``selfmodel.fitting.sampling.Fit.idata``), of ``hypothesis.model``.
        Its priors are read from the provenance in ``idata.attrs`` (the model's
        ``DEFAULT_PRIORS`` when absent).
    n_models
        Models carrying the scale variable (for ``min_models``).
    models_per_label
        Models per label (e.g. per task) when a label has fewer than ``n_models``.

    Returns
    -------
    dict
        For a single parameter: the hypothesis (``name``, ``model``, ``parameter``,
        ``label``, ``direction``, ``rule``), everything :func:`decide` returns, and
        ``prob_direction`` (posterior probability of the predicted sign), ``predicted``
        (``improves`` or ``worsens``), ``supported`` (the decision is the predicted one;
        ``None`` when not estimable), ``bayes_factor_10`` and ``bf_display`` (Savage-Dickey,
        ``None`` when the prior density is not available) and ``bayes_factor`` (the
        :func:`savage_dickey` details). For ``NAME[*]``: the hypothesis fields and
        ``per_label`` (label -> single-parameter result).

    Examples
    --------
    >>> import xarray as xr
    >>> from selfmodel.common import arviz_ops
    >>> rng = np.random.default_rng(0)
    >>> post = xr.Dataset({"beta": (("chain", "draw"), rng.normal(0.6, 0.1, (2, 2000)))})
    >>> res = evaluate(Hypothesis("h", parameter="beta"), arviz_ops.from_datasets(posterior=post), n_models=10)
    >>> res["decision"], res["supported"], res["bf_display"]
    ('improves', True, '>1000')
    """
    base, label = hypothesis.base, hypothesis.label
    head = {
        "name": hypothesis.name,
        "description": hypothesis.description,
        "model": hypothesis.model,
        "parameter": hypothesis.parameter,
        "label": label,
        "direction": hypothesis.direction,
        "predicted": hypothesis.predicted,
        "role": hypothesis.role,
        "rule": hypothesis.rule.as_dict(),
    }
    post = idata.posterior
    if base not in post:
        return {**head, **_absent(hypothesis, f"variable '{base}' is not in the fit of '{hypothesis.model}'")}
    da = post[base]
    dim, labels = _labels_of(da)
    counts = dict(models_per_label or {})
    if label == "*":
        if dim is None:
            return {**head, **_absent(hypothesis, f"'{base}' has no labels to expand")}
        per = {
            lab: evaluate(replace(hypothesis, parameter=f"{base}[{lab}]"), idata,
                          n_models=n_models, models_per_label=counts)
            for lab in labels
        }
        return {**head, "per_label": per}
    if label is not None:
        if dim is None:
            return {**head, **_absent(hypothesis, f"'{base}' has no dimension to select '{label}' from")}
        if label not in labels:
            return {**head, **_absent(hypothesis, f"'{label}' is not among the {dim}s in the data ({', '.join(labels)})")}
        draws = da.sel({dim: label}).values
        n_eff_models = counts.get(label, n_models)
    else:
        if dim is not None:
            return {**head, **_absent(hypothesis, f"'{base}' has dimension '{dim}'; name a label or [*]")}
        draws = da.values
        n_eff_models = n_models
    rule = hypothesis.rule
    res = decide(draws, rule, n_models=n_eff_models)
    out = {**head, **res}
    if res["decision"] == "not_estimable":
        return {**out, "prob_direction": None, "supported": None, "direction_supported": None,
                "bayes_factor_10": None, "bf_display": None, "bayes_factor": None}
    flat = np.asarray(draws, dtype=float).ravel()
    p_pos = res["prob_positive"]
    out["prob_direction"] = p_pos if hypothesis.direction == "increase" else float(np.mean(flat < 0))
    out["supported"] = res["decision"] == hypothesis.predicted
    # direction alone: the predicted sign is credible, whether or not the size clears the ROPE
    sign = 1 if hypothesis.direction == "increase" else -1
    signed = {w.name for w in decision_words() if w.sign == sign}
    out["direction_supported"] = res["decision"] in signed
    n_tasks = len(post["task"]) if "task" in post.coords else 1
    dens, note = slope_prior_density(hypothesis.model, base, _fit_priors(idata, hypothesis.model),
                                     n_tasks=n_tasks)
    if dens is None or not dens > 0:
        out.update({"bayes_factor_10": None, "bf_display": None,
                    "bayes_factor": {"reason": note}})
        return out
    sd = savage_dickey(flat, prior_density0=dens)
    sd["prior"] = note
    out.update({"bayes_factor_10": sd["bf_10"], "bf_display": sd["display"], "bayes_factor": sd})
    return out


def _absent(hypothesis: Hypothesis, reason: str) -> dict[str, Any]:
    return {**not_estimable(reason, hypothesis.rule), "prob_direction": None, "supported": None,
            "direction_supported": None, "bayes_factor_10": None, "bf_display": None, "bayes_factor": None}


@dataclass(frozen=True)
class Evidence:
    """A fitted model as the hypotheses see it.

    Parameters
    ----------
    idata
        The fit's draws (an :class:`xarray.DataTree`).
    n_models
        Models in the fit (carrying the scale variable).
    models_per_label
        Models per task (labels of the per-task effect).
    diagnostics_passed
        The fit passed the diagnostic checks (``selfmodel.fitting.sampling.diagnose``); a row's
        ``finding`` is false otherwise (DESIGN: verdicts are gated on diagnostics).
    """

    idata: Any
    n_models: int
    models_per_label: Mapping[str, int] = field(default_factory=dict)
    diagnostics_passed: bool = True


def evaluate_all(
    hypotheses: Sequence[Hypothesis], evidence: Mapping[str, Evidence | str]
) -> list[dict[str, Any]]:
    """Evaluate every hypothesis; one flat row per parameter (``NAME[*]`` expanded).

    Parameters
    ----------
    hypotheses
        From :func:`load_hypotheses`.
    evidence
        Model name -> :class:`Evidence`, or a string saying why that model was not fitted.
        A hypothesis on a model absent from the mapping is ``not_estimable``.

    Returns
    -------
    list of dict
        Rows as :func:`evaluate` returns them for a single parameter, plus ``hypothesis``
        (the declared name; ``name`` gets the label, e.g. ``accuracy_by_task[refusal]``)
        and ``finding`` (estimable and the fit passed its diagnostics).
    """
    rows: list[dict[str, Any]] = []
    for h in hypotheses:
        ev = evidence.get(h.model, f"model '{h.model}' was not fitted")
        if isinstance(ev, str):
            head = {"name": h.name, "description": h.description, "model": h.model,
                    "parameter": h.parameter, "label": h.label, "direction": h.direction,
                    "predicted": h.predicted, "role": h.role, "rule": h.rule.as_dict()}
            rows.append({**head, **_absent(h, ev), "hypothesis": h.name, "finding": False})
            continue
        res = evaluate(h, ev.idata, n_models=ev.n_models, models_per_label=ev.models_per_label)
        singles = (
            [{**r, "name": f"{h.name}[{lab}]"} for lab, r in res["per_label"].items()]
            if "per_label" in res else [res]
        )
        for r in singles:
            r["hypothesis"] = h.name
            r["finding"] = bool(ev.diagnostics_passed and r["decision"] != "not_estimable")
            rows.append(r)
    return rows
