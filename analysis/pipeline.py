"""The stages tied together: ingest -> cells -> describe -> fit -> decide -> results -> report.

Each stage writes its output into ``out`` (atomically) and the next reads it; the report
reads only saved results. ``run`` is what ``selfmodel run`` calls.
"""

from __future__ import annotations

import json
import platform
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from analysis import atomic, describe
from analysis.cells import build_cells, join_registry, scale_values, to_item_cells, to_pair_cells
from analysis.contract import SCALE_COLUMNS, InputError
from analysis.fit import Fit, SamplerSettings, fit
from analysis.frequentist import crosscheck_table, run_frequentist
from analysis.hypotheses import DEFAULT_HYPOTHESES_FILE, DecisionRule, load_hypotheses
from analysis.ingest import IngestResult, ingest, write_ingest
from analysis.registry import load_registry
from analysis.results import (
    accuracy_points,
    assemble,
    diagnostics_section,
    population_curves,
    rounded,
    scale_effect,
    truth_comparison,
    variance_components,
)
from analysis.skill import calibration, skill_table

RECORD_SUFFIXES = (".jsonl", ".ndjson", ".csv", ".parquet")
REGISTRY_NAMES = ("registry.csv", "registry.toml")
REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO_ROOT / "data_raw"
REPORT_QMD = REPO_ROOT / "reports" / "self_modeling.qmd"

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Inputs:
    """Resolved inputs: record files, registry and (for simulated data) the truth."""

    record_paths: list[Path]
    registry: Path | None
    truth: Path | None


@dataclass
class RunConfig:
    """Everything that determines a run's results."""

    paths: list[Path] = field(default_factory=lambda: [DEFAULT_DATA])
    registry: Path | None = None
    out: Path = Path("build")
    scale: str = "params"
    seed: int = 20261130
    mapping: dict[str, str] = field(default_factory=dict)
    config: Path | None = None
    rule: DecisionRule = field(default_factory=DecisionRule)
    sampler: SamplerSettings = field(default_factory=SamplerSettings)
    report: bool = True
    use_cache: bool = True
    models: tuple[str, ...] = ("scale", "sdt", "pooled", "within_between")
    power: bool = True
    hypotheses: Path = DEFAULT_HYPOTHESES_FILE
    robustness: bool = True


def display_path(p: Path) -> Path:
    """``p`` relative to the working directory when it lies inside it (stable results.json)."""
    try:
        return p.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return p


def resolve_inputs(paths: Sequence[Path | str], registry: Path | str | None) -> Inputs:
    """Expand folders; a folder's top-level ``registry.csv``/``.toml`` is its registry.

    A ``truth.json`` beside the records (simulated data) is picked up for the truth
    comparison. Registry files are never read as records.
    """
    record_paths: list[Path] = []
    found_registry: Path | None = Path(registry) if registry else None
    truth: Path | None = None
    for raw in paths:
        p = Path(raw)
        if not p.exists():
            raise InputError(f"{p}: no such file or folder. Check the path.")
        if p.is_dir():
            for name in REGISTRY_NAMES:
                if (p / name).is_file() and found_registry is None:
                    found_registry = p / name
            if (p / "truth.json").is_file():
                truth = p / "truth.json"
            files = sorted(
                f
                for f in p.rglob("*")
                if f.is_file()
                and f.suffix.lower() in RECORD_SUFFIXES
                and f.name not in REGISTRY_NAMES
                and not any(part.startswith(".") for part in f.relative_to(p).parts)
            )
            if not files:
                raise InputError(
                    f"{p}: folder has no record files ({', '.join(RECORD_SUFFIXES)}). Point to your logs."
                )
            record_paths.extend(files)
        else:
            record_paths.append(p)
    return Inputs(
        [display_path(p) for p in record_paths],
        display_path(found_registry) if found_registry else None,
        display_path(truth) if truth else None,
    )


