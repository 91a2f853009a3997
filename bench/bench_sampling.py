"""Sampler benchmarks, side by side in one run: time after compilation, ESS/s, divergences.

    .venv/bin/python bench/bench_sampling.py           # all comparisons (15-30 min, shared 2 cores)
    .venv/bin/python bench/bench_sampling.py --quick   # one small nutpie fit (smoke test)

Cases (data from ``selfmodel.records.simulate.simulate_scale_cells``; 4 chains x 1000 draws after
1000 tuning steps, ``target_accept=0.95`` as the pipeline uses; nutpie on 2 cores):

* ``scale`` on 50 models x 10 tasks (10 families x 5 sizes), nutpie -- the target case;
* ``sdt`` (``models/sdt.py``) on the same design, hits/false alarms drawn from an
  equal-variance signal-detection version of the same generative model;
* ``scale`` in the decorrelated slope basis (the default of ``models/scale.py``), with
  non-centred (``scale``) or centred (``group_centred``) family and model intercepts, and
  the same in the plain basis (``plain``, ``plain_group_centred``); ``sdt_plain`` likewise;
* ``scale`` with a **centred** parameterisation (written here; ``models/scale.py`` is
  non-centred) on the same data;
* ``scale`` with PyMC's default NUTS sampler (``pm.sample``) on the same data;
* aggregated **binomial** (``models/scale.py``) vs per-record **Bernoulli** likelihood of the
  same model on a small design (16 models x 3 tasks x 100 records = 4,800 records): the
  posteriors of ``beta`` must agree within Monte Carlo error;
* numpyro: reported as absent unless ``import numpyro`` works in this interpreter.

For every case: compile seconds, sampling wall and CPU seconds (after compilation),
divergences, max R-hat, bulk ESS of the slope ``beta`` (``beta_dprime`` for sdt) and of
the slowest parameter, ESS per wall second. Results: ``bench/results/sampling.json``/``.md``.

``--gradient`` instead times one log density + gradient evaluation (PyTensor's numba
backend, ``trust_input``; the cost of a trivial function of the same inputs is subtracted)
of ``scale`` and ``sdt`` on the default data (``data_raw/``), with sdt's probit log-odds as
written (a ``switch`` of two stable branches), as a branch-free
``sign(z) (log erfc(-|z|/sqrt 2) - log erfcx(|z|/sqrt 2) + z^2/2)``, and replaced by a plain
logit (a different model: only to price the link): ``bench/results/sampling_gradient.json``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import polars as pl  # noqa: E402

from bench._util import Timer, machine, md_table, quiet_warnings, write_results  # noqa: E402

DRAWS, TUNE, CHAINS, CORES, TARGET = 1000, 1000, 4, 2, 0.95


def scale_cells(seed: int, families: int, sizes: int, tasks: int, n: int) -> pl.DataFrame:
    from selfmodel.records.simulate import simulate_scale_cells

    cells, _ = simulate_scale_cells(
        seed=seed, n_families=families, sizes_per_family=sizes, n_tasks=tasks, n_per_cell=n
    )
    return cells


def sdt_cells(cells: pl.DataFrame, seed: int) -> pl.DataFrame:
    """Signal-detection counts on the design of ``cells``: d' follows the scale model's eta."""
    from scipy.special import logit
    from scipy.stats import norm

    rng = np.random.default_rng(seed)
    n = cells["n"].to_numpy()
    acc = np.clip(cells["k"].to_numpy() / n, 0.02, 0.98)
    dprime = 2 * norm.ppf(acc)  # unbiased observer with this accuracy
    crit = rng.normal(-0.3, 0.2, len(n))
    n_signal = rng.binomial(n, 0.5)
    n_noise = n - n_signal
    hits = rng.binomial(n_signal, norm.cdf(dprime / 2 - crit))
    fas = rng.binomial(n_noise, norm.cdf(-dprime / 2 - crit))
    del logit
    return cells.with_columns(
        pl.Series("n_signal", n_signal), pl.Series("n_noise", n_noise),
        pl.Series("hits", hits), pl.Series("false_alarms", fas),
    )


def build_variant(data: pl.DataFrame, *, centred: bool = False, bernoulli: bool = False,
                  orthogonal: bool = False) -> Any:
    """``models/scale.py`` rewritten with a centred parameterisation, a Bernoulli likelihood
    over records (one row per record, expanded from the cells), or model intercepts made
    orthogonal to the scale predictor (``orthogonal``: ``v`` loses its component along ``x``,
    so ``beta`` carries the whole linear trend in ``x`` instead of sharing it with ``v``)."""
    import pymc as pm

    from selfmodel.models.graph import factorize
    from selfmodel.models.scale import DEFAULT_PRIORS as P

    def prior(name: str, **kw: Any) -> Any:
        dist, params = P[name]
        return getattr(pm, dist)(name, **params, **kw)

    task_idx, tasks = factorize(data["task"])
    model_idx, models = factorize(data["model"])
    fam_idx, families = factorize(data["family"])
    x = data["x"].to_numpy()
    n = data["n"].to_numpy()
    k = data["k"].to_numpy()
    coords = {"task": tasks, "family": families, "model": models, "cell": np.arange(len(n))}
    with pm.Model(coords=coords) as model:
        alpha = prior("alpha", dims="task")
        beta = prior("beta")
        sd_d, sd_f, sd_m, sd_c = (prior(s) for s in ("sigma_delta", "sigma_family",
                                                      "sigma_model", "sigma_cell"))
        if centred:
            delta = pm.ZeroSumNormal("delta", sigma=sd_d, dims="task")
            u = pm.ZeroSumNormal("u_family", sigma=sd_f, dims="family")
            v = pm.ZeroSumNormal("v_model", sigma=sd_m, dims="model")
            w = pm.Normal("w_cell", 0.0, sd_c, dims="cell")
        else:
            delta = pm.Deterministic("delta", sd_d * pm.ZeroSumNormal("z_delta", dims="task"))
            u = pm.Deterministic("u_family", sd_f * pm.ZeroSumNormal("z_u", dims="family"))
            z_v = pm.ZeroSumNormal("z_v", dims="model")
            if orthogonal:
                xm = np.zeros(len(models))
                xm[model_idx] = x
                z_v = z_v - xm * ((xm @ z_v) / (xm @ xm))
            v = pm.Deterministic("v_model", sd_m * z_v)
            w = sd_c * pm.Normal("z_cell", 0.0, 1.0, dims="cell")
        eta = (alpha[task_idx] + (beta + delta[task_idx]) * x + u[fam_idx] + v[model_idx] + w)
        if bernoulli:
            cell_of = np.repeat(np.arange(len(n)), n)
            y = np.concatenate([np.r_[np.ones(kk), np.zeros(nn - kk)] for nn, kk in zip(n, k,
                                                                                       strict=True)])
            pm.Bernoulli("y", logit_p=eta[cell_of], observed=y.astype("int64"))
        else:
            pm.Binomial("k", n=n, logit_p=eta, observed=k)
    return model


def scale_shift(data: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The slope's trade-off direction on the family and model intercepts of ``data``."""
    from selfmodel.models.decorrelation import model_level, shift_direction
    from selfmodel.models.graph import factorize

    model_idx, models_ = factorize(data["model"])
    fam_idx, _ = factorize(data["family"])
    return shift_direction(*model_level(model_idx, data["x"].to_numpy(), fam_idx, len(models_)))


