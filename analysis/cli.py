"""Command line: ``selfmodel run | ingest | import | describe | fit | report | simulate``.

Exit 0 on success; exit 2 with one line on stderr for unusable input or arguments; never a
traceback for a user's mistake. Long steps show progress (rich, on stderr).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from selfmodel.common import atomic, outputs, progress, rerun
from selfmodel.common.paths import DEFAULT_DATA, DEFAULT_HYPOTHESES_FILE, DEFAULT_SEED
from selfmodel.common.toml_errors import key_line
from selfmodel.decisions.status import EXPLORATORY, status_lines
from selfmodel.decisions.verdict import NOT_DECIDED, failed_gate
from selfmodel.fitting.fitpool import default_jobs
from selfmodel.fitting.settings import SamplerSettings
from selfmodel.pipeline.reduce_command import add_reduce_parser
from selfmodel.records.contract import SCALE_COLUMNS, InputError
from selfmodel.records.importers.mapping.records_apply import load_transform, without_join_file
from selfmodel.records.importers.mapping.records_spec import load_records_mapping
from selfmodel.records.importers.preview import ingest_preview_text, preview_text
from selfmodel.records.importers.registry import get as get_importer
from selfmodel.records.importers.registry import importers
from selfmodel.records.ingest import ingest, parse_map_options, write_ingest
from selfmodel.records.ingest.discover import resolve_inputs
from selfmodel.records.registry import load_registry

#: The sampler settings' declared defaults, the CLI's defaults.
SAMPLER = SamplerSettings()

# Only what every command loads anyway sits up here (the reduce subcommand's parser already
# brings ingest, registry and atomic). The imports inside the command functions are kept
# there on purpose: models, fit, hypotheses, pipeline and power load PyMC/ArviZ (about 2 s),
# describe and simulate load SciPy, cells NumPy, report the renderer and the importers
# their mapping code -- light commands (--help, ingest, import, reduce) must not pay for them.


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as one line and exit 2."""

    def error(self, message: str) -> NoReturn:
        command = " ".join(["selfmodel", *self.prog.split()[1:]])
        sys.stderr.write(f"selfmodel: error: {message}. See '{command} --help'.\n")
        raise SystemExit(2)


def _progress(quiet: bool = False):
    """The step lines on stderr (nothing with ``--quiet``); a live progress line is ended first."""
    if quiet:
        return lambda _msg: None
    from rich.console import Console

    console = Console(stderr=True, highlight=False)

    def say(msg: str) -> None:
        rep = progress.current()
        if rep is not None:
            rep.end_line()
        console.print(f"[dim]selfmodel[/dim] {msg}", markup=True, soft_wrap=True)

    return say


def _quiet_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--quiet",
        action="store_true",
        help="no progress on stderr (steps, sampling, refits, simulation); errors still show",
    )


def _common_inputs(p: argparse.ArgumentParser) -> None:
    p.add_argument("--registry", type=Path, help="model registry (CSV or TOML) joined on 'model'")
    p.add_argument(
        "--map",
        action="append",
        default=[],
        metavar="CANON=COLUMN",
        help="map a column of your logs to a canonical one, e.g. item_id=question_id",
    )
    p.add_argument("--config", type=Path, help="TOML ingest config ([map], tasks, [defaults])")
    p.add_argument(
        "--mapping",
        type=Path,
        metavar="FILE",
        help='records mapping (TOML, format = "records"): rename columns, rescale a declared '
        "confidence scale, derive the self-prediction, join an answer key (docs/mapping.md)",
    )


def _preview_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--preview",
        action="store_true",
        help="print the first mapped records and the row accounting; write nothing, fit nothing",
    )


def _jobs(text: str) -> int:
    """``--jobs``: a whole number of at least 1."""
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"--jobs takes a whole number of at least 1, not '{text}'")
    return n


