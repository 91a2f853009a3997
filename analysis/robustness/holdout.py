r"""Leave-one-group-out predictive comparison of the models with and without the scale term.

Exact refits without each model (or family), whose cells are then predicted as a new
group; the comparison of the models with and without the scale term is read by
:func:`selfmodel.decisions.elpd_words.elpd_sentence`. The estimator: ``docs/robustness.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

import numpy as np
import polars as pl
from scipy.special import gammaln, logsumexp

from selfmodel.common.progress import steps
from selfmodel.decisions.elpd_words import elpd_sentence
from selfmodel.robustness.mixed_check import draws_from_fit

#: Inner draws of the new group's effects per posterior draw.
INNER: Final = 64
#: Posterior draws used per refit.
DRAWS: Final = 500


def heldout_log_density(
    draws: Mapping[str, np.ndarray], held: Mapping[str, Any], tasks: list[str], *, seed: int,
    inner: int = INNER,
) -> float | None:
    r""":math:`\log p(y_g \mid y_{-g})` of a held-out group's cells (``docs/robustness.md``)."""
    keep = [i for i, t in enumerate(held["task"]) if str(t) in tasks]
    if not keep:
        return None
    t_of = {t: i for i, t in enumerate(tasks)}
    ti = np.array([t_of[str(held["task"][i])] for i in keep])
    x = np.array([float(held["x"][i]) for i in keep])
    n = np.array([float(held["n"][i]) for i in keep])
    k = np.array([float(held["k"][i]) for i in keep])
    models = sorted({str(held["model"][i]) for i in keep})
    fams = sorted({str(held["family"][i]) for i in keep})
    mi = np.array([models.index(str(held["model"][i])) for i in keep])
    fi = np.array([fams.index(str(held["family"][i])) for i in keep])
    rng = np.random.default_rng(seed)
    s = draws["alpha"].shape[0]
    log_binom = gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)
    base = draws["alpha"][:, ti] + draws["slope_task"][:, ti] * x[None, :]  # (S, C)
    u = rng.normal(size=(s, inner, len(fams))) * draws["sigma_family"][:, None, None]
    v = rng.normal(size=(s, inner, len(models))) * draws["sigma_model"][:, None, None]
    w = rng.normal(size=(s, inner, len(keep))) * draws["sigma_cell"][:, None, None]
    eta = base[:, None, :] + u[:, :, fi] + v[:, :, mi] + w
    ll = (log_binom + k * -np.logaddexp(0, -eta) + (n - k) * -np.logaddexp(0, eta)).sum(axis=2)
    return float(logsumexp(ll) - np.log(s * inner))


def _thin(d: Mapping[str, np.ndarray], size: int) -> dict[str, np.ndarray]:
    total = d["alpha"].shape[0]
    idx = np.unique(np.linspace(0, total - 1, min(size, total)).astype(int))
    return {k: v[idx] for k, v in d.items()}


def leave_group_out(
    cells: pl.DataFrame,
    *,
    group: str,
    fit_without: Callable[[str, pl.DataFrame], Any],
    with_name: str,
    without_name: str,
    seed: int,
    min_models: int = 3,
) -> dict[str, Any]:
    """Leave each ``group`` (``"model"`` or ``"family"``) out, refit both models, compare.

    ``fit_without(model_name, rest)`` returns a fit (``idata``, ``diagnostics``) of the named
    model on ``rest``.
    """
    rows = []
    groups = sorted(cells[group].unique().to_list())
    with steps(f"leave-one-{group}-out refits", 2 * len(groups)) as st:
        for g in groups:
            rest = cells.filter(pl.col(group) != g)
            held = cells.filter(pl.col(group) == g)
            if rest["model"].n_unique() < min_models or rest["x"].n_unique() < 2:
                rows.append({"group": g, "status": "not_estimable", "reason": "too few models left"})
                continue
            entry: dict[str, Any] = {"group": g, "cells": held.height}
            cols = {c: held[c].to_list() for c in ("model", "family", "task", "x", "n", "k")}
            for label, name in (("with_scale", with_name), ("without_scale", without_name)):
                st.next()
                f = fit_without(name, rest)
                got = draws_from_fit(f.idata)
                if got is None:
                    entry[label] = None
                    continue
                entry[label] = heldout_log_density(_thin(got[0], DRAWS), cols, got[1], seed=seed)
                entry[f"{label}_diagnostics_passed"] = bool(f.diagnostics.get("passed"))
            ok = entry.get("with_scale") is not None and entry.get("without_scale") is not None
            entry["status"] = "estimated" if ok else "not_estimable"
            if ok:
                entry["difference"] = entry["with_scale"] - entry["without_scale"]
            rows.append(entry)
    diffs = np.array([r["difference"] for r in rows if r.get("status") == "estimated"])
    out: dict[str, Any] = {"group": group, "groups": rows, "n_groups": int(diffs.size)}
    if diffs.size >= 2:
        total = float(diffs.sum())
        se = float(np.sqrt(diffs.size) * diffs.std(ddof=1))
        out.update({"elpd_diff": total, "se": se,
                    "sentence": elpd_sentence(total, se, better="model with the scale term",
                                              worse="model without it", unit=f"{group}s")})
    else:
        out.update({"elpd_diff": None, "se": None,
                    "sentence": f"Not estimable: fewer than two {group}s could be held out."})
    return out
