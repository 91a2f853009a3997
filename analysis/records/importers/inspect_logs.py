"""Importer for Inspect AI eval logs (``.eval`` and ``.json``), through a mapping.

Logs are read with Inspect's own reader, :func:`inspect_ai.log.read_eval_log`, so every log
version Inspect can read is supported. ``inspect_ai`` is an optional dependency
(``pip install 'selfmodel[inspect]'``); it is imported only when a log is read.

Sample fields, ``@`` metadata, score values, the defaults (``task``, ``item_id``, ``sample``,
``status``, ``run_id``) and which files of a folder are read: ``docs/mapping.md`` ("What each
log format gives a mapping").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final
from urllib.parse import unquote, urlparse

from selfmodel.records.contract import InputError
from selfmodel.records.importers.mapping import (
    LogSample,
    MappedImport,
    Mapping,
    Samples,
    as_mapping,
    import_logs,
    source_name,
)

__all__ = ["INSTALL_HINT", "import_inspect", "read_inspect_log"]

INSTALL_HINT: Final = (
    "reading Inspect logs needs the optional dependency inspect_ai: "
    "pip install 'selfmodel[inspect]'"
)
#: Sample fields left out of the dict that mapping paths see (large, never a record field).
EXCLUDED: Final = frozenset({"events", "attachments", "events_data", "timelines"})


def _reader() -> Any:
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise InputError(INSTALL_HINT) from None
    return read_eval_log


def read_inspect_log(path: Path | str, *, root: Path | str | None = None) -> Samples:
    """Read one Inspect log with ``inspect_ai.log.read_eval_log``.

    Parameters
    ----------
    path
        A ``.eval`` or ``.json`` log.
    root
        What ``source_file`` is relative to (:func:`~selfmodel.records.importers.mapping.source_name`).

    Returns
    -------
    samples : list of LogSample
        One per sample (and epoch), with the log's metadata.
    notes : list of str
        The log's status when it is not ``success``, and empty logs.

    Raises
    ------
    InputError
        When inspect_ai is not installed or the file is not an Inspect log.
    """
    read_eval_log = _reader()
    p = Path(path)
    rel = source_name(p, root)
    try:
        log = read_eval_log(str(p))
    except Exception as exc:  # inspect raises several types for a file it cannot read
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InputError(
            f"{p}: not a readable Inspect log ({first}); a log cut short or not written by "
            "Inspect: move it out of the folder or re-run its eval."
        ) from None
    spec = log.eval
    meta: dict[str, Any] = {
        "model": spec.model,
        "task": spec.task,
        "run_id": spec.run_id,
        "eval_id": spec.eval_id,
        "status": log.status,
        "scorers": [s.name for s in (log.results.scores if log.results else [])],
        "eval": spec.model_dump(mode="json"),
    }
    notes: list[str] = []
    if log.status != "success":
        notes.append(f"{rel}: log status is {log.status!r}; its samples are imported as logged.")
    samples: list[LogSample] = []
    for position, sample in enumerate(log.samples or [], start=1):
        data = sample.model_dump(mode="json", exclude=set(EXCLUDED))
        epoch = data.get("epoch")
        samples.append(
            LogSample(
                data=data,
                meta=meta,
                source_file=rel,
                source_line=position,
                sample_index=(epoch - 1) if isinstance(epoch, int) and epoch >= 1 else 0,
                status="error" if data.get("error") else "ok",
            )
        )
    if not samples:
        notes.append(f"{rel}: no samples in the log.")
    errors = sum(1 for s in samples if s.status == "error")
    if errors:
        notes.append(f"{rel}: {errors} sample(s) ended in an error; status 'error'.")
    return samples, notes


#: How much of a ``.json`` file is looked at to tell an Inspect log from other JSON.
_SNIFF_BYTES: Final = 4096


def _is_log(path: Path, listed: set[Path]) -> str | None:
    """``None`` when ``path`` is an Inspect log (by its content), else why it is not read.

    Inspect's ``list_eval_logs`` only lists ``.json`` files named as Inspect names logs
    (timestamp first); users rename them. So a ``.json`` file not listed is opened: a
    log starts with a ``version`` and an ``eval`` key, and Inspect's reader must read its
    header.
    """
    if path.resolve() in listed:
        return None
    if path.suffix == ".eval":
        return "not listed by inspect_ai as an eval log"
    try:
        with path.open("rb") as fh:
            head = fh.read(_SNIFF_BYTES).decode("utf-8", "replace")
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    if not head.lstrip().startswith("{") or '"eval"' not in head or '"version"' not in head:
        return "JSON, but not an Inspect log (no 'version' and 'eval' keys at its start)"
    try:
        from inspect_ai.log import read_eval_log

        read_eval_log(str(path), header_only=True)
    except Exception as exc:  # inspect raises several types for a file it cannot read
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return f"looks like an Inspect log but inspect_ai cannot read it ({first[:160]})"
    return None


def _survey(folder: Path) -> tuple[list[Path], list[dict[str, str]]]:
    """The Inspect logs in ``folder`` and every other file, with the reason it is not read.

    Recursive; logs are detected by content (:func:`_is_log`).
    """
    try:
        from inspect_ai.log import list_eval_logs
    except ImportError:
        raise InputError(INSTALL_HINT) from None
    listed = {Path(unquote(urlparse(info.name).path)).resolve() for info in list_eval_logs(
        str(folder), recursive=True
    )}
    logs: list[Path] = []
    not_read: list[dict[str, str]] = []
    for p in sorted(q for q in folder.rglob("*") if q.is_file()):
        rel = p.relative_to(folder).as_posix()
        if any(part.startswith(".") for part in p.relative_to(folder).parts):
            not_read.append({"path": rel, "reason": "hidden"})
        elif p.suffix not in (".eval", ".json"):
            not_read.append({"path": rel, "reason": "not a .eval or .json file"})
        elif (why := _is_log(p, listed)) is None:
            logs.append(p)
        else:
            not_read.append({"path": rel, "reason": why})
    return logs, not_read


def _find(folder: Path) -> list[Path]:
    """The Inspect logs in ``folder`` (recursively), detected by content (see :func:`_is_log`)."""
    return _survey(folder)[0]


def import_inspect(src: Path | str | None, *, mapping: Mapping | Path | str) -> MappedImport:
    """Import Inspect AI eval logs through a mapping.

    Parameters
    ----------
    src
        A ``.eval``/``.json`` log or a folder searched recursively for them. With a
        ``[join]`` mapping, the folder relative join paths start from (may be ``None``: then
        the mapping file's folder).
    mapping
        A :class:`~selfmodel.records.importers.mapping.Mapping` or the path of a TOML mapping with
        ``format = "inspect"``.

    Returns
    -------
    MappedImport
        Canonical records, notes and counts.

    Raises
    ------
    InputError
        inspect_ai missing (``pip install 'selfmodel[inspect]'``), unreadable logs, a mapping
        for another format, or a path that resolves in no sample.
    """
    m = as_mapping(mapping, fmt="inspect")
    _reader()  # fail early, with the install hint, before looking at files
    result = import_logs(
        src,
        mapping=m,
        fmt="inspect",
        find=_find,
        read=lambda path, root: read_inspect_log(path, root=root),
        what="Inspect logs (.eval, .json)",
    )
    if src is not None and Path(src).is_dir() and not m.joins:
        _, others = _survey(Path(src))
        result.counts["files_not_read"] = others
        for o in reversed(others):
            result.notes.insert(0, f"not read: {o['path']} ({o['reason']}).")
    return result
