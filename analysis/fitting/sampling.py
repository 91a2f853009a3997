"""Sampling, diagnostics, provenance and the fit cache.

A fit is sampled with nutpie (numba backend; see ``bench/`` for the measurements behind
the choice), checked against named diagnostic thresholds, and saved as netCDF with its
provenance in ``idata.attrs``, sealed with the user's key (:mod:`selfmodel.common.seal`).
A saved fit is reused only when its seal verifies and the data hash, model, options,
priors, sampler settings, seed and package versions all match; anything else refits.

A model is compiled with ``nutpie.compile_pymc_model`` (PyTensor's on-disk numba cache, in
selfmodel's cache folder (:mod:`selfmodel.common.caches`), makes a later compile of the
same model in a new process cheaper). ``fit(...,
reuse_compiled=True)`` compiles through :func:`selfmodel.fitting.compile_cache.compiled_model`
instead, for callers that fit one design many times in one process (operating-characteristics studies,
simulation-based calibration, power by simulation): each later fit of the same structure
skips compilation. It is not the default because on a single fit it costs more than it
saves: with the data as shared variables PyTensor cannot fold the data into the graph; on
the default data the scale model's cold compile took 28% more CPU and every gradient 48%
more, the sdt model's compile 27% more (``bench/results/compile_fit.json``). Its draws
differ from a plain compile's at Monte Carlo level (same seed, log density equal to
~1e-12, but NUTS trajectories diverge), so it is part of the cache key.

Results derived from a fit (the checks of ``analysis/fitting/checks.py``, the power
simulation of ``analysis/power/``) are saved beside it as JSON by :func:`cached_json`, keyed
on everything they depend on and sealed the same way; diagnostics are computed from the
draws on every read.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import platform
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from importlib import metadata
from pathlib import Path
from typing import Any, Final

import arviz as az
import numpy as np
import polars as pl

from selfmodel import models as model_registry
from selfmodel.common import arviz_ops, atomic, progress, seal
from selfmodel.fitting import fitpool
from selfmodel.fitting.compile_cache import compiled_model
from selfmodel.fitting.settings import SamplerSettings
from selfmodel.models.spec import SamplingNeeds

#: Diagnostic thresholds (Vehtari et al. 2021, "Rank-normalization, folding, and
#: localization: an improved R-hat", for R-hat and bulk ESS; Betancourt 2016,
#: "Diagnosing suboptimal cotangent disintegrations in HMC", for E-BFMI).
THRESHOLDS: dict[str, float] = {"r_hat": 1.01, "ess_bulk": 400.0, "divergences": 0.0, "bfmi": 0.3}

_VERSIONED = (
    "selfmodel", "pymc", "pytensor", "arviz", "arviz-base", "arviz-stats", "nutpie", "numpy",
    "polars", "numba",
)


def for_model(settings: SamplerSettings, needs: SamplingNeeds) -> SamplerSettings:
    """``settings`` as a model whose ``SPEC.sampling`` is ``needs`` samples with them.

    Draws and tuning scaled by the model's factors (rounded up), ``target_accept`` raised to
    the model's floor; unchanged for a model that needs nothing beyond the run's settings.
    """
    draws = math.ceil(settings.draws * needs.draws)
    tune = math.ceil(settings.tune * needs.tune)
    target = max(settings.target_accept, needs.target_accept)
    if (draws, tune, target) == (settings.draws, settings.tune, settings.target_accept):
        return settings
    return replace(settings, draws=draws, tune=tune, target_accept=target)


@dataclass
class Fit:
    """A fitted model: posterior, diagnostics, provenance, and whether it came from cache."""

    model: str
    idata: arviz_ops.InferenceData
    diagnostics: dict[str, Any]
    provenance: dict[str, Any]
    reused: bool = False
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)


@functools.cache
def _package_versions(extra: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    out = {}
    for name in (*_VERSIONED, *extra):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "absent"
    out["python"] = platform.python_version()
    return tuple(out.items())


def package_versions(extra: Iterable[str] = ()) -> dict[str, str]:
    """Versions of the packages that determine a fit, plus Python and platform.

    ``extra`` names further packages (e.g. ``scipy`` for a result computed with it).
    """
    return dict(_package_versions(tuple(extra)))


def frame_sha256(frame: pl.DataFrame) -> str:
    """SHA-256 of a frame's content (column names, dtypes and values, in row order)."""
    h = hashlib.sha256()
    h.update(json.dumps([(c, str(t)) for c, t in frame.schema.items()]).encode())
    h.update(frame.write_csv().encode())
    return h.hexdigest()