def measure(label: str, pm_model: Any, effect: str, *, sampler: str = "nutpie",
            draws: int = DRAWS, tune: int = TUNE, seed: int = 1,
            shift: tuple[np.ndarray, np.ndarray] | None = None) -> dict[str, Any]:
    import arviz as az

    from selfmodel.fitting.sampling import diagnose

    row: dict[str, Any] = {"case": label, "sampler": sampler, "draws": draws, "tune": tune,
                           "chains": CHAINS}
    import resource

    def cpu_all() -> float:  # this process (all threads) + finished children (PyMC workers)
        ch = resource.getrusage(resource.RUSAGE_CHILDREN)
        return time.process_time() + ch.ru_utime + ch.ru_stime

    c0 = None
    if sampler == "nutpie":
        import nutpie

        from selfmodel.fitting.compile_cache import compiled_model

        with Timer() as tc:
            compiled = compiled_model(pm_model)
        with Timer() as ts:
            idata = nutpie.sample(compiled, draws=draws, tune=tune, chains=CHAINS, cores=CORES,
                                  seed=seed, target_accept=TARGET, progress_bar=False)
    else:
        import pymc as pm

        with Timer() as tc:
            pass  # pm.sample compiles inside; its compile time is part of sampling below
        c0 = cpu_all()
        with Timer() as ts, pm_model:
            idata = pm.sample(draws=draws, tune=tune, chains=CHAINS, cores=CORES,
                              random_seed=seed, target_accept=TARGET, progressbar=False,
                              compute_convergence_checks=False, nuts_sampler="pymc")
    if c0 is not None:
        ts.cpu = cpu_all() - c0
    diag = diagnose(idata)
    ess = float(az.ess(idata, var_names=[effect], method="bulk")[effect].values.min())
    mcse = float(az.mcse(idata, var_names=[effect])[effect].values.max())
    post = idata.posterior[effect]
    ess_all = az.ess(idata, method="bulk")
    judged = [str(v) for v in ess_all.data_vars if not str(v).startswith("z_")]
    row["slowest"] = min(judged, key=lambda v: float(ess_all[v].min()))
    if shift is not None:  # posterior correlation of the slope with the intercepts' shift
        d_u, d_v = shift
        along = (idata.posterior["u_family"].values.reshape(-1, d_u.size) @ d_u
                 + idata.posterior["v_model"].values.reshape(-1, d_v.size) @ d_v)
        row["corr_effect_shift"] = round(float(np.corrcoef(post.values.ravel(), along)[0, 1]), 3)
        total = (post.values.ravel() + along / float(d_u @ d_u + d_v @ d_v)).std()
        row["sd_total_slope"] = round(float(total), 4)
    row.update(
        compile_s=round(tc.wall, 2), sample_wall_s=round(ts.wall, 2), sample_cpu_s=round(ts.cpu, 2),
        divergences=diag["divergences"], max_rhat=diag["max_rhat"],
        min_ess_bulk=diag["min_ess_bulk"], ess_bulk_effect=round(ess, 1),
        ess_per_s=round(ess / ts.wall, 1), ess_per_cpu_s=round(ess / max(ts.cpu, 1e-9), 1),
        effect=effect, effect_mean=round(float(post.mean()), 4), effect_sd=round(float(post.std()), 4),
        effect_mcse=round(mcse, 4),
    )
    print({k: row[k] for k in ("case", "sampler", "compile_s", "sample_wall_s", "divergences",
                               "ess_bulk_effect", "ess_per_s", "effect_mean")}, flush=True)
    return row


