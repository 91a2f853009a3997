"""Study design and power (selfmodel.power): design files, the fast fit, the sweep, the MDE.

Reference numbers and their sources:

* NUTS posterior of ``beta`` on ``data_raw/`` (mean 0.198, sd 0.068, 94% HDI [0.069, 0.326];
  sigma_family 0.113, sigma_model 0.106, sigma_cell 0.197): ``selfmodel run --out DIR`` at the
  default seed 20261130 (4 chains x 2000 draws, nutpie), read from ``DIR/fits/*.nc`` with
  ``az.summary``.
* The fast fit against NUTS at four design points: ``validation/power_validation.py``, whose output
  is ``validation/results/power_validation.json``.
* The brute-force check simulates every answer (items x repeats, beta-binomial model-item
  propensities with intra-class correlation rho) and fits the resulting cells; the power
  module's effective-n shortcut (Kish 1965, *Survey Sampling*, sec. 5.4) must reproduce it.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy.special import expit, logit
from scipy.stats import multivariate_normal

from selfmodel import power as pw
from selfmodel.decisions.hypotheses import DecisionRule
from selfmodel.power import after_fit
from selfmodel.records.contract import InputError

ROOT = Path(__file__).resolve().parents[2]
DATA_RAW = ROOT / "data_raw"


def _design(families, sizes, tasks, **kw) -> pw.Design:
    models = tuple((f"{f}-{s}", f, float(np.log10(s))) for f in families for s in sizes)
    return pw.Design(models=models, tasks=tuple(tasks), **kw)


# --------------------------------------------------------------------------- design files


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "design.toml"
    p.write_text(text, encoding="utf-8")
    return p


def _error(path: Path) -> str:
    with pytest.raises(InputError) as info:
        pw.load_design(path)
    msg = str(info.value)
    assert "\n" not in msg
    assert msg.startswith(str(path))
    return msg


def test_example_design_loads(tmp_path: Path) -> None:
    d = pw.load_design(_write(tmp_path, pw.DESIGN_EXAMPLE))
    assert [m[1] for m in d.models] == ["aurora"] * 4 + ["borealis"] * 3
    assert d.models[0][2] == pytest.approx(0.0) and d.models[3][2] == pytest.approx(math.log10(70))
    # refusal: base 0.8, d' 1, c -0.5 -> 0.8 Phi(1) + 0.2 Phi(0) = 0.7731 (normal table)
    assert d.tasks[0].accuracy == pytest.approx(0.8 * 0.841345 + 0.2 * 0.5, abs=1e-5)
    assert d.sigma_cell == 0.2 and d.rule.rope == 0.1


def test_typo_gets_did_you_mean_with_line(tmp_path: Path) -> None:
    text = pw.DESIGN_EXAMPLE.replace("items = 250", "itmes = 250")
    msg = _error(_write(tmp_path, text))
    line = next(i for i, s in enumerate(text.splitlines(), 1) if s.startswith("itmes"))
    assert f"line {line}" in msg
    assert "'tasks.refusal.itmes'" in msg and "Did you mean 'items'?" in msg


def test_top_level_typo(tmp_path: Path) -> None:
    msg = _error(_write(tmp_path, pw.DESIGN_EXAMPLE.replace("repeats = 1", "repeat = 1")))
    assert "Did you mean 'repeats'?" in msg and "line 2" in msg


@pytest.mark.parametrize(
    ("old", "new", "expect"),
    [
        ("sigma_cell = 0.2", "sigma_cell = -0.2", "sigma_cell"),
        ("sigma_cell = 0.2", 'sigma_cell = "big"', "not a number"),
        ("items = 250", "items = 2.5", "not an integer"),
        ("aurora = [1, 8, 34, 70]", "aurora = [1, -8]", "not a positive number"),
        ("# accuracy = 0.77", "accuracy = 0.77", "either accuracy"),
        ("rope = 0.1", "rope = 0.1\nhdi_porb = 0.9", "Did you mean 'hdi_prob'?"),
        ("[families]", "[familes]", "Did you mean 'families'?"),
        ("repeats = 1", "repeats = [", "not valid TOML"),
    ],
)
def test_bad_design_values(tmp_path: Path, old: str, new: str, expect: str) -> None:
    assert old in pw.DESIGN_EXAMPLE
    msg = _error(_write(tmp_path, pw.DESIGN_EXAMPLE.replace(old, new)))
    assert expect in msg


def test_missing_design_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such design file"):
        pw.load_design(tmp_path / "nope.toml")


def test_design_from_template_matches_data_raw() -> None:
    d = pw.design_from_template([DATA_RAW / "records.csv"], DATA_RAW / "registry.csv")
    assert len(d.models) == 14 and len(d.families) == 4  # closed models carry no size
    # derived checkpoints carry a size but stay off the scale axis, named in the source
    reg = pl.read_csv(DATA_RAW / "registry.csv")
    unsized = sorted(reg.filter(pl.col("params_b").is_null())["model"].to_list())
    derived = sorted(reg.filter(pl.col("base_model").is_not_null())["model"].to_list())
    assert unsized and derived and not {m for m, *_ in d.models} & set(derived)
    assert d.source.endswith(
        f"; left off the scale axis: without the scale variable: {', '.join(unsized)};"
        f" derived checkpoints (registry base_model): {', '.join(derived)}"
    )
    assert {t.name: t.items for t in d.tasks} == {
        "difficulty": 250,
        "refusal": 250,
        "word_association": 300,
    }
    assert d.repeats == 1
    # pooled accuracies lie near the default design's signal-detection accuracies
    acc = {t.name: t.accuracy for t in d.tasks}
    assert acc["word_association"] == pytest.approx(0.41, abs=0.05)
    assert acc["refusal"] == pytest.approx(0.75, abs=0.05)


def test_design_from_template_reads_fitted_components(tmp_path: Path) -> None:
    res = {
        "variance_components": {
            "sigma_family": {"mean": 0.3},
            "sigma_model": {"mean": 0.05},
            "sigma_cell": {"mean": 0.25},
            "sigma_delta": {"mean": 0.02},
        }
    }
    d = pw.design_from_template([DATA_RAW / "records.csv"], DATA_RAW / "registry.csv", results=res)
    assert (d.sigma_family, d.sigma_model, d.sigma_cell, d.sigma_task_slope) == (
        0.3,
        0.05,
        0.25,
        0.02,
    )


def test_effective_n_is_kish() -> None:
    t = pw.Task("t", items=40, accuracy=0.7, unreadable=0.1)
    d = _design("ab", (1, 10), [t], repeats=5, repeat_correlation=0.5)
    # 40 items x 5 repeats x 0.9 readable / (1 + 4 x 0.5)
    assert d.n_eff(t) == round(40 * 5 * 0.9 / 3.0)
    assert replace(d, repeat_correlation=1.0).n_eff(t) == 36  # repeats of a deterministic model
    assert replace(d, repeats=1).n_eff(t) == 36


def test_simulated_cells_have_kish_variance() -> None:
    """Var(k/n) of a simulated cell = a(1-a)(1 + (R-1) rho)/(I R) (Kish 1965, sec. 5.4)."""
    d = _design(
        "ab",
        (1, 10),
        [pw.Task("t", 40, 0.7)],
        repeats=5,
        repeat_correlation=0.5,
        sigma_family=0.0,
        sigma_model=0.0,
        sigma_cell=0.0,
        sigma_task_slope=0.0,
    )
    layout = pw.CellLayout.from_design(d)
    share = np.concatenate(
        [
            pw.simulate_k(layout, d, 0.0, pw.base_draws(1, s, layout, 0)) / layout.n
            for s in range(2000)
        ]
    )
    assert share.mean() == pytest.approx(0.7, abs=0.003)
    kish = 0.7 * 0.3 * (1 + 4 * 0.5) / 200
    assert share.var(ddof=1) == pytest.approx(kish, rel=0.06)  # 8000 cells: se of a variance ~1.6%
    assert share.var(ddof=1) > 2 * 0.7 * 0.3 / 200  # far from the binomial variance


# --------------------------------------------------------------------------- the fast fit


def test_batched_cholesky_matches_numpy() -> None:
    rng = np.random.default_rng(0)
    A = rng.normal(size=(50, 6, 6))  # noqa: N806 (a random matrix A)
    H = A @ A.transpose(0, 2, 1) + 6 * np.eye(6)  # noqa: N806 (an SPD matrix H = A A' + 6 I)
    L = pw.batched_cholesky(np.ascontiguousarray(H.transpose(1, 2, 0)))  # noqa: N806 (its Cholesky factor L)
    dense = np.zeros_like(H)
    for i in range(6):
        for j in range(i + 1):
            dense[:, i, j] = L[i][j]
    np.testing.assert_allclose(dense, np.linalg.cholesky(H), rtol=1e-10, atol=1e-12)
    b = rng.normal(size=(50, 6))
    v = np.stack(pw.forward_solve(L, b), axis=1)
    np.testing.assert_allclose(np.einsum("gij,gj->gi", dense, v), b, atol=1e-10)


def test_grid_posterior_matches_dense_linear_algebra() -> None:
    """The nested Sherman-Morrison computation equals the textbook dense formulas.

    Reference: y ~ N(0, V + X Lam0^-1 X') with V = diag(sigma_c^2 + s^2) + sigma_m^2 Zm Zm' +
    sigma_f^2 Zf Zf' (scipy multivariate normal), and beta | y, theta normal with precision
    X' V^-1 X + Lam0 (Gelman et al. 2013, BDA3, sec. 14.2).
    """
    design = _design("abc", (1, 8, 60), [pw.Task("t1", 80, 0.6), pw.Task("t2", 120, 0.8)])
    cells = pw.simulate_cells(design, 0.3, seed=4)
    layout, k = pw.CellLayout.from_cells(cells)
    grid = pw.PosteriorGrid.make(
        2, {"sigma_cell": 3, "sigma_model": 3, "sigma_family": 2, "sigma_delta": 2}
    )
    y, s2 = pw.empirical_logit(k, layout.n)
    wts, mu, var = pw.grid_posterior(layout, grid, y, s2)
    Zm = np.eye(len(layout.models))[layout.cell_model]  # noqa: N806 (the model indicator matrix Z_m of docs/power.md)
    Zf = np.eye(len(layout.families))[layout.model_family[layout.cell_model]]  # noqa: N806 (the family indicator matrix Z_f of docs/power.md)
    X = layout.X  # noqa: N806 (the design matrix X)
    logml = []
    idx = 0
    for sc in grid.sigma_cell:
        for sm in grid.sigma_model:
            for sf in grid.sigma_family:
                for q in range(len(grid.sigma_delta)):
                    V = np.diag(sc**2 + s2) + sm**2 * Zm @ Zm.T + sf**2 * Zf @ Zf.T  # noqa: N806 (the covariance V of docs/power.md)
                    lam = grid.lam0[q]
                    marg = V + X @ np.linalg.inv(lam) @ X.T
                    logml.append(multivariate_normal(np.zeros(len(y)), marg).logpdf(y))
                    Vi = np.linalg.inv(V)  # noqa: N806 (V^-1)
                    prec = X.T @ Vi @ X + lam
                    cov = np.linalg.inv(prec)
                    mean = cov @ X.T @ Vi @ y
                    assert mu[idx] == pytest.approx(grid.c @ mean, rel=1e-8)
                    assert var[idx] == pytest.approx(grid.c @ cov @ grid.c, rel=1e-8)
                    idx += 1
    ref = np.exp(np.array(logml) - max(logml))
    np.testing.assert_allclose(wts, ref / ref.sum(), rtol=1e-7)


def test_laplace_step_pieces_match_dense_algebra() -> None:
    """V^-1 R and the cells' posterior mean logits equal their dense versions (BDA3 sec. 14.2)."""
    design = _design("abc", (1, 8, 60), [pw.Task("t1", 80, 0.6), pw.Task("t2", 120, 0.8)])
    layout, k = pw.CellLayout.from_cells(pw.simulate_cells(design, 0.3, seed=4))
    y, s2 = pw.empirical_logit(k, layout.n)
    Zm = np.eye(len(layout.models))[layout.cell_model]  # noqa: N806 (the model indicator matrix Z_m of docs/power.md)
    Zf = np.eye(len(layout.families))[layout.model_family[layout.cell_model]]  # noqa: N806 (the family indicator matrix Z_f of docs/power.md)
    theta = (0.2, 0.15, 0.3)
    V = np.diag(theta[0] ** 2 + s2) + theta[1] ** 2 * Zm @ Zm.T + theta[2] ** 2 * Zf @ Zf.T  # noqa: N806 (the covariance V of docs/power.md)
    R = np.random.default_rng(0).normal(size=(len(y), 3))  # noqa: N806 (the right-hand side R of V^-1 R)
    np.testing.assert_allclose(pw.vinv(layout, theta, s2, R), np.linalg.solve(V, R), atol=1e-10)
    grid = pw.PosteriorGrid.make(
        2, {"sigma_cell": 3, "sigma_model": 3, "sigma_family": 2, "sigma_delta": 2}
    )
    # independent task slopes: one (fixed) prior for the slopes, no spread to grid over
    shape = (3, 3, 2, len(grid.sigma_delta))
    assert shape[3] == 1
    mode = int(np.ravel_multi_index((0, 1, 1, 0), shape))
    wts = np.zeros(int(np.prod(shape)))
    wts[mode] = 1.0  # the mode: index (0, 1, 1, 0) in (cell, model, family, delta) order
    ic, im, jf, jd = np.unravel_index(mode, shape)
    theta = (grid.sigma_cell[ic], grid.sigma_model[im], grid.sigma_family[jf])
    V = np.diag(theta[0] ** 2 + s2) + theta[1] ** 2 * Zm @ Zm.T + theta[2] ** 2 * Zf @ Zf.T  # noqa: N806 (the covariance V of docs/power.md)
    Vi = np.linalg.inv(V)  # noqa: N806 (V^-1)
    X = layout.X  # noqa: N806 (the design matrix X)
    b = np.linalg.solve(X.T @ Vi @ X + grid.lam0[jd], X.T @ Vi @ y)
    # E[eta | y] = y - S V^-1 (y - X b) with S = diag(s2)
    np.testing.assert_allclose(
        pw.cell_logits(layout, grid, wts, y, s2), y - s2 * (Vi @ (y - X @ b)), atol=1e-10
    )


def test_laplace_step_removes_small_cell_bias() -> None:
    """With ~33 answers per cell, inverse-variance weights from each cell's own counts pull
    the slope toward 0 (first pass); the Laplace step leaves only the prior's shrinkage. Each
    of the 3 task slopes has its own N(0, 1) prior and a posterior sd of about
    0.165 sqrt(3) = 0.29, so each is shrunk by ~ v / (1 + v) with v = 0.29^2: the average
    slope by ~ -0.034 (measured here: -0.039)."""
    small = replace(POINT_B, repeats=1, tasks=tuple(replace(t, items=37) for t in POINT_B.tasks))
    layout = pw.CellLayout.from_design(small)
    assert set(layout.n) == {33}
    grid = pw.PosteriorGrid.make(3)
    first, second = [], []
    for s in range(60):
        k = pw.simulate_k(layout, small, 0.45, pw.base_draws(5, s, layout, 0))
        w, mu, _ = pw.grid_posterior(layout, grid, *pw.empirical_logit(k, layout.n))
        first.append(w @ mu)
        w, mu, _, _ = pw.posterior_of(layout, grid, k)
        second.append(w @ mu)
    v = (0.165 * np.sqrt(3)) ** 2
    expected = 0.45 * (1 - v / (1 + v))
    assert np.mean(first) - 0.45 < -0.035
    assert np.mean(first) < np.mean(second)
    assert abs(np.mean(second) - expected) < 0.015


@pytest.fixture(scope="module")
def data_raw_cells() -> pl.DataFrame:
    from selfmodel.records.cells import build_cells
    from selfmodel.records.ingest import ingest
    from selfmodel.records.registry import load_registry

    res = ingest([DATA_RAW / "records.csv"])
    cells = build_cells(res.records, load_registry(DATA_RAW / "registry.csv"))
    return cells.filter(pl.col("x").is_not_null() & (pl.col("n") > 0))


def test_fast_fit_agrees_with_nuts_on_default_data(data_raw_cells: pl.DataFrame) -> None:
    """NUTS numbers: ``selfmodel run`` on data_raw/ (see the module docstring)."""
    r = pw.fast_fit(data_raw_cells, seed=1)
    assert r["mean"] == pytest.approx(0.198, abs=0.01)
    assert r["sd"] == pytest.approx(0.068, rel=0.08)
    assert r["hdi_low"] == pytest.approx(0.069, abs=0.02)
    assert r["hdi_high"] == pytest.approx(0.326, abs=0.02)
    # P(slope > 0) > 0.95 but the HDI overlaps the ROPE [-0.1, 0.1]: sign credible, size not
    assert r["decision"] == "credibly_positive"
    sig = r["sigma_posterior_mean"]
    assert sig["sigma_cell"] == pytest.approx(0.197, abs=0.02)
    assert sig["sigma_model"] == pytest.approx(0.106, abs=0.02)
    assert sig["sigma_family"] == pytest.approx(0.113, abs=0.03)


def test_fast_fit_grid_is_fine_enough(data_raw_cells: pl.DataFrame) -> None:
    fine = {"sigma_cell": 40, "sigma_model": 30, "sigma_family": 30, "sigma_delta": 8}
    a = pw.fast_fit(data_raw_cells, seed=1)
    b = pw.fast_fit(data_raw_cells, seed=1, grid=fine)
    assert a["mean"] == pytest.approx(b["mean"], abs=0.003)
    assert a["sd"] == pytest.approx(b["sd"], rel=0.03)


def test_validation_results_committed_and_good() -> None:
    """validation/results/power_validation.json (validation/power_validation.py): fast vs NUTS."""
    path = ROOT / "validation" / "results" / "power_validation.json"
    v = json.loads(path.read_text())
    # made before the script moved from bench/ to validation/ (same script)
    assert v["generated_by"] in ("bench/power_validation.py", "validation/power_validation.py")
    assert len(v["points"]) >= 3 and v["overall"]["sims"] >= 60
    assert v["overall"]["decision_agreement"] >= 0.85
    for p in v["points"]:
        s = p["summary"]
        assert abs(s["mean_diff_in_nuts_sd"]["mean"]) < 0.25, p["name"]
        assert 0.85 < s["sd_ratio_fast_over_nuts"]["mean"] < 1.15, p["name"]


# --------------------------------------------------------------------------- the sweep


def test_run_power_contract_and_reproducibility() -> None:
    d = _design("abc", (1, 10, 100), [pw.Task("t1", 100, 0.7)])
    calls = []
    a = pw.run_power(
        d, slopes=[0.6, 0.0], sims=12, seed=3, progress=lambda i, n: calls.append((i, n))
    )
    b = pw.run_power(d, slopes=[0.0, 0.6], sims=12, seed=3)
    assert a == b  # same seed, same answer; slope order does not matter
    assert calls[-1] == (24, 24)
    assert [r["slope"] for r in a["results"]] == [0.0, 0.6]
    for r in a["results"]:
        assert {"slope", "p_improves", "p_no_credible_effect", "p_practically_null", "sims"} <= set(
            r
        )
        assert sum(r[f"p_{o}"] for o in pw.OUTCOMES) == pytest.approx(1.0)
    assert "mde_80" in a and "design" in a
    c = pw.run_power(d, slopes=[0.0, 0.6], sims=12, seed=4)
    assert c["results"] != a["results"]


def test_common_random_numbers_give_monotone_power() -> None:
    p = pw.run_power(pw.default_design(), slopes=[0.1, 0.2, 0.25, 0.3, 0.35, 0.45], sims=60, seed=2)
    ps = [r["p_improves"] for r in p["results"]]
    assert ps == sorted(ps)
    assert ps[0] < 0.15 and ps[-1] > 0.9


def test_false_positive_rate_at_zero_is_small() -> None:
    """At slope 0 'improves' needs the HDI above +ROPE: rarer than the 3% HDI tail."""
    p = pw.run_power(pw.default_design(), slopes=[0.0], sims=150, seed=5)
    r = p["results"][0]
    assert r["p_improves"] + r["p_worsens"] <= 0.02
    assert 0.88 <= r["hdi_coverage"] <= 1.0


def test_mde_interpolation() -> None:
    rows = [
        {"slope": s, "p_improves": p} for s, p in [(0.0, 0.0), (0.2, 0.5), (0.4, 0.9), (0.6, 1.0)]
    ]
    assert pw.mde_of(rows) == (0.4, pytest.approx(0.2 + 0.2 * 0.3 / 0.4))
    assert pw.mde_of(rows[:2]) == (None, None)


def _brute_force(design: pw.Design, slope: float, sims: int, seed: int) -> dict:
    """Draw every answer: models x tasks x items x repeats, then fit the cells."""
    rng = np.random.default_rng(seed)
    fams = list(design.families)
    names = [m for m, *_ in design.models]
    fam_idx = np.array([fams.index(f) for _, f, _ in design.models])
    x = np.array([v for *_, v in design.models])
    x = x - x.mean()
    alpha = logit([t.accuracy for t in design.tasks])
    rho, n_repeats = design.repeat_correlation, design.repeats
    conc = 1.0 / rho - 1.0
    counts = dict.fromkeys(pw.OUTCOMES, 0)
    sds = []
    for s in range(sims):
        u = rng.normal(0, design.sigma_family, len(fams))
        v = rng.normal(0, design.sigma_model, len(names))
        delta = rng.normal(0, design.sigma_task_slope, len(alpha))
        delta -= delta.mean()
        rows = []
        for m in range(len(names)):
            for t, task in enumerate(design.tasks):
                eta = alpha[t] + (slope + delta[t]) * x[m] + u[fam_idx[m]] + v[m]
                p = expit(eta + rng.normal(0, design.sigma_cell))
                q = rng.beta(p * conc, (1 - p) * conc, size=task.items)  # model-item propensity
                correct = rng.random((task.items, n_repeats)) < q[:, None]
                readable = rng.random((task.items, n_repeats)) >= task.unreadable
                rows.append(
                    {
                        "model": names[m],
                        "family": fams[fam_idx[m]],
                        "task": task.name,
                        "x": x[m],
                        "n": int(readable.sum()),
                        "k": int((correct & readable).sum()),
                    }
                )
        r = pw.fast_fit(pl.DataFrame(rows), rule=design.rule, seed=s)
        counts[r["decision"]] += 1
        sds.append(r["sd"])
    return {"p": {o: c / sims for o, c in counts.items()}, "mean_sd": float(np.mean(sds))}


POINT_A = _design(
    "abcd",
    (2, 20, 200),
    [pw.Task("t1", 40, 0.65), pw.Task("t2", 40, 0.8)],
    repeats=5,
    repeat_correlation=0.5,
    sigma_family=0.1,
    sigma_model=0.1,
    sigma_cell=0.15,
    sigma_task_slope=0.05,
)
POINT_B = _design(
    "abc",
    (1, 70),
    [pw.Task("t1", 30, 0.55, 0.1), pw.Task("t2", 30, 0.7, 0.1), pw.Task("t3", 30, 0.85, 0.1)],
    repeats=10,
    repeat_correlation=0.8,
    sigma_family=0.1,
    sigma_model=0.1,
    sigma_cell=0.1,
    sigma_task_slope=0.05,
)


@pytest.mark.parametrize(("design", "slope"), [(POINT_A, 0.3), (POINT_B, 0.45)], ids=["A", "B"])
def test_power_matches_brute_force_simulation(design: pw.Design, slope: float) -> None:
    """Power from the effective-n shortcut equals power from simulating every answer.

    Tolerance: 3 binomial standard errors of a difference of two proportions (+0.01); the
    slope is chosen where power is mid-range, so the check is sharp. The mean posterior sd
    must agree within 6%; ignoring the repeat correlation (rho = 0) must not (negative control).
    """
    sims = 250
    brute = _brute_force(design, slope, sims, seed=11)
    fast = pw.run_power(design, slopes=[slope], sims=sims, seed=12)["results"][0]
    for o in ("improves", "no_credible_effect", "practically_null"):
        pb, pf = brute["p"][o], fast[f"p_{o}"]
        pbar = (pb + pf) / 2
        tol = 3 * math.sqrt(pbar * (1 - pbar) * 2 / sims) + 0.01
        assert abs(pb - pf) <= tol, (o, pb, pf, tol)
    assert 0.2 < fast["p_improves"] < 0.9  # mid-range: the comparison has teeth
    assert fast["mean_posterior_sd"] == pytest.approx(brute["mean_sd"], rel=0.06)
    naive = pw.run_power(replace(design, repeat_correlation=0.0), slopes=[slope], sims=60, seed=12)
    assert naive["results"][0]["mean_posterior_sd"] < 0.85 * brute["mean_sd"]


def test_more_models_beat_more_items() -> None:
    """With model-level variation present, items hit a floor and models do not."""
    mvi = pw.models_vs_items(
        pw.default_design(), slope=0.3, models_per_family=(2, 6), items=(250, 2500), sims=30, seed=1
    )
    sd = {(c["models_per_family"], c["items"]): c["mean_posterior_sd"] for c in mvi["cells"]}
    assert sd[(2, 2500)] > 0.85 * sd[(2, 250)]  # 10x the items: < 15% narrower
    assert sd[(6, 250)] < 0.75 * sd[(2, 250)]  # 3x the models: > 25% narrower


# --------------------------------------------------------------------------- after a fit


def _fake_results(cells: pl.DataFrame) -> dict:
    """``results.json`` as the pipeline writes it: ``in_scale_fit`` marks the models whose
    cells have an ``x`` (``cells``: the usable cells of the scale fit), so unsized models and
    derived checkpoints (a size, but a registry ``base_model``) are not in it."""
    reg = pl.read_csv(DATA_RAW / "registry.csv")
    in_fit = set(cells["model"].to_list())
    models = [
        {
            "model": r["model"],
            "family": r["family"],
            "params_b": r["params_b"],
            "in_scale_fit": r["model"] in in_fit,
        }
        for r in reg.iter_rows(named=True)
    ]
    bmt = [
        {"model": r["model"], "task": r["task"], "n": r["n"], "accuracy": r["k"] / r["n"]}
        for r in cells.iter_rows(named=True)
    ]
    vc = {
        "sigma_family": {"mean": 0.113},
        "sigma_model": {"mean": 0.106},
        "sigma_cell": {"mean": 0.197},
        "sigma_delta": {"mean": 0.197},
    }
    derived = sorted(reg.filter(pl.col("base_model").is_not_null())["model"].to_list())
    return {
        "models": models,
        "scale_effect": {"excluded_derived_checkpoints": {"models": derived, "reason": "..."}},
        "by_model_task": bmt,
        "variance_components": vc,
        "settings": {"scale": "params", "seed": 7, "rule": DecisionRule().as_dict()},
    }


def test_mde_from_fit(data_raw_cells: pl.DataFrame) -> None:
    res = _fake_results(data_raw_cells)
    d = pw.design_from_results(res)
    reg = pl.read_csv(DATA_RAW / "registry.csv")
    derived = set(reg.filter(pl.col("base_model").is_not_null())["model"].to_list())
    sized = reg.filter(pl.col("params_b").is_not_null())["model"].to_list()
    assert derived and derived < set(sized)  # sized, yet off the scale axis
    assert {m for m, *_ in d.models} == set(sized) - derived
    assert d.sigma_cell == 0.197 and d.repeats == 1
    # the models left off are named in the design's source, each with its reason
    off = d.source.split("left off the scale axis: ")[1]
    unsized = set(reg["model"].to_list()) - set(sized)
    assert off.split("; derived checkpoints (registry base_model): ") == [
        "without the scale variable: " + ", ".join(sorted(unsized)), ", ".join(sorted(derived))
    ]
    out = pw.mde_from_fit(res, sims=60)
    # normal theory: rope + (z_0.97 + z_0.8) * sd with sd ~ the posterior sd on data_raw (0.068)
    assert out["expected_posterior_sd"] == pytest.approx(0.07, abs=0.015)
    assert out["mde_80"] == pytest.approx(out["mde_80_normal_theory"], abs=0.05)
    assert 0.2 < out["mde_80"] < 0.4
    assert out["p_practically_null_at_zero"] <= 0.05  # HDI half-width ~0.13 > ROPE 0.1
    assert out["sd_needed_for_practically_null"] == pytest.approx(0.1 / 1.880794, rel=1e-4)
    # plug-in sds: below the simulated one (no variance-component uncertainty); unlimited
    # items remove only the binomial part, which is small next to model-level variation
    assert out["plugin_sd_unlimited_items"] < out["plugin_sd"] < out["expected_posterior_sd"]
    assert out["plugin_sd_unlimited_items"] > 0.8 * out["plugin_sd"]
    with pytest.raises(KeyError, match="variance_components"):
        pw.mde_from_fit({**res, "variance_components": None})


def test_mde_from_fit_is_saved_and_reused(
    data_raw_cells: pl.DataFrame, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ``cache_dir`` the simulation runs once per distinct input; a damaged file reruns."""
    res = _fake_results(data_raw_cells)
    sweeps = []
    real = pw.sweep_of
    monkeypatch.setattr(after_fit, "sweep_of", lambda *a, **k: sweeps.append(1) or real(*a, **k))
    first = pw.mde_from_fit(res, sims=3, cache_dir=tmp_path)
    n = len(sweeps)
    assert n > 0
    assert pw.mde_from_fit(res, sims=3, cache_dir=tmp_path) == first
    assert len(sweeps) == n
    assert json.dumps(pw.mde_from_fit(res, sims=3)) == json.dumps(first)  # same as uncached
    pw.mde_from_fit(res, sims=3, seed=8, cache_dir=tmp_path)
    assert len(sweeps) == 3 * n
    changed = {**res, "variance_components": {**res["variance_components"],
                                              "sigma_cell": {"mean": 0.3}}}
    pw.mde_from_fit(changed, sims=3, cache_dir=tmp_path)
    assert len(sweeps) == 4 * n
    for f in tmp_path.glob("mde_from_fit-*.json"):
        f.write_text("{")
    assert pw.mde_from_fit(res, sims=3, cache_dir=tmp_path) == first
    assert len(sweeps) == 5 * n


def test_write_power(tmp_path: Path) -> None:
    d = pw.default_design()
    p = pw.run_power(d, slopes=[0.0, 0.3], sims=6, seed=1)
    p["models_vs_items"] = pw.models_vs_items(
        d, slope=0.3, models_per_family=(2, 3), items=(50, 200), sims=4, seed=1
    )
    paths = pw.write_power(p, tmp_path, design=d)
    saved = json.loads(paths["json"].read_text())
    assert set(saved) >= {"design", "results", "mde_80"}
    assert paths["plot"].stat().st_size > 10_000
    assert pw.load_design(paths["design"]).tasks == d.tasks
    assert pw.summary_lines(p)


@pytest.mark.slow
def test_fast_fit_matches_nuts_on_fresh_data() -> None:
    """Re-derive two rows of validation/results/power_validation.json (its small design point).

    Each data set is fitted by the pipeline's own ``selfmodel.fitting.sampling.fit`` (nutpie, 4 chains x
    1000 draws) and by ``fast_fit``; tolerances are those the bench reports as typical
    (mean within 0.3 posterior sd, sd within 20%, same decision).
    """
    from selfmodel.decisions.hypotheses import decide
    from selfmodel.fitting.sampling import SamplerSettings, fit

    design = _design(
        "abc",
        (3, 30),
        [pw.Task("t1", 100, 0.6), pw.Task("t2", 100, 0.75)],
        sigma_family=0.15,
        sigma_model=0.15,
        sigma_cell=0.2,
        sigma_task_slope=0.1,
    )
    for sim in range(2):
        cells = pw.simulate_cells(design, 0.5, seed=20261130, sim=sim)
        f = fit("scale", cells, seed=1, settings=SamplerSettings(draws=1000))
        nuts = decide(f.idata.posterior["beta"].values, design.rule, n_models=6)
        fast = pw.fast_fit(cells, rule=design.rule, seed=1)
        assert abs(fast["mean"] - nuts["mean"]) < 0.3 * nuts["sd"]
        assert fast["sd"] == pytest.approx(nuts["sd"], rel=0.2)
        assert fast["decision"] == nuts["decision"]