def _run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--scale",
        choices=list(SCALE_COLUMNS),
        default="params",
        help="scale variable: total parameters, active parameters or capability",
    )
    p.add_argument("--seed", type=int, default=DEFAULT_SEED, help="sampler seed")
    p.add_argument("--rope", type=float, default=None,
                   help="region of practical equivalence (+/-; default: the hypotheses file's ROPE "
                        "for the decided slopes, else 0.1); given, it overrides the file's ROPE of those")
    p.add_argument("--draws", type=int, default=SAMPLER.draws,
                   help="draws per chain after tuning (default %(default)s)")
    p.add_argument("--tune", type=int, default=SAMPLER.tune,
                   help="tuning steps per chain (default %(default)s)")
    p.add_argument("--chains", type=int, default=SAMPLER.chains,
                   help="chains (default %(default)s)")
    p.add_argument(
        "--jobs", type=_jobs, default=None, metavar="N",
        help="fits sampled at once, each in a worker process (default: the CPUs, at most 4; "
        "1: every fit in this process, one after the other); results do not depend on it",
    )
    p.add_argument(
        "--preset",
        choices=("exploratory",),
        default=None,
        help="exploratory: 300 draws, 300 tuning, 2 chains (replaces --draws/--tune/--chains); "
        "results and report say 'exploratory settings: not for findings' first",
    )
    p.add_argument(
        "--allow-low-yield",
        action="store_true",
        help="go on when fewer than half the records read are kept (the run stops by default; "
        "the report then says so first)",
    )
    p.add_argument(
        "--no-cache", action="store_true",
        help="refit even when a matching fit is saved, and run even when nothing changed"
    )
    p.add_argument(
        "--no-power", action="store_true", help="skip the 'what this study could detect' simulation"
    )
    p.add_argument(
        "--no-contrasts", action="store_true",
        help="skip the contrast model (fitted when the scale model cannot be, or with conditions)"
    )
    p.add_argument(
        "--calibration-contrasts", action="store_true",
        help="confidence calibration per model (and condition or task) with item-bootstrap intervals and "
        "decided contrasts, beside any model, closed models too (by conditions when the records "
        "have two or more, else tasks, else models; --calibration-by chooses)"
    )
    p.add_argument(
        "--calibration-by", choices=("model", "condition", "task"), default=None,
        help="with --calibration-contrasts (implied): groups per model, per model x condition "
        "or per model x task"
    )
    p.add_argument(
        "--hypotheses",
        type=Path,
        default=None,
        metavar="FILE",
        help="declared hypotheses (TOML; default: hypotheses.toml of the package)",
    )
    p.add_argument(
        "--no-robustness",
        action="store_true",
        help="skip the robustness refits (LOO without the scale term, priors x0.5/x2, other scale variables)",
    )
    p.add_argument(
        "--holdout",
        choices=("model", "family"),
        default=None,
        help="also compare the models with and without the scale term by leaving each model "
        "(or family) out and refitting both (two fits per group: slow)",
    )
    p.add_argument(
        "--models",
        default=None,
        help="comma-separated models to fit (default: scale,sdt,pooled,within_between, which is "
        "models.DEFAULT_MODELS; scale always; items, self_vs_other on request)",
    )
    _quiet_option(p)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (also used to document the CLI)."""
    parser = _Parser(prog="selfmodel", description="Statistics of LLM self-prediction.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("run", help="whole pipeline: ingest, describe, fit, decide, report")
    p.add_argument(
        "paths", nargs="*", type=Path, help="record files or folders (default: data_raw/)"
    )
    _common_inputs(p)
    p.add_argument("--out", type=outputs.out_folder, default=Path("build"))
    _run_options(p)
    p.add_argument("--no-report", action="store_true", help="stop after results.json")
    _preview_option(p)

    p = sub.add_parser(
        "ingest", help="validate records: OUT/records.parquet, quarantine.parquet, ingest.json"
    )
    p.add_argument("paths", nargs="+", type=Path)
    _common_inputs(p)
    p.add_argument("--out", type=outputs.out_folder, help="output folder (required unless --preview)")
    _preview_option(p)

    _import_parsers(sub.add_parser(
        "import",
        help="convert a foreign log format into canonical records",
        description="Convert a foreign log format into canonical records (OUT/records.parquet) "
        "and a model registry. One subcommand per format; 'selfmodel import FORMAT --help' "
        "lists its options.",
    ))


    add_reduce_parser(sub)  # selfmodel reduce (DuckDB/Spark)

    p = sub.add_parser(
        "describe", help="per model x task accuracy, baselines and rates (no fitting)"
    )
    p.add_argument("paths", nargs="*", type=Path)
    _common_inputs(p)
    p.add_argument("--out", type=outputs.out_folder, default=Path("build"))

    p = sub.add_parser("fit", help="ingest and fit; write results.json without the report")
    p.add_argument("paths", nargs="*", type=Path)
    _common_inputs(p)
    p.add_argument("--out", type=outputs.out_folder, default=Path("build"))
    p.add_argument("--model", default=None, help="model from models/ (default: scale)")
    _run_options(p)

    p = sub.add_parser("report", help="render the report from OUT/results.json (never refits)")
    p.add_argument("--out", type=outputs.out_folder, default=Path("build"))
    p.add_argument("--format", choices=["html", "pdf"], default="html")
    _quiet_option(p)

    p = sub.add_parser(
        "simulate", help="draw a data set with known truth (records.csv, registry.csv, truth.json)"
    )
    p.add_argument("--out", type=outputs.out_folder, required=True)
    p.add_argument("--seed", type=int, default=DEFAULT_SEED)

    _power_options(
        sub.add_parser(
            "power",
            help="what a design can detect: decision probabilities by true slope, minimum detectable slope",
        )
    )
    return parser


def _import_parsers(p: argparse.ArgumentParser) -> None:
    formats = p.add_subparsers(dest="format", required=True, parser_class=_Parser,
                               metavar="FORMAT")
    for importer in importers():  # every registered importer, ours and plug-ins
        q = formats.add_parser(importer.name, help=importer.help,
                               description=importer.description)
        q.add_argument("src", type=Path, help=importer.src)
        if importer.mapping:
            q.add_argument("--mapping", type=Path, help="TOML mapping (format, task, [fields] ...)")
        q.add_argument("--out", type=outputs.out_folder, help="folder for records and registry (required unless --preview)")
        q.add_argument(
            "--preview",
            action="store_true",
            help="print the first mapped records, counts per model and task and a registry "
            "template; write nothing",
        )


def _power_options(p: argparse.ArgumentParser) -> None:
    src = p.add_mutually_exclusive_group()
    src.add_argument(
        "--design",
        type=Path,
        help="design TOML (families, tasks, repeats, variance, rule); default: the design of data_raw/",
    )
    src.add_argument(
        "--template",
        type=Path,
        nargs="+",
        metavar="RECORDS",
        help="take families, sizes, tasks and items from existing records (with --registry)",
    )
    p.add_argument("--registry", type=Path, help="model registry of the --template records")
    p.add_argument(
        "--results",
        type=Path,
        help="results.json of a fit to the template data: simulate with its fitted variance components",
    )
    p.add_argument(
        "--scale",
        choices=list(SCALE_COLUMNS),
        default="params",
        help="scale variable of the template (as for 'run')",
    )
    p.add_argument(
        "--slopes",
        type=float,
        nargs="+",
        metavar="SLOPE",
        help="true slopes to simulate (default: 0 0.1 0.2 0.3 0.4 0.5 0.6 0.8)",
    )
    p.add_argument(
        "--sims", type=int, default=500, help="simulated data sets per slope (default 500)"
    )
    p.add_argument(
        "--sweep-sims",
        type=int,
        default=150,
        help="data sets per design of the models-vs-items sweep; 0 skips the sweep (default 150)",
    )
    p.add_argument("--seed", type=int, default=DEFAULT_SEED)
    p.add_argument("--out", type=outputs.out_folder, required=True)
    _quiet_option(p)


def _model_list(spec: str | None, extra: str | None) -> tuple[str, ...]:
    from selfmodel.models import DEFAULT_MODELS, REGISTRY, get, verdict

    main = verdict().NAME
    extra = extra or main
    names = [n.strip() for n in (spec or ",".join(DEFAULT_MODELS)).split(",") if n.strip()]
    if extra not in names:
        names.append(extra)
    for n in names:
        try:
            get(n)
        except KeyError as e:
            raise InputError(str(e.args[0])) from None
    names = [main, *[n for n in names if n != main]]
    assert set(names) <= set(REGISTRY)
    return tuple(dict.fromkeys(names))


def run_config(args: argparse.Namespace, *, report: bool):
    """The :class:`RunConfig` of parsed ``run``/``fit`` options (also used by ``selfmodel.api``)."""
    from selfmodel.decisions.hypotheses import DecisionRule
    from selfmodel.pipeline.stages import RunConfig

    if getattr(args, "model", None) is not None:
        from selfmodel.models import get

        try:
            get(args.model)
        except KeyError as e:
            raise InputError(str(e.args[0])) from None
    sampler = (SamplerSettings(draws=EXPLORATORY["draws"], tune=EXPLORATORY["tune"],
                                 chains=EXPLORATORY["chains"]) if args.preset == "exploratory"
               else SamplerSettings(draws=args.draws, tune=args.tune, chains=args.chains))
    return RunConfig(
        paths=list(args.paths) or [DEFAULT_DATA],
        registry=args.registry,
        out=args.out,
        scale=args.scale,
        seed=args.seed,
        mapping=parse_map_options(args.map),
        config=args.config,
        rule=DecisionRule() if args.rope is None else DecisionRule(rope=args.rope),
        rope_given=args.rope is not None,
        sampler=sampler,
        report=report,
        use_cache=not args.no_cache,
        models=_model_list(args.models, getattr(args, "model", None)),
        power=not args.no_power,
        contrasts=not getattr(args, "no_contrasts", False),
        confidence_calibration_contrasts=(getattr(args, "calibration_by", None)
                                          or ("auto" if getattr(args, "calibration_contrasts", False) else None)),
        hypotheses=args.hypotheses or DEFAULT_HYPOTHESES_FILE,
        robustness=not args.no_robustness,
        holdout=getattr(args, "holdout", None),
        jobs=getattr(args, "jobs", None) or default_jobs(),
        study_mapping=getattr(args, "mapping", None),
        allow_low_yield=bool(getattr(args, "allow_low_yield", False)),
        preset=getattr(args, "preset", None),
    )


def _rerun_key(args: argparse.Namespace) -> str:
    """:func:`selfmodel.common.rerun.run_key` of this command: its options and the files it reads."""
    # --jobs changes how long a run takes, not its results
    options = {k: v for k, v in sorted(vars(args).items()) if k not in ("handler", "jobs")}
    options["cwd"] = os.getcwd()  # results name the inputs relative to it
    files = [*(args.paths or [DEFAULT_DATA]), args.hypotheses or DEFAULT_HYPOTHESES_FILE,
             *(p for p in (args.registry, args.config, args.mapping) if p is not None)]
    if args.mapping is not None:  # the answer key a mapping joins is read too

        files += list(load_records_mapping(args.mapping).join_files)
    return rerun.run_key(options, files)


def _render_report(out: Path, fmt: str, say) -> Path:
    """Render from ``out`` into a staging folder, then publish (holding the lock throughout)."""
    from selfmodel.report.document import render_report

    if not (out / "results.json").is_file():  # "no results" in its words; no lock file made
        return render_report(out, fmt=fmt, progress=say)  # type: ignore[arg-type]
    with outputs.staged(out, say, writes=outputs.report_writes(fmt)) as into:
        return render_report(out, fmt=fmt, progress=say, into=into)  # type: ignore[arg-type]


def inputs_apart(args: argparse.Namespace):
    """Stop with one line when an input of ``run``/``fit``/``ingest``/``describe`` is in ``--out``.

    The paths given, and the record files and registry found in folders (an ``--out`` inside
    an input folder holding records that would be read, then replaced). Returns the inputs
    found (:func:`selfmodel.records.ingest.discover.resolve_inputs`).
    """
    given = [*(args.paths or [DEFAULT_DATA]), args.registry, args.config,
             getattr(args, "mapping", None), getattr(args, "hypotheses", None)]
    outputs.check_apart(args.out, given)
    inputs = resolve_inputs(list(args.paths) or [DEFAULT_DATA], args.registry)
    outputs.check_apart(args.out, [*inputs.record_paths, inputs.registry, inputs.truth])
    return inputs


def _run(args: argparse.Namespace, argv: Sequence[str], say) -> int:
    """``selfmodel run`` / ``fit``: the pipeline, or the saved outputs when nothing changed."""
    report = args.command == "run" and not args.no_report
    outputs.check_out(args.out, outputs.RUN, say)  # before the numerical stack is imported
    inputs_apart(args)
    try:
        key = None if args.no_cache else _rerun_key(args)
    except OSError:  # an unreadable input: the pipeline reports it in its own words
        key = None
    results = rerun.unchanged(args.out, key) if key is not None else None
    if results is not None:
        say(f"nothing this run reads has changed since the run that wrote {args.out / 'results.json'}: "
            "its results are reused (--no-cache runs everything again)")
        if report and not rerun.report_is_current(args.out):
            say("rendering report")
            _render_report(args.out, "html", say)
    else:
        from selfmodel.pipeline.stages import run

        cfg = run_config(args, report=report)
        # the rerun record is made from the published outputs, before the lock is released
        then = None if key is None else (lambda into: rerun.record(args.out, key, into=into))
        with outputs.staged(args.out, say, then=then) as cfg.out:  # swapped in together
            rerun.forget(cfg.out)  # an interrupted run leaves args.out (and its key) as it was
            results = run(cfg, progress=outputs.relabel(say, cfg.out, args.out),
                          argv=["selfmodel", *argv])

    for status in results.get("status") or status_lines(results):
        print(status["text"])  # low yield, exploratory settings, nothing fitted ... first
    eff = results["scale_effect"]
    gate = failed_gate(results) if eff.get("decision") != "not_estimable" else None
    # a fit that failed its gate decides nothing (issue 28.4): its estimate only, as computed
    line = f"scale effect ({eff['units']}): {NOT_DECIDED if gate else eff['decision']}"
    if eff.get("mean") is not None:
        line += (f"{'; as computed' if gate else ''}, mean {eff['mean']:.3f}, "
                 f"{eff['hdi_prob']:.0%} HDI [{eff['hdi_low']:.3f}, {eff['hdi_high']:.3f}]")
    if not results["diagnostics"]["passed"] and not gate:
        line += "  (not a finding)"
    print(line)
    if report:
        print(f"report: {args.out / 'report.html'}")
    return 0


def _dispatch(args: argparse.Namespace, argv: Sequence[str]) -> int:
    quiet = bool(getattr(args, "quiet", False))
    with progress.reporting(progress.make_reporter(quiet=quiet)):
        return _dispatch_command(args, argv, _progress(quiet))


def _dispatch_command(args: argparse.Namespace, argv: Sequence[str], say) -> int:
    if getattr(args, "handler", None) is not None:  # subcommands defined in their own module
        return args.handler(args, say)
    if args.command in ("run", "fit") and getattr(args, "preview", False):
        return _ingest(args, say)
    if args.command in ("run", "fit"):
        return _run(args, argv, say)
    if args.command == "ingest":
        return _ingest(args, say)
    if args.command == "import":
        return _import(args, say)
    if args.command == "power":
        return _power(args, say)
    if args.command == "describe":
        outputs.check_out(args.out, outputs.DESCRIBE, say)  # before loading SciPy
        from selfmodel.analyses import describe
        from selfmodel.records.cells import build_cells

        inputs = inputs_apart(args)
        res = _ingest_inputs(args, inputs, say)
        reg = load_registry(inputs.registry) if inputs.registry else None
        cells = build_cells(res.records, reg)
        rows = describe.by_model_task(cells)
        with outputs.staged(args.out, say, writes=outputs.DESCRIBE) as folder:
            atomic.write_json(folder / "describe.json", rows)
        _print_table(rows)
        return 0
    if args.command == "report":
        print(f"report: {_render_report(args.out, args.format, say)}")
        return 0
    if args.command == "simulate":
        outputs.check_out(args.out, outputs.SIMULATE, say)  # before loading SciPy
        from selfmodel.records.simulate import write_dataset

        with outputs.staged(args.out, say, writes=outputs.SIMULATE) as folder:
            paths = write_dataset(folder, seed=args.seed)
        print(" ".join(str(args.out / p.name) for p in paths.values()))
        return 0
    raise AssertionError(args.command)  # pragma: no cover


def _ingest_inputs(args: argparse.Namespace, inputs, say=None):
    """Ingest the inputs with the command's ``--map``, ``--config`` and ``--mapping``."""
    transform = None
    if getattr(args, "mapping", None) is not None:
        transform = load_transform(args.mapping)
    paths, key_file = without_join_file(inputs.record_paths, transform)
    res = ingest(
        paths,
        mapping=parse_map_options(args.map) or None,
        config=args.config,
        registry=inputs.registry,
        transform=transform,
        say=say,
    )
    res.summary["files_not_read"] = inputs.not_read + key_file
    return res