def _models_table(
    cells: pl.DataFrame, registry: pl.DataFrame | None, scale: str
) -> list[dict[str, Any]]:
    per_model = (
        cells.group_by("model")
        .agg(
            pl.col("n_total").sum(),
            pl.col("family").first(),
            pl.col("scale_raw").first(),
            pl.col("params_b").first(),
            pl.col("active_params_b").first(),
            pl.col("capability").first(),
        )
        .sort("model")
    )
    reg_models = set(registry["model"].to_list()) if registry is not None else set()
    return [
        {
            "model": r["model"],
            "family": r["family"],
            "params_b": r["params_b"],
            "active_params_b": r["active_params_b"],
            "capability": r["capability"],
            "records": int(r["n_total"]),
            "in_registry": r["model"] in reg_models,
            "in_scale_fit": r["scale_raw"] is not None,
        }
        for r in per_model.iter_rows(named=True)
    ]


def run_ingest(cfg: RunConfig, inputs: Inputs) -> IngestResult:
    """Stage 1: read, validate and account for every record; write OUT/records.parquet etc."""
    result = ingest(
        inputs.record_paths,
        mapping=cfg.mapping or None,
        config=cfg.config,
        registry=inputs.registry,
    )
    write_ingest(result, cfg.out)
    return result


def run_fit(
    cells: pl.DataFrame, cfg: RunConfig, progress: Progress
) -> tuple[Fit | None, pl.DataFrame, str | None]:
    """Stage 3: fit the scale model to the cells whose model has the scale variable."""
    usable = cells.filter(pl.col("x").is_not_null() & (pl.col("n") > 0))
    n_models = usable["model"].n_unique()
    if n_models < cfg.rule.min_models:
        return (
            None,
            usable,
            (
                f"only {n_models} model(s) have '{SCALE_COLUMNS[cfg.scale]}' in the registry; "
                f"at least {cfg.rule.min_models} are needed to estimate a slope"
            ),
        )
    if usable["x"].n_unique() < 2:
        return None, usable, "every model has the same value of the scale variable"
    progress(
        f"sampling 'scale' model: {usable.height} cells, {n_models} models, "
        f"{cfg.sampler.chains} chains x {cfg.sampler.draws} draws ({cfg.sampler.sampler})"
    )
    f = fit(
        "scale",
        usable,
        seed=cfg.seed,
        settings=cfg.sampler,
        cache_dir=(cfg.out / "fits") if cfg.use_cache else None,
    )
    progress("reused saved fit (inputs unchanged)" if f.reused else f"sampled in {f.seconds:.1f} s")
    return f, usable, None


def _robustness(
    cfg: RunConfig,
    hypotheses: list[Any],
    fitted: Fit | None,
    usable: pl.DataFrame,
    zoo: Any,
    other: Mapping[str, pl.DataFrame],
    records: pl.DataFrame,
    registry: pl.DataFrame | None,
    reason: str | None,
    say: Progress,
) -> dict[str, Any]:
    """Stage 4b: hypotheses, LOO without the scale term, sensitivity, calibration study."""
    from analysis.robustness import (
        calibration_study,
        evidence_from,
        hypotheses_section,
        robustness_refits,
    )
    from analysis.zoo import sdt_cells

    fits: dict[str, Fit] = dict(zoo.fits) if zoo is not None else {}
    if fitted is not None:
        fits["scale"] = fitted
    data_for = {
        name: other.get(name, sdt_cells(usable) if name == "sdt" else usable) for name in fits
    }
    why = reason or "the scale model was not fitted"
    not_fitted = {name: f"model '{name}' was not fitted ({why})" for name in cfg.models}
    if zoo is not None:
        for name, entry in zoo.summary.items():
            if isinstance(entry, dict) and entry.get("fitted") is False:
                not_fitted[name] = f"model '{name}' was not fitted: {entry.get('reason')}"
    say(f"declared hypotheses ({display_path(cfg.hypotheses)})")
    section = hypotheses_section(
        hypotheses, display_path(cfg.hypotheses), evidence_from(fits, data_for, not_fitted)
    )
    sensitivity = None
    if fitted is not None and cfg.robustness:
        loo, sensitivity = robustness_refits(
            main=fitted,
            usable=usable,
            records=records,
            registry=registry,
            scale=cfg.scale,
            seed=cfg.seed,
            settings=cfg.sampler,
            rule=cfg.rule,
            cache_dir=(cfg.out / "fits") if cfg.use_cache else None,
            progress=say,
        )
        section["scale_term_loo"] = loo
    return {
        "hypotheses": rounded(section),
        "sensitivity": rounded(sensitivity) if sensitivity else None,
        "calibration_study": rounded(calibration_study()),
    }