def gradient_costs(evals: int = 20000) -> list[dict[str, Any]]:
    """CPU microseconds per log density + gradient (see the module docstring)."""
    import numpy as np
    import pytensor
    import pytensor.tensor as pt

    import selfmodel.models.scale as scale
    import selfmodel.models.sdt as sdt
    from bench.bench_compile import default_cells

    def branch_free(z: Any) -> Any:
        a = pt.abs(z) / sdt._SQRT2
        return pt.sgn(z) * (pt.log(pt.erfc(-a)) - pt.log(pt.erfcx(a)) + pt.sqr(a))

    def time_model(m: Any) -> tuple[float, float]:
        inputs = m.value_vars
        logp = m.logp()
        f = pytensor.function(inputs, [logp, *pytensor.grad(logp, inputs)], mode="NUMBA",
                              trust_input=True)
        g = pytensor.function(inputs, inputs[0].sum(), mode="NUMBA", trust_input=True,
                              on_unused_input="ignore")
        ip = m.initial_point(random_seed=1)
        rng = np.random.default_rng(0)
        base = [np.asarray(ip[v.name], dtype="float64") for v in inputs]
        pts = [[np.array(b + 0.3 * rng.normal(size=b.shape), dtype="float64") for b in base]
               for _ in range(evals)]
        f(*pts[0])
        g(*pts[0])
        t = time.process_time()
        for pt_ in pts:
            g(*pt_)
        overhead = time.process_time() - t
        t = time.process_time()
        vals = [float(f(*pt_)[0]) for pt_ in pts]
        total = time.process_time() - t
        return 1e6 * (total - overhead) / evals, float(np.sum(vals))

    rows = []
    data = default_cells("scale").select(list(scale.REQUIRED_COLUMNS))
    us, _ = time_model(scale.build(data))
    rows.append({"model": "scale", "link": "logit", "us_cpu_per_logp_grad": round(us, 1)})
    sdata = default_cells("sdt").select(list(sdt.REQUIRED_COLUMNS))
    written = sdt._probit_logit
    ref = None
    try:
        for link, fn in (("probit, as written (switch)", written),
                         ("probit, branch-free", branch_free),
                         ("logit (other model)", lambda z: 1.7 * z)):
            sdt._probit_logit = fn
            us, total = time_model(sdt.build(sdata))
            row = {"model": "sdt", "link": link, "us_cpu_per_logp_grad": round(us, 1)}
            if ref is None:
                ref = total
            elif link.startswith("probit"):
                row["sum_logp_difference"] = abs(total - ref)
            rows.append(row)
            print(row, flush=True)
    finally:
        sdt._probit_logit = written
    return rows