def _ingest(args: argparse.Namespace, say) -> int:
    """``selfmodel ingest`` (and ``run --preview``): the row accounting, written or shown."""
    if not args.preview:
        if args.out is None:
            raise InputError("ingest needs --out DIR (or --preview to only look).")
        outputs.check_out(args.out, outputs.RUN, say)  # before reading: refused at once
        inputs = inputs_apart(args)
        with outputs.staged(args.out, say) as staging:
            res = _ingest_inputs(args, inputs, say)
            write_ingest(res, staging)
    else:
        inputs = resolve_inputs(list(args.paths) or [DEFAULT_DATA], args.registry)
        res = _ingest_inputs(args, inputs, say)
    s = res.summary
    lines = [x["text"] for x in status_lines({"data": s, "diagnostics": {"max_rhat": 1.0}})]
    lines += [note["text"] for note in s["registry_contradictions"]]
    if args.preview:
        print(ingest_preview_text(res, lines))
        return 0
    for line in lines:  # low yield, 'correct' only, repeats: said before the counts
        print(line)
    excluded = f", excluded {s['records_excluded']}" if s.get("records_excluded") else ""
    print(
        f"read {s['records_read']}, used {s['records_used']}, quarantined "
        f"{s['records_quarantined']}, duplicate {s['records_duplicate']}{excluded} -> {args.out}"
    )
    return 0


