"""Fast structural tests of every model in ``models/`` (no sampling).

Shapes, coords and dims on small synthetic tables; finite log density and gradient at the
initial point; priors dict keys match the variables ``build`` creates; unknown prior names
and unusable data are errors; a few exact checks of the math (probit link of ``sdt``,
exactness of the ``within_between`` reparameterisation).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pymc as pm
import pytest
from scipy.stats import norm

from selfmodel import models
from selfmodel.models import items, pooled, scale, sdt, self_vs_other, within_between
from selfmodel.records.cells import to_item_cells, to_pair_cells

pytestmark = pytest.mark.filterwarnings(
    # pytensor's C backend finds no BLAS on this machine (pip install); harmless here
    "ignore:PyTensor could not link to a BLAS:UserWarning"
)

#: Python-linker compilation: these tests evaluate each function once, so the C backend's
#: compile time (10-30 s per model) is wasted.
FAST = "FAST_COMPILE"

FAMILIES = {"fa": ["fa-1", "fa-2", "fa-3"], "fb": ["fb-1", "fb-2"], "fc": ["fc-1"]}
TASKS = ["t1", "t2"]


def _cells(seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for fam, members in FAMILIES.items():
        for i, m in enumerate(members):
            for t in TASKS:
                n_s, n_n = int(rng.integers(20, 60)), int(rng.integers(20, 60))
                hits, fas = int(rng.integers(0, n_s + 1)), int(rng.integers(0, n_n + 1))
                rows.append({
                    "model": m, "family": fam, "task": t, "x": float(i) + 0.3 * len(fam) - 1.0,
                    "n_signal": n_s, "n_noise": n_n, "hits": hits, "false_alarms": fas,
                    "n": n_s + n_n, "k": hits + n_n - fas,
                })
    return pl.DataFrame(rows)


def _items(seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    cells = _cells(seed)
    rows = []
    for r in cells.iter_rows(named=True):
        for i in range(5):
            rows.append({**{c: r[c] for c in ("model", "family", "task", "x")},
                         "item_id": f"i{i}", "n": 2, "k": int(rng.integers(0, 3))})
    return pl.DataFrame(rows)


def _pairs(seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    ms = ["a", "b", "c"]
    return pl.DataFrame([
        {"predictor": p, "model": m, "task": t, "n": 30, "k": int(rng.integers(0, 31))}
        for p in ms for m in ms for t in TASKS
    ])


def _training(seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)

    def counts() -> dict[str, int]:
        out = {}
        for w in ("base", "trained"):
            s, n = int(rng.integers(20, 40)), int(rng.integers(20, 40))
            out.update({f"n_signal_{w}": s, f"n_noise_{w}": n,
                        f"hits_{w}": int(rng.integers(0, s + 1)),
                        f"false_alarms_{w}": int(rng.integers(0, n + 1))})
        return out

    return pl.DataFrame([
        {"model": f"{b}-rl", "task": t, "arm": f"iv|{t}",
         "status": "trained" if t == "t1" else "held_out", "comparison": "gain",
         "n": 40, "k": int(rng.integers(0, 41)), "weight": 1.0, **counts()}
        for b in ("a", "b", "c") for t in TASKS
    ])


def _conditions(seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    return pl.DataFrame([
        {"model": m, "task": t, "condition": c, "item_id": f"i{i}", "n": 2,
         "k": int(rng.integers(0, 3))}
        for m in ("a", "b") for t in TASKS for c in ("after", "before", "none") for i in range(4)
    ])


DATA = {
    "contrast": _conditions,
    "scale": _cells, "pooled": _cells, "within_between": _cells, "sdt": _cells,
    "items": _items, "self_vs_other": _pairs, "training": _training,
}
#: build options that switch every optional part on (so every prior is used)
ALL_OPTIONS = {"scale": {"family_slopes": True}, "pooled": {"random_effects": True}}
#: dimension of the observed variable(s)
OBS_DIM = {"contrast": "obs", "items": "obs", "self_vs_other": "pair", "training": "row"}


def _build(name: str, **kw):
    mod = models.get(name)
    return mod, mod.build(DATA[name](), **{**ALL_OPTIONS.get(name, {}), **kw})


@pytest.mark.parametrize("name", sorted(models.REGISTRY))
def test_module_contract(name):
    mod = models.get(name)
    assert mod.NAME == name
    assert isinstance(mod.SUMMARY, str) and mod.SUMMARY
    assert isinstance(mod.REQUIRED_COLUMNS, tuple)
    assert set(mod.REQUIRED_COLUMNS) <= set(DATA[name]().columns)
    # its measurements are in docs/models.md, in a section of its own the docstring points to
    assert "docs/models.md" in mod.__doc__
    doc = (Path(__file__).resolve().parents[2] / "docs" / "models.md").read_text()
    assert f"## `{name}` (`models/{name}.py`)" in doc
    for dist, params in mod.DEFAULT_PRIORS.values():
        assert hasattr(pm, dist) and isinstance(params, dict)


@pytest.mark.parametrize("name", sorted(models.REGISTRY))
def test_logp_and_gradient_finite_at_initial_point(name):
    _, m = _build(name)
    ip = m.initial_point()
    assert np.isfinite(m.compile_logp(mode=FAST)(ip))
    grad = m.compile_dlogp(mode=FAST)(ip)
    assert grad.shape == (sum(np.size(v) for v in ip.values()),)
    assert np.all(np.isfinite(grad))


@pytest.mark.parametrize("name", sorted(models.REGISTRY))
def test_priors_dict_matches_variables(name):
    mod, m = _build(name)
    assert set(mod.DEFAULT_PRIORS) <= set(m.named_vars), "a prior with no variable"
    priored = {rv.name for rv in m.free_RVs if not rv.name.startswith("z_")}
    assert priored <= set(mod.DEFAULT_PRIORS), "a free variable with no entry in DEFAULT_PRIORS"


@pytest.mark.parametrize("name", sorted(models.REGISTRY))
def test_unknown_prior_name_raises(name):
    mod = models.get(name)
    with pytest.raises(KeyError, match="unknown prior 'sigma_typo'"):
        mod.build(DATA[name](), priors={"sigma_typo": ("HalfNormal", {"sigma": 1.0})})


@pytest.mark.parametrize("name", sorted(models.REGISTRY))
def test_effect_variables_and_dims(name):
    mod, m = _build(name)
    dim = OBS_DIM.get(name, "cell")
    data = DATA[name]()
    #: rows each observed dimension covers (training: ``k`` and the signal-detection counts
    #: on the gain rows, one per pair x task cell)
    rows = ({"row": data.height, "cell": data.height} if name == "training"
            else {dim: data.height})
    for rv in m.observed_RVs:
        (d,) = m.named_vars_to_dims[rv.name]
        assert d in rows, (rv.name, d)
        assert len(m.coords[d]) == rows[d]
    if mod.EFFECT is not None:
        assert m[mod.EFFECT].ndim == 0
    if mod.PER_TASK_EFFECT is not None:
        assert m.named_vars_to_dims[mod.PER_TASK_EFFECT] == ("task",)
        assert list(m.coords["task"]) == TASKS
    else:
        assert mod.EFFECT is None


def test_registry_lookup_and_hint():
    assert set(models.REGISTRY) == {"scale", "pooled", "within_between", "sdt", "items",
                                    "self_vs_other", "training", "contrast"}
    with pytest.raises(KeyError, match="Did you mean 'within_between'"):
        models.get("within_betwen")


def test_pooled_coords_with_and_without_random_effects():
    plain = pooled.build(_cells())
    assert set(plain.coords) == {"task", "cell"}
    assert [rv.name for rv in plain.free_RVs] == ["alpha"]
    full = pooled.build(_cells(), random_effects=True)
    assert {"family", "model"} <= set(full.coords)
    assert "beta" not in full.named_vars


def _eval_at(m, var, values):
    """Evaluate a model variable with free variables set to ``values`` (others at 0/1)."""
    from pymc.model.transform.conditioning import remove_value_transforms

    um = remove_value_transforms(m)
    (out,) = um.replace_rvs_by_values([um[var]])
    fn = um.compile_fn(outs=out, inputs=um.value_vars, on_unused_input="ignore", mode=FAST)
    point = {k: np.zeros_like(v) for k, v in um.initial_point().items()}
    point.update({k: np.ones_like(v) for k, v in point.items() if k.startswith("sigma")})
    point.update(values)
    return fn(point)


def test_sdt_probit_link_hit_and_false_alarm_rates():
    """H = Phi(d'/2 - c), F = Phi(-d'/2 - c) (Macmillan & Creelman 2005, eq. 1.5 and 2.1)."""
    data = _cells()
    m = sdt.build(data)
    vals = {"alpha_dprime": np.array([1.2, 0.4]), "alpha_criterion": np.array([-0.3, 0.5])}
    codes = np.array([TASKS.index(t) for t in data["task"].to_list()])
    d, c = vals["alpha_dprime"][codes], vals["alpha_criterion"][codes]
    # the observed RVs' success probabilities, exposed as deterministics
    p_hit = m["hits"].owner.inputs[-1]
    p_fa = m["false_alarms"].owner.inputs[-1]
    with m:
        pm.Deterministic("_ph", p_hit)
        pm.Deterministic("_pf", p_fa)
    np.testing.assert_allclose(_eval_at(m, "_ph", vals), norm.cdf(d / 2 - c), rtol=1e-10)
    np.testing.assert_allclose(_eval_at(m, "_pf", vals), norm.cdf(-d / 2 - c), rtol=1e-10)


def test_sdt_empty_signal_or_noise_side_contributes_zero():
    data = _cells().with_row_index("i").with_columns(
        pl.when(pl.col("i") == 0).then(0).otherwise(pl.col("n_signal")).alias("n_signal"),
        pl.when(pl.col("i") == 0).then(0).otherwise(pl.col("hits")).alias("hits"),
        pl.when(pl.col("i") == 1).then(0).otherwise(pl.col("n_noise")).alias("n_noise"),
        pl.when(pl.col("i") == 1).then(0).otherwise(pl.col("false_alarms")).alias("false_alarms"),
    ).drop("i")
    m = sdt.build(data)
    ip = m.initial_point()
    ll = m.compile_fn(m.logp(vars=m.observed_RVs, sum=False), on_unused_input="ignore",
                      mode=FAST)(ip)
    assert ll[0][0] == 0.0 and ll[1][1] == 0.0
    assert np.all(np.isfinite(np.concatenate(ll)))
    assert np.all(np.isfinite(m.compile_dlogp(mode=FAST)(ip)))


def test_sdt_rejects_counts_out_of_range():
    bad = _cells().with_columns((pl.col("n_signal") + 1).alias("hits"))
    with pytest.raises(ValueError, match="hits <= n_signal"):
        sdt.build(bad)


def test_sdt_without_cell_effects_has_no_cell_parameters():
    m = sdt.build(_cells(), cell_effects=False)
    assert not any("cell" in rv.name for rv in m.free_RVs)


def test_within_between_split_and_identification_error():
    w, b = within_between.split_scale(["a1", "a2", "a2", "b1"], ["a", "a", "a", "b"],
                                      [0.0, 1.0, 1.0, 3.0])
    np.testing.assert_allclose(w, [-0.5, 0.5, 0.5, 0.0])
    np.testing.assert_allclose(b, [0.5, 0.5, 0.5, 3.0])
    one_size = _cells().with_columns(pl.lit(0.0).alias("x"))
    with pytest.raises(ValueError, match="within-family slope is not identified"):
        within_between.build(one_size)
    # the pipeline asks first and skips the model with the reason (it was a traceback)
    assert "not identified" in within_between.SPEC.unfit_reason(one_size)
    assert within_between.SPEC.unfit_reason(_cells()) is None
    with pytest.raises(ValueError, match="must be \\('Normal'"):
        within_between.build(_cells(), priors={"beta_between": ("StudentT", {"nu": 3, "sigma": 1})})


@pytest.mark.parametrize("form", ["exact", "plain"])
def test_within_between_reparameterisation_keeps_the_prior(form: str):
    """beta_between ~ N(mu, sd) and u_family ~ sigma_family * ZeroSumNormal(1), independent.

    The model samples (c, r) instead of (beta_between, u_family); the map is an exact
    change of variables, so prior draws must reproduce the declared priors. The plain form
    (``between_form="plain"``, in which reweighting evaluates the priors) must give the same
    prior. With 4000 draws the Monte Carlo s.e. of a mean is ~0.011 and of an sd ~0.008:
    tolerances are about 5 s.e.
    """
    m = within_between.build(_cells(), priors={"beta_between": ("Normal", {"mu": 0.3, "sigma": 0.7})},
                             between_form=form)
    bb, u, s_fam = pm.draw([m["beta_between"], m["u_family"], m["sigma_family"]], draws=4000,
                           random_seed=11)
    assert abs(bb.mean() - 0.3) < 0.06 and abs(bb.std() - 0.7) < 0.04
    np.testing.assert_allclose(u.sum(axis=1), 0.0, atol=1e-9)
    # standardised family effects: isotropic with unit variance in the zero-sum subspace
    z = u / s_fam[:, None]
    n_fam = u.shape[1]
    np.testing.assert_allclose(z.var(axis=0), (n_fam - 1) / n_fam, atol=0.08)
    assert abs(np.corrcoef(bb, z[:, 0])[0, 1]) < 0.06


def test_items_coords_and_item_task_spread():
    data = _items()
    m = items.build(data)
    assert len(m.coords["item"]) == len(TASKS) * 5
    assert m.named_vars_to_dims["sigma_item"] == ("task",)
    assert len(m.coords["cell"]) == _cells().height
    assert m.coords["item"][0] == "t1|i0"


def test_self_vs_other_needs_self_and_cross_pairs():
    only_self = _pairs().filter(pl.col("predictor") == pl.col("model"))
    with pytest.raises(ValueError, match="both self-predictions"):
        self_vs_other.build(only_self)
    m = self_vs_other.build(_pairs())
    assert list(m.coords["predictor"]) == ["a", "b", "c"]
    flags = m["is_self"].get_value()
    assert flags.sum() == 3 * len(TASKS)


def test_scale_module_untouched_contract():
    assert scale.EFFECT == "beta" and scale.PER_TASK_EFFECT == "slope_task"


def _records() -> pl.DataFrame:
    return pl.DataFrame({
        "model": ["a", "a", "a", "b", "b", "a"],
        "task": ["t"] * 6,
        "item_id": ["i1", "i1", "i2", "i1", "i3", "i1"],
        "predictor": [None, "a", None, "b", "b", "b"],
        "correct": [True, False, None, True, True, False],
        "status": ["ok", "ok", "unparsed", "ok", "ok", "ok"],
        "sample": [0, 1, 0, 0, 0, 0],
    })


def test_to_item_cells_counts():
    out = to_item_cells(_records())
    rows = {(r["model"], r["item_id"]): (r["n_total"], r["n"], r["k"], r["n_models_item"])
            for r in out.iter_rows(named=True)}
    # b predicting a is a cross-prediction: excluded from a's self-prediction items
    assert rows == {("a", "i1"): (2, 2, 1, 2), ("a", "i2"): (1, 0, 0, 0),
                    ("b", "i1"): (1, 1, 1, 2), ("b", "i3"): (1, 1, 1, 1)}


def test_to_pair_cells_counts():
    out = to_pair_cells(_records())
    rows = {(r["predictor"], r["model"]): (r["n_total"], r["n"], r["k"], r["is_self"])
            for r in out.iter_rows(named=True)}
    assert rows == {("a", "a"): (3, 2, 1, True), ("b", "a"): (1, 1, 0, False),
                    ("b", "b"): (2, 2, 2, True)}


@pytest.mark.parametrize("name", sorted(models.REGISTRY))
def test_docstring_carries_no_run_timings(name: str) -> None:
    """Timings go stale and depend on the machine: they belong in bench/ outputs (issue 12)."""
    import re

    doc = models.get(name).__doc__ or ""
    assert not re.search(r"\d(\.\d+)?\s*(s|ms|seconds?)\b(?! units)", doc), name
    assert "compile" not in doc, name


@pytest.mark.parametrize("name", sorted(models.REGISTRY))
def test_spec_declares_sections_of_the_report(name: str) -> None:
    """Each declared report section is an anchor of the report source."""
    from pathlib import Path

    qmd = (Path(__file__).resolve().parents[2] / "reports" / "self_modeling.qmd").read_text()
    spec = models.get(name).SPEC
    assert spec.sections
    for sec in spec.sections:
        assert "{#" + sec + "}" in qmd, (name, sec)