def sdt_bases(seeds: list[int], draws: int = 2000, target: float = 0.99) -> list[dict[str, Any]]:
    """The default data's sdt fit in the plain and the decorrelated slope basis, per seed.

    Pipeline settings (4 chains x ``draws`` after 1000 tuning, ``target``); for each fit
    the divergences, max R-hat and slowest bulk ESS (``selfmodel.fitting.sampling.diagnose``), bulk ESS
    and R-hat of ``beta_criterion`` and ``beta_dprime``, the E-BFMI of the slowest chain and
    the posterior correlation of each slope with the component of its family and model
    intercepts along the slope's trade-off direction (``selfmodel.models.decorrelation.shift_direction``).
    """
    import arviz as az
    import nutpie

    import selfmodel.models.sdt as sdt
    from bench.bench_compile import default_cells
    from selfmodel.fitting.sampling import diagnose
    from selfmodel.models.decorrelation import shift_direction
    from selfmodel.models.graph import factorize

    data = default_cells("sdt").select(list(sdt.REQUIRED_COLUMNS))
    model_idx, models_ = factorize(data["model"])
    fam_idx, _ = factorize(data["family"])
    x_model, fam_of_model = np.zeros(len(models_)), np.zeros(len(models_), dtype="int64")
    x_model[model_idx], fam_of_model[model_idx] = data["x"].to_numpy(), fam_idx
    d_u, d_v = shift_direction(x_model, fam_of_model)
    rows = []
    for basis in ("plain", "decorrelated"):
        with Timer() as tc:
            compiled = nutpie.compile_pymc_model(sdt.build(data, slope_basis=basis))
        for seed in seeds:
            with Timer() as ts:
                idata = nutpie.sample(compiled, draws=draws, tune=1000, chains=CHAINS,
                                      cores=CORES, seed=seed, target_accept=target,
                                      progress_bar=False)
            diag = diagnose(idata)
            post = idata.posterior
            row: dict[str, Any] = {
                "basis": basis, "seed": seed, "draws": draws, "target_accept": target,
                "compile_s": round(tc.wall, 1), "sample_wall_s": round(ts.wall, 1),
                "sample_cpu_s": round(ts.cpu, 1), "divergences": diag["divergences"],
                "max_rhat": diag["max_rhat"], "min_ess_bulk": diag["min_ess_bulk"],
                "mean_steps": round(float(idata.sample_stats["n_steps"].values.mean()), 1),
            }
            energy = idata.sample_stats["energy"].values
            row["min_bfmi"] = round(float(min(
                np.mean(np.diff(e) ** 2) / np.var(e) for e in energy)), 3)
            for side in ("criterion", "dprime"):
                b = f"beta_{side}"
                row[f"ess_{side}"] = round(float(az.ess(idata, var_names=[b])[b]))
                row[f"rhat_{side}"] = round(float(az.rhat(idata, var_names=[b])[b]), 4)
                u = post[f"u_{side}_family"].values.reshape(-1, d_u.size)
                v = post[f"v_{side}_model"].values.reshape(-1, d_v.size)
                shift = u @ d_u + v @ d_v
                row[f"corr_{side}_shift"] = round(float(np.corrcoef(
                    post[b].values.ravel(), shift)[0, 1]), 3)
            row["ess_criterion_per_cpu_s"] = round(row["ess_criterion"] / ts.cpu, 1)
            print(row, flush=True)
            rows.append(row)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--name", default="sampling", help="results file name")
    ap.add_argument("--cases", nargs="+",
                    default=["scale", "sdt", "centred", "pymc", "binomial", "bernoulli"])
    ap.add_argument("--gradient", action="store_true",
                    help="time log density + gradient of scale and sdt (module docstring)")
    ap.add_argument("--sdt-seeds", type=int, nargs="+",
                    help="fit sdt on the default data in both slope bases with these seeds")
    args = ap.parse_args()
    quiet_warnings()
    if args.sdt_seeds:
        srows = sdt_bases(args.sdt_seeds)
        cols = ["basis", "seed", "divergences", "max_rhat", "min_ess_bulk", "ess_criterion",
                "rhat_criterion", "ess_dprime", "rhat_dprime", "corr_criterion_shift",
                "min_bfmi", "mean_steps", "sample_cpu_s", "ess_criterion_per_cpu_s"]
        write_results(args.name if args.name != "sampling" else "sampling_sdt_basis",
                      {"machine": machine(), "rows": srows,
                       "command": " ".join(["bench/bench_sampling.py", *sys.argv[1:]])},
                      md_table(srows, cols))
        print(md_table(srows, cols))
        return
    if args.gradient:
        grows = gradient_costs()
        write_results("sampling_gradient",
                      {"machine": machine(), "rows": grows,
                       "command": " ".join(["bench/bench_sampling.py", *sys.argv[1:]])},
                      md_table(grows, ["model", "link", "us_cpu_per_logp_grad"]))
        print(md_table(grows, ["model", "link", "us_cpu_per_logp_grad"]))
        return
    import selfmodel.models.scale as scale

    info: dict[str, Any] = {"machine": machine(),
                            "command": " ".join(["bench/bench_sampling.py", *sys.argv[1:]])}
    rows: list[dict[str, Any]] = []
    if args.quick:
        cells = scale_cells(1, 4, 4, 3, 300)
        rows.append(measure("scale 16x3 (quick)", scale.build(cells), "beta", draws=200, tune=200))
        write_results("sampling_quick", {**info, "rows": rows})
        return
    big = scale_cells(7, 10, 5, 10, 300)  # 50 models x 10 tasks
    small = scale_cells(3, 4, 4, 3, 100)  # 16 models x 3 tasks x 100 records
    for case in args.cases:
        t0 = time.perf_counter()
        if case == "scale":
            rows.append(measure("scale 50x10", scale.build(big), "beta", shift=scale_shift(big)))
        elif case == "sdt":
            try:
                import selfmodel.models.sdt as sdt
            except ImportError:
                rows.append({"case": "sdt 50x10", "note": "models/sdt.py absent"})
                continue
            rows.append(measure("sdt 50x10", sdt.build(sdt_cells(big, 7)), sdt.EFFECT))
        elif case == "plain":
            rows.append(measure("scale 50x10 plain slope basis",
                                scale.build(big, slope_basis="plain"), "beta",
                                shift=scale_shift(big)))
        elif case == "plain_group_centred":
            rows.append(measure("scale 50x10 plain slope basis, group effects centred",
                                scale.build(big, slope_basis="plain", group_effects="centred"),
                                "beta"))
        elif case == "sdt_plain":
            import selfmodel.models.sdt as sdt

            rows.append(measure("sdt 50x10 plain slope basis",
                                sdt.build(sdt_cells(big, 7), slope_basis="plain"), sdt.EFFECT))
        elif case == "orthogonal":
            rows.append(measure("scale 50x10 v orthogonal to x",
                                build_variant(big, orthogonal=True), "beta"))
        elif case == "centred":
            rows.append(measure("scale 50x10 centred", build_variant(big, centred=True), "beta"))
        elif case == "group_centred":
            rows.append(measure("scale 50x10 group effects centred",
                                scale.build(big, group_effects="centred"), "beta",
                                shift=scale_shift(big)))
        elif case == "pymc":
            rows.append(measure("scale 50x10", scale.build(big), "beta", sampler="pymc"))
        elif case == "binomial":
            rows.append(measure("scale 16x3 binomial (4.8k records)", scale.build(small), "beta"))
        elif case == "bernoulli":
            rows.append(measure("scale 16x3 bernoulli (4.8k records)",
                                build_variant(small, bernoulli=True), "beta"))
        print(f"  ({case}: {time.perf_counter() - t0:.0f} s)", flush=True)
    try:
        import numpyro  # noqa: F401

        info["numpyro"] = "importable"
    except ImportError:
        info["numpyro"] = "not installed in this interpreter (see docs/performance.md)"
    table = md_table(rows, ["case", "sampler", "compile_s", "sample_wall_s", "sample_cpu_s",
                            "divergences", "max_rhat", "ess_bulk_effect", "min_ess_bulk",
                            "slowest", "ess_per_s", "ess_per_cpu_s", "corr_effect_shift",
                            "sd_total_slope", "effect_mean", "effect_sd", "effect_mcse"])
    write_results(args.name, {**info, "rows": rows}, table)
    print(table)


if __name__ == "__main__":
    main()