def _not_a_records_mapping(path: Path, fmt: str) -> None:
    """A ``format = "records"`` mapping given to ``import`` says where it belongs (exit 2)."""
    import tomllib

    from selfmodel.common.toml_errors import loads as toml_loads

    try:
        text = path.read_text(encoding="utf-8-sig")
        doc = toml_loads(text)  # the guarded reader: nesting too deep is a TOMLDecodeError
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return  # the importer's own reader reports it in its words
    if doc.get("format") == "records":
        raise InputError(
            f"{path}: line {key_line(text, 'format')}, column 'format': a records mapping (format = \"records\") is for "
            f"JSONL/CSV/Parquet records, not 'import {fmt}'. Use 'selfmodel ingest FILES "
            f"--mapping {path}' (or run, describe, fit)."
        )


def _import(args: argparse.Namespace, say) -> int:
    from selfmodel.records.importers.seb import write_import

    if args.out is not None and not args.preview:  # before reading: refused at once
        outputs.check_out(args.out, outputs.IMPORT, say)
        outputs.check_apart(args.out, [args.src, getattr(args, "mapping", None)])

    importer = get_importer(args.format)
    if importer.mapping:
        if args.mapping is None:
            raise InputError(
                f"import {args.format} needs --mapping FILE (a TOML mapping; see README)."
            )
        _not_a_records_mapping(args.mapping, args.format)
    res = importer.read(args.src, getattr(args, "mapping", None))
    if args.preview:
        for note in res.notes:
            say(note)
        print(preview_text(res))
        return 0
    if args.out is None:
        raise InputError(f"import {args.format} needs --out DIR (or --preview to only look).")
    with outputs.staged(args.out, say, writes=outputs.IMPORT) as folder:
        write_import(res, folder)
    for note in res.notes:
        say(note)
    n_models = res.registry.height if res.registry is not None else 0
    print(f"{res.records.height} records, {n_models} models in registry -> {args.out}")
    return 0


