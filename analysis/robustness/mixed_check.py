r"""A predictive check that can fail: replicate *new* cells, models and families (mixed predictive).

Each posterior draw replicates the data afresh from the population distributions (new
family, model and cell effects), so a family, model or cell the population does not reach
stands out; groups are flagged at a Bonferroni level. The replication, the discrepancy and
the rule: ``docs/robustness.md``. It applies to models whose posterior has the scale
model's population parameters (``alpha``, ``slope_task``, ``sigma_family``, ``sigma_model``,
``sigma_cell``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import numpy as np

#: Level of the check (overall), divided by the number of groups for each group.
ALPHA: Final = 0.05
#: Posterior draws used (thinned evenly).
MAX_DRAWS: Final = 2000
REQUIRED: Final = ("alpha", "slope_task", "sigma_family", "sigma_model", "sigma_cell")


def _codes(values: Any) -> tuple[np.ndarray, list[str]]:
    labels = sorted({str(v) for v in values})
    idx = {v: i for i, v in enumerate(labels)}
    return np.array([idx[str(v)] for v in values], dtype=np.int64), labels


def replicate(
    draws: Mapping[str, np.ndarray],
    data: Mapping[str, Any],
    tasks: list[str],
    *,
    seed: int,
) -> np.ndarray:
    """Replicated counts ``(S, cells)`` from the population distributions (``docs/robustness.md``).

    ``draws`` holds ``alpha`` and ``slope_task`` as ``(S, T)`` in the order of ``tasks`` and
    the three standard deviations as ``(S,)``; ``data`` the columns ``model, family, task,
    x, n``.
    """
    rng = np.random.default_rng(seed)
    t_of = {t: i for i, t in enumerate(tasks)}
    ti = np.array([t_of[str(t)] for t in data["task"]], dtype=np.int64)
    mi, models = _codes(data["model"])
    fi, fams = _codes(data["family"])
    x = np.asarray(data["x"], dtype=float)
    n = np.asarray(data["n"], dtype=np.int64)
    s = draws["alpha"].shape[0]
    u = rng.normal(size=(s, len(fams))) * draws["sigma_family"][:, None]
    v = rng.normal(size=(s, len(models))) * draws["sigma_model"][:, None]
    w = rng.normal(size=(s, x.size)) * draws["sigma_cell"][:, None]
    eta = draws["alpha"][:, ti] + draws["slope_task"][:, ti] * x[None, :] + u[:, fi] + v[:, mi] + w
    p = 1.0 / (1.0 + np.exp(-eta))
    return rng.binomial(n[None, :], p).astype(float)


def _group_p(y: np.ndarray, y_rep: np.ndarray, mu: np.ndarray, var: np.ndarray,
             members: np.ndarray) -> tuple[float, float]:
    t_obs = float(((y[members] - mu[members]) ** 2 / var[members]).sum())
    t_rep = ((y_rep[:, members] - mu[members]) ** 2 / var[members]).sum(axis=1)
    return t_obs, float(np.mean(t_rep >= t_obs))


def mixed_predictive_check(
    draws: Mapping[str, np.ndarray],
    data: Mapping[str, Any],
    tasks: list[str],
    *,
    seed: int,
    alpha: float = ALPHA,
) -> dict[str, Any]:
    """The ``mixed_predictive`` section: discrepancy and p-value per task, model, family."""
    y_rep = replicate(draws, data, tasks, seed=seed)
    y = np.asarray(data["k"], dtype=float)
    n = np.asarray(data["n"], dtype=float)
    mu = y_rep.mean(axis=0)
    var = np.maximum(y_rep.var(axis=0), 0.25)  # a cell replicated as constant cannot divide by 0
    t_all, p_all = _group_p(y, y_rep, mu, var, np.ones(y.size, dtype=bool))
    groups: dict[str, list[dict[str, Any]]] = {}
    flagged: list[dict[str, Any]] = []
    n_tests = 1 + sum(len(set(map(str, data[c]))) for c in ("task", "model", "family"))
    cut = alpha / n_tests
    for kind, col in (("task", "task"), ("model", "model"), ("family", "family")):
        codes, labels = _codes(data[col])
        rows = []
        for g, label in enumerate(labels):
            members = codes == g
            t_obs, p = _group_p(y, y_rep, mu, var, members)
            acc_obs = float(y[members].sum() / n[members].sum())
            acc_rep = y_rep[:, members].sum(axis=1) / n[members].sum()
            lo, hi = np.quantile(acc_rep, [0.03, 0.97])
            row = {
                kind: label, "cells": int(members.sum()), "discrepancy": t_obs, "p_value": p,
                "observed_accuracy": acc_obs, "replicated_accuracy_94": [float(lo), float(hi)],
                "flagged": bool(p < cut),
            }
            rows.append(row)
            if row["flagged"]:
                flagged.append({"kind": kind, "group": label, "p_value": p})
        groups[kind] = rows
    passed = p_all >= cut and not flagged
    return {
        "method": (
            "mixed predictive: each posterior draw replicates every cell with new family, model "
            "and cell effects drawn from their population distributions; chi-square "
            "discrepancy per group against the replicates' moments; a group is flagged when "
            "its p-value is below alpha / (number of tests: overall, tasks, models, families)"
        ),
        "alpha": alpha,
        "n_tests": n_tests,
        "threshold": cut,
        "draws": int(y_rep.shape[0]),
        "seed": int(seed),
        "overall": {"discrepancy": t_all, "p_value": p_all},
        "by_task": groups["task"],
        "by_model": groups["model"],
        "by_family": groups["family"],
        "flagged": flagged,
        "passed": bool(passed),
    }


def draws_from_fit(idata: Any, *, max_draws: int = MAX_DRAWS) -> tuple[dict[str, np.ndarray], list[str]] | None:
    """The population parameters of a fit (``None`` when the model lacks them)."""
    post = idata["posterior"]
    if any(name not in post for name in REQUIRED if name != "slope_task"):
        return None
    tasks = [str(t) for t in post["alpha"].coords["task"].values]
    out: dict[str, np.ndarray] = {}
    for name in REQUIRED:
        if name not in post:  # a model without the scale term (slope 0)
            out[name] = np.zeros_like(out["alpha"])
            continue
        arr = post[name]
        if name in ("alpha", "slope_task"):
            arr = arr.transpose("chain", "draw", "task")
            vals: np.ndarray = np.asarray(arr.values, dtype=float).reshape(-1, len(tasks))
        else:
            vals = np.asarray(arr.values, dtype=float).reshape(-1)
        out[name] = vals
    total = out["alpha"].shape[0]
    keep = np.unique(np.linspace(0, total - 1, min(max_draws, total)).astype(int))
    return {k: v[keep] for k, v in out.items()}, tasks


def mixed_check_of_fit(fit: Any, data: Any, *, seed: int) -> dict[str, Any]:
    """:func:`mixed_predictive_check` of a fitted model, or ``not_estimable`` with the reason."""
    got = draws_from_fit(fit.idata)
    if got is None:
        return {"status": "not_estimable",
                "reason": f"model '{fit.model}' lacks the population parameters {', '.join(REQUIRED)}"}
    draws, tasks = got
    cols = {c: data[c].to_list() for c in ("model", "family", "task", "x", "n", "k")}
    out = mixed_predictive_check(draws, cols, tasks, seed=seed)
    out["status"] = "estimated"
    out["fit_model"] = fit.model
    return out


def holdout_group_check(
    draws: Mapping[str, np.ndarray],
    held_out: Mapping[str, Any],
    tasks: list[str],
    *,
    seed: int,
    alpha: float = ALPHA,
) -> dict[str, Any]:
    """Cross-validated mixed predictive of one held-out group (Marshall & Spiegelhalter 2007).

    ``draws`` come from a refit *without* the group, so the group cannot inflate the
    population spread it is judged against; ``held_out`` holds the group's cells (columns
    ``model, family, task, x, n, k``). Cells of tasks the refit lacks are left out (counted in
    ``cells_without_task``). The p-value is two-sided on the group's pooled accuracy and
    one-sided on its chi-square discrepancy; the group is flagged when either is below
    ``alpha / 2``.
    """
    keep = [i for i, t in enumerate(held_out["task"]) if str(t) in tasks]
    cols = {c: [held_out[c][i] for i in keep] for c in ("model", "family", "task", "x", "n", "k")}
    dropped = len(held_out["task"]) - len(keep)
    if not keep:
        return {"status": "not_estimable", "reason": "the refit has none of the group's tasks",
                "cells_without_task": dropped}
    y_rep = replicate(draws, cols, tasks, seed=seed)
    y = np.asarray(cols["k"], dtype=float)
    n = np.asarray(cols["n"], dtype=float)
    mu = y_rep.mean(axis=0)
    var = np.maximum(y_rep.var(axis=0), 0.25)
    t_obs, p_chi2 = _group_p(y, y_rep, mu, var, np.ones(y.size, dtype=bool))
    acc_obs = float(y.sum() / n.sum())
    acc_rep = y_rep.sum(axis=1) / n.sum()
    p_acc = float(2 * min(np.mean(acc_rep >= acc_obs), np.mean(acc_rep <= acc_obs)))
    lo, hi = np.quantile(acc_rep, [0.03, 0.97])
    return {
        "status": "estimated",
        "cells": int(y.size),
        "cells_without_task": dropped,
        "discrepancy": t_obs,
        "p_value_discrepancy": p_chi2,
        "observed_accuracy": acc_obs,
        "replicated_accuracy_94": [float(lo), float(hi)],
        "p_value_accuracy": min(p_acc, 1.0),
        "flagged": bool(min(p_chi2, p_acc) < alpha / 2),
        "alpha": alpha,
    }


def most_extreme_family(section: Mapping[str, Any]) -> str | None:
    """The family with the smallest in-sample p-value of a :func:`mixed_predictive_check`."""
    rows = section.get("by_family") or []
    if len(rows) < 3:
        return None
    return str(min(rows, key=lambda r: (r["p_value"], r["family"]))["family"])


def with_holdout_family(mixed: Mapping[str, Any] | None,
                        holdout: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The mixed check with its held-out family's refit under ``holdout_family``.

    A flagged family fails the check (``passed`` false, listed in ``flagged``).
    """
    if mixed is None or holdout is None:
        return None if mixed is None else dict(mixed)
    out = {**mixed, "holdout_family": dict(holdout)}
    if holdout.get("flagged"):
        out["passed"] = False
        out["flagged"] = [*mixed.get("flagged", []), {
            "kind": "family (held out)", "group": holdout["family"],
            "p_value": min(holdout["p_value_discrepancy"], holdout["p_value_accuracy"])}]
    return out
