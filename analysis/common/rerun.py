"""An unchanged ``selfmodel run`` reuses the previous run's results and report.

A run's results are a function of what it reads: the bytes of its record files, registry,
``truth.json``, hypotheses and config files, its command-line options, the selfmodel code
(every file of ``analysis/`` and ``models/``) and the versions of the numerical packages.
:func:`run_key` hashes all of them. After a finished run :func:`record` writes
``OUT/run-key.json`` with that key, the SHA-256 of ``results.json`` and a manifest (size,
modification time and SHA-256) of every other file the run left in ``OUT`` (records, cells,
saved fits and derived results), sealed with the user's key (:mod:`selfmodel.common.seal`):
a record edited with its hashes recomputed, or written by someone else (a results folder
copied from a colleague), is not trusted, and the run runs. A later run with the same key
whose outputs are all still there, unmodified, is the same run: :func:`unchanged` says so
and the command stops there, without importing the numerical stack, so it costs a fraction
of a second plus hashing the inputs and outputs.

The report is keyed separately (:func:`report_key`): the files it reads (``results.json``,
``run.json``, ``cells.parquet``, the saved fit named in ``results.json``), the report's
sources (``reports/``), the renderer's code and the versions of the packages that draw it.
Its stamp (``OUT/.report.html.key``) holds that key and the SHA-256 of the rendered file,
sealed too. An unchanged run whose report is missing, out of date, replaced or stamped by
someone else renders the report only.

Anything else -- a changed byte in an input, another option, edited code, a deleted or
touched output file, ``--no-cache`` -- runs the pipeline as usual (whose saved fits are
then reused where their own keys match, see :mod:`selfmodel.fitting.sampling`).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import sys
from collections.abc import Iterable, Mapping
from importlib import metadata, util
from pathlib import Path
from typing import Any, Final

from selfmodel.common import atomic, seal
from selfmodel.common.manifest import MARKER

#: The file ``record`` writes into OUT; bump :data:`FORMAT` when its meaning changes.
#: 2: sealed, and the manifest holds each output's SHA-256.
KEY_FILE: Final = "run-key.json"
FORMAT: Final = 2
#: Outputs that are not part of the manifest: this file, the report (keyed on its own) and
#: the folder's own manifest (:mod:`selfmodel.common.manifest`, rewritten as files are added).
NOT_IN_MANIFEST: Final = frozenset({KEY_FILE, "report.html", "report.pdf", MARKER})

_PACKAGES: Final = (
    "selfmodel", "pymc", "pytensor", "arviz", "arviz-base", "arviz-stats", "nutpie", "numpy",
    "scipy", "polars", "numba", "statsmodels", "matplotlib", "jupytext", "nbclient",
    "pypandoc", "pypandoc-binary", "typst",
)
_CHUNK: Final = 1 << 24


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in _PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "absent"
    return out


def _hash_file(h: Any, path: Path) -> None:
    h.update(f"\0{path.as_posix()}\0".encode())
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)


def _files_under(p: Path) -> list[Path]:
    """``p`` itself, or every file below the folder ``p`` (sorted; caches left out)."""
    if p.is_file():
        return [p]
    if not p.is_dir():
        return []
    return sorted(f for f in p.rglob("*") if f.is_file() and "__pycache__" not in f.parts)


def _package_dir(name: str) -> Path:
    spec = util.find_spec(name)  # locates the package (a subpackage: after its parent)
    if spec is None or spec.origin is None:
        raise RuntimeError(f"the installed selfmodel has no package {name!r}: reinstall it")
    return Path(spec.origin).parent


def code_sha256(folders: Iterable[Path]) -> str:
    """SHA-256 of every file under ``folders`` (relative names and bytes)."""
    h = hashlib.sha256()
    for folder in folders:
        for f in _files_under(folder):
            h.update(f"\0{f.relative_to(folder.parent).as_posix()}\0".encode())
            h.update(f.read_bytes())
    return h.hexdigest()


def run_key(options: Mapping[str, Any], files: Iterable[Path | str]) -> str:
    """SHA-256 of everything a run's results depend on.

    Its options, the bytes of the files (or folders) it reads, the code of ``analysis/``
    and ``models/`` and the package versions.
    """
    h = hashlib.sha256()
    h.update(json.dumps({"format": FORMAT, "options": options, "versions": _versions()},
                        sort_keys=True, default=str).encode())
    h.update(code_sha256([_package_dir("selfmodel"), _package_dir("selfmodel.models")]).encode())
    for p in files:
        path = Path(p)
        h.update(f"\0input {path.as_posix()} {path.exists()}\0".encode())
        for f in _files_under(path):
            _hash_file(h, f)
    return h.hexdigest()


def _manifest(out: Path) -> dict[str, list[int | str | None]]:
    return {
        f.relative_to(out).as_posix(): [f.stat().st_size, f.stat().st_mtime_ns, _sha256(f)]
        for f in _files_under(out)
        if f.relative_to(out).as_posix() not in NOT_IN_MANIFEST
        and not (f.parent == out and f.name.startswith(".report."))
    }


def _sha256(path: Path) -> str | None:
    if not path.is_file():
        return None
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def _run_info_read_by_report(out: Path) -> Any:
    """``run.json`` without ``seconds_total``, which the pipeline adds after rendering."""
    try:
        info = json.loads((out / "run.json").read_text())
    except (OSError, ValueError):
        return None
    if isinstance(info, dict):
        info.pop("seconds_total", None)
    return info


def report_key(out: Path, fmt: str = "html") -> str | None:
    """SHA-256 of what the report rendered from ``out`` depends on; ``None`` without results.

    The files it reads (``results.json``, ``run.json`` but its ``seconds_total``, written
    after the report, ``cells.parquet``, the saved fit ``results.json`` names), the report sources (``reports/``), the package's code (the
    renderer in ``analysis/report/`` and every function the report's cells call), whether Quarto is on ``PATH``, the
    package versions and the format.
    """
    results = out / "results.json"
    if not results.is_file():
        return None
    try:
        fit_file = (json.loads(results.read_text()).get("fit") or {}).get("file")
    except (ValueError, AttributeError):
        return None
    h = hashlib.sha256(json.dumps({"format": FORMAT, "fmt": fmt, "versions": _versions(),
                                   "quarto": shutil.which("quarto")}, sort_keys=True).encode())
    for name in ("results.json", "cells.parquet", *([fit_file] if fit_file else [])):
        h.update(f"\0{name} {_sha256(out / name)}\0".encode())
    h.update(json.dumps(_run_info_read_by_report(out), sort_keys=True).encode())
    # the report's cells call the package's section and table functions: all its code counts
    h.update(code_sha256([_package_dir("selfmodel"), _package_dir("selfmodel.reports")]).encode())
    return h.hexdigest()


def report_key_file(target: Path) -> Path:
    """Where the key of the rendered ``target`` (``OUT/report.html``) is kept."""
    return target.with_name(f".{target.name}.key")


def _sealed(what: str, record: Mapping[str, Any]) -> dict[str, Any]:
    """``record`` with its seal (under the user's key) added."""
    body = {k: v for k, v in record.items() if k != "seal"}
    return {**body, "seal": seal.seal(what, json.dumps(body, sort_keys=True).encode())}


def _verified(what: str, record: Any) -> bool:
    if not isinstance(record, dict):
        return False
    body = {k: v for k, v in record.items() if k != "seal"}
    return seal.verify(what, json.dumps(body, sort_keys=True).encode(), record.get("seal"))


def report_is_current(out: Path, fmt: str = "html") -> bool:
    """``OUT/report.<fmt>`` exists, is the file rendered, and from what ``out`` holds now."""
    target = out / f"report.{fmt}"
    stamp = report_key_file(target)
    if not target.is_file() or not stamp.is_file():
        return False
    try:
        saved = json.loads(stamp.read_text())
    except (OSError, ValueError):
        return False
    if not _verified("report", saved) or saved.get("report_sha256") != _sha256(target):
        return False
    key = report_key(out, fmt)
    return key is not None and saved.get("report_key") == key


def mark_report(out: Path, fmt: str = "html", *, into: Path | None = None) -> None:
    """Record that ``OUT/report.<fmt>`` was just rendered from what ``out`` holds.

    With ``into`` (a staging folder, published into ``out`` next) the report is there, and
    its stamp is written there too.
    """
    key = report_key(out, fmt)
    if key is not None:
        target = (into or out) / f"report.{fmt}"
        atomic.write_json(report_key_file(target), _sealed(
            "report", {"format": FORMAT, "report_key": key, "report_sha256": _sha256(target)}))


def record(out: Path, key: str, *, into: Path | None = None) -> None:
    """After a finished run: save its key, the results' hash and the outputs' manifest, sealed.

    Written into ``into`` (a staging folder, published into ``out`` next) when given.
    """
    atomic.write_json((into or out) / KEY_FILE, _sealed("run", {
        "format": FORMAT,
        "run_key": key,
        "results_sha256": _sha256(out / "results.json"),
        "outputs": _manifest(out),
    }))


def unchanged(out: Path, key: str) -> dict[str, Any] | None:
    """The saved results when the run in ``out`` had this key and its outputs are intact.

    ``None`` (run again) when there is no record, its seal does not verify (a note says
    so), the key differs, ``results.json`` was changed, or any other output is missing,
    added, changed or touched.
    """
    try:
        saved = json.loads((out / KEY_FILE).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(saved, dict) or saved.get("format") != FORMAT or saved.get("run_key") != key:
        return None
    if not _verified("run", saved):
        sys.stderr.write(f"selfmodel: note: {out / KEY_FILE}: the record of the run that wrote "
                         f"{out} is not used: {seal.why_not()}; running again\n")
        return None
    if saved.get("results_sha256") is None or saved["results_sha256"] != _sha256(out / "results.json"):
        return None
    if saved.get("outputs") != _manifest(out):
        return None
    try:
        results = json.loads((out / "results.json").read_text())
    except (OSError, ValueError):
        return None
    return results if isinstance(results, dict) else None


def forget(out: Path) -> None:
    """Drop the record (a run is starting: until it finishes, nothing is reusable).

    An ``out`` that cannot hold it (a file, or under one) is left to the pipeline to report;
    a record left behind could not be reused anyway, as the run changes the outputs.
    """
    try:
        os.unlink(out / KEY_FILE)
    except OSError:
        pass