def run(
    cfg: RunConfig, *, progress: Progress | None = None, argv: Sequence[str] | None = None
) -> dict[str, Any]:
    """Run the whole pipeline; returns the results dict (also written to OUT/results.json)."""
    say: Progress = progress or (lambda _msg: None)
    t0 = time.perf_counter()
    started = datetime.now(UTC).isoformat(timespec="seconds")
    hypotheses = load_hypotheses(cfg.hypotheses)  # a bad file stops the run before any work
    cfg.out.mkdir(parents=True, exist_ok=True)
    inputs = resolve_inputs(cfg.paths, cfg.registry)
    say(f"ingesting {len(inputs.record_paths)} file(s)")
    ing = run_ingest(cfg, inputs)
    s = ing.summary
    say(
        f"records read {s['records_read']}, used {s['records_used']}, "
        f"quarantined {s['records_quarantined']}, duplicate {s['records_duplicate']}"
    )
    registry = load_registry(inputs.registry) if inputs.registry else None
    cells = build_cells(ing.records, registry, scale=cfg.scale)
    atomic.write_parquet(cfg.out / "cells.parquet", cells)
    tasks = sorted(cells["task"].unique().to_list())
    fitted, usable, reason = run_fit(cells, cfg, say)
    excluded = sorted(set(cells["model"].to_list()) - set(usable["model"].to_list()))
    models_per_task = {t: usable.filter(pl.col("task") == t)["model"].n_unique() for t in tasks}
    effect = scale_effect(
        fitted,
        scale=cfg.scale,
        rule=cfg.rule,
        n_models=usable["model"].n_unique(),
        tasks=tasks,
        excluded_models=excluded,
        reason=reason,
        models_per_task=models_per_task,
    )
    zoo = None
    companions = [m for m in cfg.models if m != "scale"]
    other: dict[str, pl.DataFrame] = {}
    if fitted is not None and companions:
        from analysis.zoo import fit_zoo

        if "items" in companions:
            items = scale_values(join_registry(to_item_cells(ing.records), registry), cfg.scale)
            other["items"] = items.filter(pl.col("x").is_not_null() & (pl.col("n") > 0))
        if "self_vs_other" in companions:
            other["self_vs_other"] = to_pair_cells(ing.records).filter(pl.col("n") > 0)
        zoo = fit_zoo(
            usable,
            names=["scale", *companions],
            seed=cfg.seed,
            settings=cfg.sampler,
            rule=cfg.rule,
            tasks=tasks,
            cache_dir=(cfg.out / "fits") if cfg.use_cache else None,
            progress=say,
            main_fit=fitted,
            other_data=other,
        )
    say("frequentist cross-checks (GLM, wild cluster bootstrap, two-stage, permutation)")
    freq = run_frequentist(cells, seed=cfg.seed)
    truth = json.loads(inputs.truth.read_text()) if inputs.truth else None
    fit_info = None
    if fitted is not None:
        fit_info = {k: v for k, v in fitted.provenance.items() if k != "sampling_seconds"}
        fit_info["file"] = f"fits/{fitted.model}-{fitted.provenance['cache_key'][:16]}.nc"
        fit_info["cells"] = usable.height
    results = assemble(
        ingest_summary=s,
        models=_models_table(cells, registry, cfg.scale),
        tasks=describe.by_task(cells),
        by_model_task=describe.by_model_task(cells),
        effect=effect,
        diagnostics=diagnostics_section(fitted),
        fit_info=fit_info,
        curves=population_curves(fitted, usable, hdi_prob=cfg.rule.hdi_prob) if fitted else None,
        points=accuracy_points(fitted, usable) if fitted else None,
        truth=truth_comparison(
            truth, effect, ((zoo.summary.get("sdt") or {}).get("sensitivity") if zoo else None)
        )
        if truth
        else None,
        skill=skill_table(ing.records),
        calibration=calibration(ing.records),
        frequentist=freq,
        crosscheck=crosscheck_table(freq, effect),
        zoo=zoo.summary if zoo else None,
        settings={
            "scale": cfg.scale,
            "seed": cfg.seed,
            "rule": cfg.rule.as_dict(),
            "sampler": asdict(cfg.sampler),
            "inputs": [str(p) for p in inputs.record_paths],
            "registry": str(inputs.registry) if inputs.registry else None,
            "mapping": cfg.mapping,
        },
    )
    results["variance_components"] = rounded(variance_components(fitted)) if fitted else None
    if results.get("sdt_effect") and zoo is not None and "sdt" in zoo.fits:
        from analysis.zoo import sdt_cells

        results["sdt_effect"]["curves"] = rounded(
            population_curves(
                zoo.fits["sdt"],
                sdt_cells(usable),
                hdi_prob=cfg.rule.hdi_prob,
                intercept="alpha_dprime",
                slope="dprime_slope_task",
                link="identity",
            )
        )
    results.update(
        _robustness(cfg, hypotheses, fitted, usable, zoo, other, ing.records, registry, reason, say)
    )
    results["design_sensitivity"] = None
    if fitted is not None and cfg.power:
        from analysis.power import mde_from_fit

        say("what this design could detect (power simulation from the fitted variance components)")
        results["design_sensitivity"] = rounded(
            mde_from_fit(results, cache_dir=(cfg.out / "fits") if cfg.use_cache else None)
        )
    atomic.write_json(cfg.out / "results.json", results)
    say(f"scale effect: {effect['decision']}  -> {cfg.out / 'results.json'}")
    run_info = {
        "started_utc": started,
        "seconds_total": None,
        "sampling_seconds": round(fitted.seconds, 2) if fitted else None,
        "fit_reused": bool(fitted and fitted.reused),
        # per model: sampling (and compile) seconds of the fit as first sampled (timings are
        # kept out of results.json, which must not depend on the machine's speed)
        "model_seconds": {
            name: f.provenance.get("sampling_seconds")
            for name, f in sorted(
                ((zoo.fits if zoo else {}) | ({"scale": fitted} if fitted else {})).items()
            )
        },
        "command": " ".join(argv) if argv is not None else " ".join(sys.argv),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
    }
    run_info["seconds_to_results"] = round(time.perf_counter() - t0, 2)
    atomic.write_json(cfg.out / "run.json", run_info)
    if cfg.report:
        from analysis.report import render_report

        say("rendering report")
        render_report(cfg.out, fmt="html", progress=say)
        run_info["seconds_total"] = round(time.perf_counter() - t0, 2)
        atomic.write_json(cfg.out / "run.json", run_info)
    return results


def load_results(out: Path | str) -> Mapping[str, Any]:
    """Read OUT/results.json (for ``selfmodel report``)."""
    path = Path(out) / "results.json"
    if not path.is_file():
        raise InputError(f"{path}: no results. Run 'selfmodel run --out {out}' first.")
    return json.loads(path.read_text())