def _power(args: argparse.Namespace, say) -> int:
    outputs.check_out(args.out, outputs.POWER, say)  # before loading the power code
    import math
    import time

    from rich.console import Console

    from selfmodel import power as pw

    if args.template is None and (args.registry is not None or args.results is not None):
        raise InputError("power: --registry and --results go with --template RECORDS.")
    if args.sims < 1 or args.sweep_sims < 0:
        raise InputError("power: --sims must be at least 1 and --sweep-sims at least 0.")
    if args.slopes is not None and not all(math.isfinite(s) for s in args.slopes):
        raise InputError("power: --slopes must be finite numbers, e.g. --slopes 0 0.2 0.4.")
    outputs.check_apart(args.out, [args.design, *(args.template or []), args.registry,
                                   args.results])
    if args.design is not None:
        design = pw.load_design(args.design)
    elif args.template is not None:

        inputs = resolve_inputs(args.template, args.registry)
        if inputs.registry is None:
            raise InputError(
                "power --template needs --registry FILE (the registry of those records)."
            )
        design = pw.design_from_template(
            inputs.record_paths, inputs.registry, results=args.results, scale=args.scale
        )
    else:
        design = pw.default_design()
    say(
        f"design: {len(design.models)} models in {len(design.families)} families, "
        f"{len(design.tasks)} tasks ({design.source})"
    )
    t0 = time.perf_counter()
    power = pw.run_power(
        design,
        slopes=args.slopes or pw.DEFAULT_SLOPES,
        sims=args.sims,
        seed=args.seed,
        progress=_power_progress("power simulation"),
    )
    if args.sweep_sims > 0:
        power["models_vs_items"] = pw.models_vs_items(
            design, slope=pw.sweep_slope(power), sims=args.sweep_sims, seed=args.seed,
            progress=_power_progress("models-vs-items sweep"),
        )
    with outputs.staged(args.out, say, writes=outputs.POWER) as folder:
        paths = {k: args.out / p.name for k, p in
                 pw.write_power(power, folder, design=design).items()}
    Console(highlight=False).print(pw.power_table(power), markup=False)
    for line in pw.summary_lines(power):
        print(line)
    say(f"simulated and fitted in {time.perf_counter() - t0:.0f} s")
    print(f"power: {paths['json']}  plot: {paths['plot']}  design: {paths['design']}")
    return 0


