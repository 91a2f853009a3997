"""Generate ``frequentist_small.json``: reference numbers for ``tests/analyses/test_frequentist.py``.

Everything here is computed *without* ``selfmodel.analyses.frequentist``, from textbook formulas in
numpy/scipy, so the tests compare two independent implementations:

- binomial GLM MLE by Newton-Raphson on the cell counts;
- model-based SE :math:`\\sqrt{\\mathrm{diag}(H^{-1})}`, :math:`H = X' \\mathrm{diag}(n p (1-p)) X`;
- CR1 cluster sandwich by hand: :math:`\\frac{G}{G-1}\\frac{N-1}{N-K} H^{-1}
  (\\sum_g s_g s_g') H^{-1}` with :math:`s_g = \\sum_{i \\in g} x_i (k_i - n_i p_i)`
  (Cameron & Miller 2015, eq. 11 with the Stata/statsmodels small-sample factor);
- ``statsmodels`` GLM ``cov_type="cluster"`` on the same data, stored beside the hand value;
- DerSimonian-Laird tau^2 for meta-regression and the Knapp-Hartung SE, by formula
  (Raudenbush 2009; Knapp & Hartung 2003);
- the exact permutation p-value by looping over all 720 permutations with ``np.polyfit``;
- the exact restricted wild score bootstrap p-value by looping over all 64 sign vectors,
  with the restricted MLE by Newton-Raphson (Kline & Santos 2012);
- Holm adjustments from ``statsmodels.stats.multitest.multipletests(method="holm")``;
- Pearson r and Spearman rho from their definitions (Spearman = Pearson on mid-ranks).

Run from the repository root: ``.venv/bin/python tests/reference/make_frequentist_reference.py``.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import statsmodels.api as sm
from scipy import stats
from scipy.special import expit
from statsmodels.stats.multitest import multipletests

HERE = Path(__file__).resolve().parent
DATA = HERE / "frequentist_small.csv"
OUT = HERE / "frequentist_small.json"


def load() -> dict[str, np.ndarray]:
    rows = [line.split(",") for line in DATA.read_text().strip().splitlines()[1:]]
    return {
        "model": np.array([r[0] for r in rows]),
        "task": np.array([r[2] for r in rows]),
        "n": np.array([float(r[3]) for r in rows]),
        "k": np.array([float(r[4]) for r in rows]),
        "x": np.array([float(r[5]) for r in rows]),
    }


def newton(
    X: np.ndarray, k: np.ndarray, n: np.ndarray, offset: np.ndarray | None = None  # noqa: N803 (the design matrix X)
) -> np.ndarray:
    off = np.zeros(len(k)) if offset is None else offset
    b = np.zeros(X.shape[1])
    for _ in range(100):
        p = expit(X @ b + off)
        grad = X.T @ (k - n * p)
        H = X.T @ (X * (n * p * (1 - p))[:, None])  # noqa: N806 (the Hessian X'WX)
        step = np.linalg.solve(H, grad)
        b = b + step
        if np.max(np.abs(step)) < 1e-13:
            break
    return b


def designs(d: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    t1 = (d["task"] == "t1").astype(float)
    t2 = (d["task"] == "t2").astype(float)
    x = d["x"]
    common = np.column_stack([t1, t2, x])
    # sum-to-zero task slopes: coefficient of x is the mean of the two task slopes
    task_slopes = np.column_stack([t1, t2, x, x * (t1 - t2)])
    return {"common": common, "task_slopes": task_slopes}


def sandwich(X, k, n, b, groups):  # noqa: N803 (the design matrix X)
    p = expit(X @ b)
    H = X.T @ (X * (n * p * (1 - p))[:, None])  # noqa: N806 (the Hessian X'WX)
    Hinv = np.linalg.inv(H)  # noqa: N806 (H^-1)
    s = X * (k - n * p)[:, None]
    G = len(np.unique(groups))  # noqa: N806 (G clusters, as in the G/(G-1) correction)
    S = np.zeros((X.shape[1], X.shape[1]))  # noqa: N806 (the sandwich's meat S)
    for g in np.unique(groups):
        sg = s[groups == g].sum(axis=0)
        S += np.outer(sg, sg)  # noqa: N806 (the sandwich's meat S)
    N, K = X.shape  # noqa: N806 (N rows of X; K columns of X)
    cov = Hinv @ S @ Hinv * G / (G - 1) * (N - 1) / (N - K)
    return cov, Hinv


def wild_exact_p(X, k, n, groups, j, beta0=0.0):  # noqa: N803 (the design matrix X)
    Xr = np.delete(X, j, axis=1)  # noqa: N806 (the restricted design matrix)
    off = beta0 * X[:, j]
    br = newton(Xr, k, n, off)
    p = expit(Xr @ br + off)
    H = X.T @ (X * (n * p * (1 - p))[:, None])  # noqa: N806 (the Hessian X'WX)
    Hinv = np.linalg.inv(H)  # noqa: N806 (H^-1)
    s = X * (k - n * p)[:, None]
    models = sorted(set(groups))
    a = np.array([(Hinv @ s[groups == m].sum(axis=0))[j] for m in models])
    t = a.sum() / np.sqrt(np.sum(a**2))
    count = 0
    total = 0
    for signs in itertools.product([-1.0, 1.0], repeat=len(models)):
        v = np.array(signs)
        ts = np.sum(v * a) / np.sqrt(np.sum(v**2 * a**2))
        count += abs(ts) >= abs(t) * (1 - 1e-12)
        total += 1
    return float(t), count / total


def main() -> None:
    d = load()
    k, n, x, groups = d["k"], d["n"], d["x"], d["model"]
    G = len(np.unique(groups))  # noqa: N806 (G clusters, as in the G/(G-1) correction)
    out: dict[str, object] = {"source": "tests/reference/make_frequentist_reference.py", "G": G}
    for name, X in designs(d).items():  # noqa: N806 (the design matrix X)
        b = newton(X, k, n)
        cov, Hinv = sandwich(X, k, n, b, groups)  # noqa: N806 (H^-1)
        endog = np.column_stack([k, n - k])
        sm_fit = sm.GLM(endog, X, family=sm.families.Binomial()).fit(
            cov_type="cluster", cov_kwds={"groups": np.unique(groups, return_inverse=True)[1]}
        )
        se = float(np.sqrt(cov[2, 2]))
        tq = stats.t(G - 1)
        entry = {
            "slope": float(b[2]),
            "se_cluster_hand": se,
            "se_cluster_statsmodels": float(sm_fit.bse[2]),
            "se_naive": float(np.sqrt(Hinv[2, 2])),
            "p_cluster_t": float(2 * tq.sf(abs(b[2] / se))),
            "ci_cluster_t": [float(b[2] - tq.ppf(0.975) * se), float(b[2] + tq.ppf(0.975) * se)],
        }
        if name == "task_slopes":
            L = np.array([[0, 0, 1, 1], [0, 0, 1, -1]], dtype=float)  # noqa: N806 (the contrast matrix L)
            entry["task_slopes"] = (L @ b).tolist()
            entry["task_se_cluster"] = np.sqrt(np.diag(L @ cov @ L.T)).tolist()
        entry["wild_score_t"], entry["wild_p_exact"] = wild_exact_p(X, k, n, groups, 2)
        out[name] = entry

    # two-stage: model mean empirical logit over both tasks
    y = np.log((k + 0.5) / (n - k + 0.5))
    v = 1 / (k + 0.5) + 1 / (n - k + 0.5)
    models = sorted(set(groups))
    ym = np.array([y[groups == m].mean() for m in models])
    vm = np.array([v[groups == m].sum() / 4 for m in models])
    xm = np.array([x[groups == m][0] for m in models])
    Xm = np.column_stack([np.ones(G), xm])  # noqa: N806 (the model-level design matrix)
    w = 1 / vm
    bw = np.linalg.solve(Xm.T @ (Xm * w[:, None]), Xm.T @ (w * ym))
    qe = np.sum(w * (ym - Xm @ bw) ** 2)
    W = np.diag(w)  # noqa: N806 (the weight matrix W)
    P = W - W @ Xm @ np.linalg.inv(Xm.T @ W @ Xm) @ Xm.T @ W  # noqa: N806 (the projection P of the DerSimonian-Laird estimator)
    tau2 = max(0.0, (qe - (G - 2)) / np.trace(P))
    ws = 1 / (vm + tau2)
    bs = np.linalg.solve(Xm.T @ (Xm * ws[:, None]), Xm.T @ (ws * ym))
    s2 = np.sum(ws * (ym - Xm @ bs) ** 2) / (G - 2)
    se_kh = np.sqrt(s2 * np.linalg.inv(Xm.T @ (Xm * ws[:, None]))[1, 1])
    out["two_stage"] = {"tau2_dl": float(tau2), "slope": float(bs[1]), "se_kh": float(se_kh),
                        "q_e": float(qe)}

    # exact permutation p-value of the OLS slope of ym on xm
    b_obs = np.polyfit(xm, ym, 1)[0]
    hits = 0
    perms = list(itertools.permutations(range(G)))
    for perm in perms:
        hits += abs(np.polyfit(xm[list(perm)], ym, 1)[0]) >= abs(b_obs) * (1 - 1e-12)
    out["permutation"] = {"slope": float(b_obs), "p_exact": hits / len(perms), "n": len(perms)}

    # correlations of pooled accuracy with x
    acc = np.array([k[groups == m].sum() / n[groups == m].sum() for m in models])
    r = np.corrcoef(xm, acc)[0, 1]
    rho = np.corrcoef(stats.rankdata(xm), stats.rankdata(acc))[0, 1]
    out["correlations"] = {"pearson_r": float(r), "spearman_rho": float(rho)}

    # Holm on a fixed vector of p-values
    pv = [0.01, 0.04, 0.03, 0.2, 0.001]
    out["holm"] = {"p": pv, "adjusted": multipletests(pv, method="holm")[1].tolist()}
    OUT.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