def diagnose(idata: arviz_ops.InferenceData, var_names: list[str] | None = None) -> dict[str, Any]:
    """Named diagnostic checks with their thresholds, each pass/fail.

    Returns
    -------
    dict
        ``max_rhat``, ``min_ess_bulk``, ``min_ess_tail``, ``divergences``, ``min_bfmi``,
        ``checks`` (list of {name, value, threshold, passed}) and ``passed``.
    """
    post = arviz_ops.posterior(idata)
    names = var_names or [str(v) for v in post.data_vars if not str(v).startswith("z_")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # constant deterministics give NaN
        rhat = az.rhat(post[names])
        ess_b = az.ess(post[names], method="bulk")
        ess_t = az.ess(post[names], method="tail")

    def _extreme(ds: Any, fn: Any) -> float:
        vals = np.concatenate([np.ravel(ds[v].values) for v in ds.data_vars])
        vals = vals[np.isfinite(vals)]
        return float(fn(vals)) if vals.size else float("nan")

    max_rhat = _extreme(rhat, np.max)
    min_bulk = _extreme(ess_b, np.min)
    min_tail = _extreme(ess_t, np.min)
    stats = idata["sample_stats"]
    div = int(stats["diverging"].sum()) if "diverging" in stats else 0
    try:
        bfmi = arviz_ops.min_bfmi(idata)
    except (KeyError, ValueError):
        bfmi = float("nan")
    checks = [
        {
            "name": "r_hat",
            "value": max_rhat,
            "threshold": f"<= {THRESHOLDS['r_hat']}",
            "passed": bool(max_rhat <= THRESHOLDS["r_hat"]),
        },
        {
            "name": "ess_bulk",
            "value": min_bulk,
            "threshold": f">= {THRESHOLDS['ess_bulk']:.0f}",
            "passed": bool(min_bulk >= THRESHOLDS["ess_bulk"]),
        },
        {"name": "divergences", "value": div, "threshold": "== 0", "passed": div == 0},
        {
            "name": "bfmi",
            "value": bfmi,
            "threshold": f">= {THRESHOLDS['bfmi']}",
            "passed": bool(np.isnan(bfmi) or bfmi >= THRESHOLDS["bfmi"]),
        },
    ]
    return {
        "max_rhat": round(max_rhat, 4),
        "min_ess_bulk": round(min_bulk, 1),
        "min_ess_tail": round(min_tail, 1),
        "divergences": div,
        "min_bfmi": round(bfmi, 3) if np.isfinite(bfmi) else None,
        "checks": checks,
        "passed": all(c["passed"] for c in checks),
    }


def _cache_key(prov: Mapping[str, Any]) -> str:
    stable = {
        k: prov[k]
        for k in ("model", "options", "priors", "sampler", "seed", "data_sha256", "versions")
    }
    if "compile" in prov:  # only when not the default, so that existing keys stay valid
        stable["compile"] = prov["compile"]
    return hashlib.sha256(json.dumps(stable, sort_keys=True).encode()).hexdigest()


def sample_nutpie(
    compiled: Any, settings: SamplerSettings, seed: int, *, label: str | None = None
) -> arviz_ops.InferenceData:
    """Sample a compiled nutpie model with ``settings`` (the one place the call is spelled out).

    Used by :func:`fit` and by the benchmark scripts that swap data into one compiled model
    (``compiled.with_data(...)``) for many simulated data sets. With ``label`` and a progress
    reporter in this context (:mod:`selfmodel.common.progress`), the draws, chains and divergences
    so far are shown while it samples.
    """
    import nutpie

    watch = progress.fit_callback(label, settings.chains) if label else None
    extra: dict[str, Any] = {"progress_callback": watch, "progress_rate": 250} if watch else {}
    idata = nutpie.sample(
        compiled,
        draws=settings.draws,
        tune=settings.tune,
        chains=settings.chains,
        cores=settings.cores,
        seed=seed,
        target_accept=settings.target_accept,
        progress_bar=False,
        save_warmup=False,
        **extra,
    )
    if watch is not None:
        watch.finish()
    return idata


def _sample(
    pm_model: Any, settings: SamplerSettings, seed: int, *, reuse_compiled: bool = False,
    label: str = "model",
) -> arviz_ops.InferenceData:
    if settings.sampler == "nutpie":
        import nutpie

        if reuse_compiled:
            progress.status(f"compiling '{label}' (numba; a later fit of the same structure and "
                            "shapes reuses it)")
            compiled = compiled_model(pm_model)
        else:
            progress.status(f"compiling '{label}' (numba; the data are constants of the compiled "
                            "code, so only a later fit of this model on the same data reuses "
                            "the disk cache)")
            compiled = nutpie.compile_pymc_model(pm_model)
        return sample_nutpie(compiled, settings, seed, label=f"sampling '{label}'")
    if settings.sampler == "pymc":
        import pymc as pm

        with pm_model:
            return pm.sample(
                draws=settings.draws,
                tune=settings.tune,
                chains=settings.chains,
                cores=settings.cores,
                random_seed=seed,
                target_accept=settings.target_accept,
                progressbar=False,
                nuts_sampler="pymc",  # PyMC 6 would otherwise pick nutpie when installed
            )
    raise ValueError(f"unknown sampler '{settings.sampler}' (use nutpie or pymc)")


def fit(
    model_name: str,
    data: pl.DataFrame,
    *,
    seed: int,
    settings: SamplerSettings | None = None,
    priors: Mapping[str, Any] | None = None,
    options: Mapping[str, Any] | None = None,
    cache_dir: Path | str | None = None,
    reuse_compiled: bool = False,
    then: Callable[[Fit], object] | None = None,
) -> Fit:
    """Fit ``model_name`` to ``data`` (cells), reusing a matching cached fit.

    Parameters
    ----------
    model_name
        A key of ``models.REGISTRY``.
    data
        The model's input table (see the model's ``REQUIRED_COLUMNS``).
    seed
        Sampler seed; same data, settings and seed give the same draws.
    settings
        Sampler settings.
    priors
        Prior overrides (the model's ``DEFAULT_PRIORS`` keys).
    options
        Keyword options of the model's ``build`` (e.g. ``family_slopes``).
    cache_dir
        Folder of saved fits; ``None`` disables the cache.
    reuse_compiled
        Compile through :func:`selfmodel.fitting.compile_cache.compiled_model` (nutpie only): a later
        fit of the same structure in this process reuses the compiled code (module
        docstring: worth it only when one process fits the same design repeatedly). Recorded
        in the provenance (``compile: "shared_data"``) and the cache key.
    then
        Called with a newly sampled fit where it was sampled (in the worker process when
        fits go to workers, :mod:`selfmodel.fitting.fitpool`), for work that saves its results
        beside the fit (the checks of ``model_stage.checks_after_fit``), so that it runs
        in the worker too. Not called for a fit read from the cache. Must be picklable.
    """
    module = model_registry.get(model_name)
    run_settings = settings or SamplerSettings()  # a worker process gets these, and adapts them itself
    settings = for_model(run_settings, module.SPEC.sampling)
    merged = {**module.DEFAULT_PRIORS, **(priors or {})}
    cols = [c for c in module.REQUIRED_COLUMNS if c in data.columns]
    used = data.select(cols)
    prov: dict[str, Any] = {
        "model": model_name,
        "options": dict(options or {}),
        "priors": {k: [v[0], v[1]] for k, v in sorted(merged.items())},
        "sampler": asdict(settings),
        "seed": seed,
        "data_sha256": frame_sha256(used),
        "versions": package_versions(),
    }
    if reuse_compiled and settings.sampler == "nutpie":
        prov["compile"] = "shared_data"
    key = _cache_key(prov)
    prov["cache_key"] = key
    path = Path(cache_dir) / f"{model_name}-{key[:16]}.nc" if cache_dir is not None else None
    if path is not None and path.exists():
        cached, saved = _read_saved_fit(path, key)
        if cached is not None:
            return Fit(
                model_name,
                cached,
                _diagnostics(cached, model_name, key, cache_dir),
                saved,
                reused=True,
                seconds=float(saved.get("sampling_seconds", 0.0)),
            )
    if path is not None and fitpool.active():
        # sampled by a worker process running this function with these arguments; it saves
        # the fit at ``path`` (same key), which is read back here
        progress.status(f"'{model_name}': fitting in a worker process")
        fitpool.run_in_worker(functools.partial(
            _fit_and_save, model_name, used, seed=seed, settings=run_settings, priors=priors,
            options=options, cache_dir=cache_dir, reuse_compiled=reuse_compiled, then=then))
        saved_idata, saved_prov = _read_saved_fit(path, key)
        if saved_idata is None:
            raise RuntimeError(f"{path}: the worker process did not save the fit")
        return Fit(model_name, saved_idata, _diagnostics(saved_idata, model_name, key, cache_dir),
                   saved_prov, reused=False, seconds=float(saved_prov.get("sampling_seconds", 0.0)))
    t0 = time.perf_counter()
    pm_model = module.build(used, priors=priors, **(options or {}))
    idata = _sample(pm_model, settings, seed, reuse_compiled="compile" in prov, label=model_name)
    seconds = time.perf_counter() - t0
    prov["sampling_seconds"] = round(seconds, 2)
    idata.attrs[PROVENANCE_ATTR] = json.dumps(prov, sort_keys=True)
    _text_stats_as_str(idata)
    idata.attrs[SEAL_ATTR] = seal.seal("fit", _sealed_payload(idata, idata.attrs[PROVENANCE_ATTR]))
    if path is not None:

        def _save(p: Path) -> None:
            arviz_ops.save(idata, p)

        atomic.write_with(path, _save)
    diagnostics = _diagnostics(idata, model_name, key, cache_dir)
    result = Fit(model_name, idata, diagnostics, prov, reused=False, seconds=seconds)
    if then is not None:
        then(result)
    return result


def _fit_and_save(model_name: str, data: pl.DataFrame, **kwargs: Any) -> None:
    """:func:`fit` in a worker process: it saves the fit in ``cache_dir``; nothing returns."""
    fit(model_name, data, **kwargs)


def _diagnostics(
    idata: arviz_ops.InferenceData, model_name: str, key: str, cache_dir: Path | str | None
) -> dict[str, Any]:
    """:func:`diagnose`, computed from the posterior itself on every run (about a second).

    Never read from a saved file: a diagnostics file can be edited without touching the
    draws, and a verdict's "finding" flag must come from the draws.
    """
    return diagnose(idata)


#: Attribute of a saved fit holding its provenance (JSON).
PROVENANCE_ATTR: Final = "selfmodel_provenance"
#: Attribute of a saved fit holding its seal (:func:`_sealed_payload` under the user's key).
SEAL_ATTR: Final = "selfmodel_seal"


def _values_bytes(values: np.ndarray) -> bytes:
    """The bytes of an array's values; text (names, messages) as UTF-8, however it is stored."""
    if values.dtype.kind in "biufc":
        return f"{values.dtype.str}/{values.shape}".encode() + values.tobytes()
    return f"text/{values.shape}".encode() + "\0".join(map(str, values.ravel())).encode()


def content_sha256(idata: arviz_ops.InferenceData) -> str:
    """SHA-256 of a fit's content: every group's variables and coordinates.

    Names, dimensions, dtypes, shapes and values (numbers as bytes, text as UTF-8), so
    draws, sampler statistics and which label each draw belongs to. Anyone can recompute
    it: what makes a saved fit trusted is its seal (:func:`_sealed_payload`).
    """
    h = hashlib.sha256()
    for group in sorted(idata.children):
        ds = idata[group].to_dataset()
        for kind, names in (("var", ds.data_vars), ("coord", ds.coords)):
            for name in sorted(str(v) for v in names):
                values = np.ascontiguousarray(ds[name].values)
                h.update(f"\0{group}/{kind}/{name}/{ds[name].dims}\0".encode())
                h.update(_values_bytes(values))
    return h.hexdigest()


def _sealed_payload(idata: arviz_ops.InferenceData, provenance: str) -> bytes:
    """What a fit's seal covers: its content (:func:`content_sha256`) and its provenance."""
    return f"{content_sha256(idata)}\0{provenance}".encode()


def _text_stats_as_str(idata: arviz_ops.InferenceData) -> None:
    """Store text sampler statistics (nutpie's divergence messages) as strings, in place.

    As Python objects (``None`` or text) netCDF would write them as numbers (``None`` -> NaN),
    so a saved fit would not read back as it was sampled.
    """
    if "sample_stats" not in idata.children:
        return
    ds = idata["sample_stats"].to_dataset()
    text = [str(v) for v in ds.data_vars if ds[v].dtype.kind == "O"]
    if text:
        idata["sample_stats"] = ds.assign({v: ds[v].astype(str) for v in text})


def note(message: str) -> None:
    """A one-line note on stderr (a cache that could not be used, and what was done)."""
    sys.stderr.write(f"selfmodel: note: {' '.join(message.split())}\n")


def _read_saved_fit(
    path: Path, key: str
) -> tuple[arviz_ops.InferenceData | None, dict[str, Any]]:
    """The saved fit at ``path`` if it is readable, sealed by this user and has this key.

    A truncated or corrupt file, or one whose seal does not verify (draws or provenance
    edited after sampling, even with a hash recomputed; a fit made by another user, on
    another machine or with no key file to check it by: :mod:`selfmodel.common.seal`), is
    not used: the fit is sampled again (and the file replaced), with a note saying why.
    """
    try:
        cached = arviz_ops.load(path)
        prov_text = cached.attrs.get(PROVENANCE_ATTR, "{}")
        saved = json.loads(prov_text)
        intact = seal.verify("fit", _sealed_payload(cached, prov_text), cached.attrs.get(SEAL_ATTR))
    except (OSError, ValueError, KeyError, RuntimeError, TypeError) as exc:
        note(f"{path}: saved fit unreadable ({type(exc).__name__}); sampling it again")
        return None, {}
    if not intact:
        note(f"{path}: saved fit not used: {seal.why_not()}; sampling it again")
        return None, {}
    if not isinstance(saved, dict) or saved.get("cache_key") != key or _cache_key(saved) != key:
        return None, {}
    return cached, saved


# --------------------------------------------------------------------------- derived results

#: Bump to invalidate every saved derived result (format or meaning changed).
#: 2: sealed with :func:`selfmodel.common.seal.seal` (was ``sha256``, a seal of another form).
DERIVED_CACHE_VERSION: Final = 2


@functools.cache
def _file_sha256(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def source_sha256(paths: Iterable[Path | str]) -> str:
    """SHA-256 of the named source files' bytes (in the order given).

    Part of the key of a derived result, so that editing the code that computes it (or the
    model it rebuilds) invalidates the saved result.
    """
    h = hashlib.sha256()
    for path in paths:
        h.update(str(Path(path).name).encode())
        h.update(_file_sha256(str(Path(path).resolve())).encode())
    return h.hexdigest()


def _json_bytes(value: Any) -> bytes:
    """The canonical JSON of a saved result (what its seal covers)."""
    return json.dumps(value, sort_keys=True).encode()


def cached_json(
    cache_dir: Path | str | None,
    stem: str,
    key_parts: Mapping[str, Any],
    compute: Callable[[], Any],
) -> Any:
    """Return ``compute()``, saved as JSON in ``cache_dir`` and reused while its key matches.

    Parameters
    ----------
    cache_dir
        Folder of saved fits; ``None`` computes every time and saves nothing.
    stem
        File name prefix, e.g. ``"scale-loo"``; the file is ``<stem>-<key[:16]>.json``.
    key_parts
        Everything the result depends on (JSON-serialisable: the fit's ``cache_key``, the
        function's arguments, a hash of the data, :func:`source_sha256` of the code,
        :func:`package_versions`). Their SHA-256 (with :data:`DERIVED_CACHE_VERSION`) is
        the key; a saved file is used only if it records the same full key.
    compute
        Computes the result (JSON-serialisable: dicts, lists, str, float, int, bool, None).

    Returns
    -------
    Any
        The result as read back from its JSON text (also on the first call), so a reused
        result and a computed one are identical. A missing, unreadable or corrupt file, or
        one with another key, is recomputed and overwritten; a result JSON cannot hold is
        returned unsaved.
    """
    if cache_dir is None:
        return compute()
    payload = {"version": DERIVED_CACHE_VERSION, **key_parts}
    key = hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()
    path = Path(cache_dir) / f"{stem}-{key[:16]}.json"
    if path.exists():
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
            if not (isinstance(saved, dict) and saved.get("key") == key and "value" in saved):
                note(f"{path}: saved result fails its content check; computing it again")
            elif not seal.verify("derived", _json_bytes(saved["value"]), saved.get("seal")):
                note(f"{path}: saved result not used: {seal.why_not()}; computing it again")
            else:
                return saved["value"]
        except (OSError, ValueError) as exc:
            note(f"{path}: saved result unreadable ({type(exc).__name__}); computing it again")
    value = compute()
    try:
        text = json.dumps({"key": key, "value": value,
                           "seal": seal.seal("derived", _json_bytes(value))})
    except (TypeError, ValueError):
        return value
    try:
        atomic.write_text(path, text)
    except OSError:
        pass  # a read-only cache folder only costs the saving
    return json.loads(text)["value"]