def _print_table(rows: list[dict]) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title="self-prediction accuracy by model and task")
    for col in ("model", "task", "n", "accuracy", "accuracy_strict", "baseline_accuracy"):
        t.add_column(col, justify="right" if col not in ("model", "task") else "left")
    for r in rows:
        t.add_row(
            r["model"],
            r["task"],
            str(r["n"]),
            *(
                f"{r[c]:.3f}" if r[c] is not None else "-"
                for c in ("accuracy", "accuracy_strict", "baseline_accuracy")
            ),
        )
    Console(highlight=False).print(t, markup=False)


def _power_progress(label: str):
    """The power simulation's progress: a bar on a terminal, plain ``[k/n]`` lines otherwise."""
    rep = progress.current()
    if rep is None:
        return False
    return True if rep.live else (progress.counter(label) or False)


def _quiet_library_warnings() -> None:
    """Silence import-time notices of the numerical stack that say nothing about the user's data."""
    import warnings

    warnings.filterwarnings("ignore", message=".*BLAS.*")  # pytensor: nutpie/numba do not use it
    warnings.filterwarnings("ignore", category=FutureWarning, module="arviz")  # ArviZ 1.0 notice
    import logging

    logging.getLogger("pymc").setLevel(logging.WARNING)  # "Sampling: [k]" from predictive draws


