"""The importers of ``selfmodel import``, each declared once.

The CLI's ``import FORMAT`` choices and help, the log mapping's ``format`` values and the
ingest config's hint for a log mapping are all read from here. A new importer is one module
and one :func:`register` line (docs/mapping.md, "A new importer").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Importer:
    """One ``selfmodel import NAME``.

    ``read(src, mapping)`` returns an :class:`~selfmodel.records.importers.result.ImportResult`
    (``mapping`` is ``None`` when the importer takes none) and raises
    :class:`~selfmodel.records.contract.InputError` for a user's mistake. ``item_id`` makes it
    a log format a mapping may name (``format = NAME``): the path its item id is read from
    when the mapping does not say.
    """

    name: str
    help: str
    description: str
    src: str
    read: Callable[[Path, Path | None], Any]
    mapping: bool = True
    item_id: str | None = None


_IMPORTERS: dict[str, Importer] = {}


def register(importer: Importer) -> Importer:
    """Add ``importer`` (its name must be new); returned, so it can decorate a declaration."""
    if importer.name in _IMPORTERS:
        raise ValueError(f"an importer named {importer.name!r} is registered already")
    if importer.item_id is not None and not importer.mapping:
        raise ValueError(f"importer {importer.name!r}: a log format (item_id) reads a mapping")
    _IMPORTERS[importer.name] = importer
    return importer


def unregister(name: str) -> None:
    """Remove the importer ``name`` (tests; a plug-in that is unloaded)."""
    _IMPORTERS.pop(name, None)


def importers() -> tuple[Importer, ...]:
    """Every registered importer, in the order registered."""
    return tuple(_IMPORTERS.values())


def get(name: str) -> Importer:
    """The importer ``name`` (``KeyError`` when none is registered under it)."""
    return _IMPORTERS[name]


def log_formats() -> tuple[str, ...]:
    """The ``format`` values a log mapping may take."""
    return tuple(i.name for i in _IMPORTERS.values() if i.item_id is not None)


def _seb(src: Path, mapping: Path | None) -> Any:
    from selfmodel.records.importers.seb import import_seb

    return import_seb(src)


def _lmeval(src: Path, mapping: Path | None) -> Any:
    from selfmodel.records.importers.lmeval import import_lmeval

    assert mapping is not None
    return import_lmeval(src, mapping=mapping)


def _inspect(src: Path, mapping: Path | None) -> Any:
    from selfmodel.records.importers.inspect_logs import import_inspect

    assert mapping is not None
    return import_inspect(src, mapping=mapping)


def _mapped(src: Path, mapping: Path | None) -> Any:
    """The importer of the log format the mapping names."""
    from selfmodel.records.importers.mapping import load_mapping

    assert mapping is not None
    return get(load_mapping(mapping).format).read(src, mapping)


register(Importer(
    "seb", "the Self-Evaluation Benchmark's repository (results and models.csv)",
    "Read a clone of the SEB repository: its result files become records and its "
    "models.csv the registry (sizes, families). No mapping is needed.",
    "a clone of the SEB repository", _seb, mapping=False))
register(Importer(
    "lmeval", "lm-evaluation-harness output (samples_*.jsonl, results_*.json) through a mapping",
    "Read lm-evaluation-harness output: samples_<task>_<date>.jsonl files (gzip too) "
    "with the results_*.json beside them, mapped to canonical fields by a TOML mapping "
    "(format = \"lmeval\").",
    "a samples_*.jsonl file or an lm-eval output folder", _lmeval, item_id="doc_id"))
register(Importer(
    "inspect", "Inspect AI eval logs (.eval, .json) through a mapping (needs the inspect extra)",
    "Read Inspect AI eval logs (.eval or .json, read with inspect_ai's own reader; "
    "pip install 'selfmodel[inspect]'), mapped to canonical fields by a TOML mapping "
    "(format = \"inspect\").",
    "an Inspect log file or a folder of logs", _inspect, item_id="id"))
register(Importer(
    "mapped", "logs of the format named by the mapping's 'format' key",
    "Read logs of whichever log format the mapping names (its 'format' key): the same as "
    "'import FORMAT' with that mapping.",
    "a log file or folder of the mapping's format", _mapped))