def os_error_message(exc: OSError, args: argparse.Namespace) -> str:
    """One line for an operating-system error: the file, what happened, what to do."""
    import errno

    where = exc.filename or getattr(args, "out", None) or "?"
    what = exc.strerror or type(exc).__name__
    todo = {
        errno.ENOSPC: "free disk space or choose another --out",
        errno.EDQUOT: "free disk space or choose another --out",
        errno.EACCES: "check the permissions or choose another --out",
        errno.EPERM: "check the permissions or choose another --out",
        errno.EROFS: "choose an --out on a writable file system",
        errno.EEXIST: "--out must be a folder (or not exist yet); choose another --out",
        errno.ENOTDIR: "--out and its parents must be folders; choose another --out",
    }.get(exc.errno or 0, "check the file and rerun")
    return " ".join(f"{where}: {what}. {todo[0].upper()}{todo[1:]}.".split())


def interrupted_message(args: argparse.Namespace) -> str:
    """What an interruption left behind (one line)."""
    if getattr(args, "out", None) is not None and not getattr(args, "preview", False):
        return outputs.interrupted_message(args.out, fits=args.command in ("run", "fit"))
    return "interrupted; nothing was written."


class Terminated(KeyboardInterrupt):
    """SIGTERM (sent by ``timeout``, CI runners, systemd): handled as Ctrl-C, exit 143."""


#: Exit status after Ctrl-C (128 + SIGINT) and after SIGTERM (128 + SIGTERM), as a shell has.
EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143


@contextlib.contextmanager
def _sigterm_as_interrupt(seen: list[int]):
    """SIGTERM raises :class:`Terminated` in the main thread, so it ends as Ctrl-C does."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(signum, _frame):
        seen.append(signum)
        raise Terminated

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``selfmodel`` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    _quiet_library_warnings()
    outputs.PUBLISHED.clear()
    terminated: list[int] = []
    try:
        with _sigterm_as_interrupt(terminated):
            return _dispatch(args, argv)
    except KeyboardInterrupt as e:
        sys.stderr.write(f"selfmodel: {interrupted_message(args)}\n")
        return EXIT_TERMINATED if isinstance(e, Terminated) or terminated else EXIT_INTERRUPTED
    except InputError as e:
        if terminated:  # a worker or the report's kernel ended by the same SIGTERM
            sys.stderr.write(f"selfmodel: {interrupted_message(args)}\n")
            return EXIT_TERMINATED
        sys.stderr.write(f"selfmodel: error: {' '.join(str(e).split())}\n")
        return 2
    except OSError as e:  # an unusable --out, a full disk, an unreadable or truncated file
        if terminated:
            sys.stderr.write(f"selfmodel: {interrupted_message(args)}\n")
            return EXIT_TERMINATED
        sys.stderr.write(f"selfmodel: error: {os_error_message(e, args)}\n")
        return 2
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
