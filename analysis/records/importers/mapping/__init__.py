r"""Mapping files: where the canonical fields live in a foreign log's samples.

A mapping is data (TOML), never executed. It names, for each canonical record field, a
*dotted path* into one logged sample (a nested dict/list as the log format stores it), or
into the log's metadata. The format readers (:mod:`selfmodel.records.importers.lmeval`,
:mod:`selfmodel.records.importers.inspect_logs`) turn each log into :class:`LogSample` objects; this
module applies the mapping to them.

The layout, every key (field values, ``[where]``, joined logs) and the errors: ``docs/mapping.md``.
"""

from __future__ import annotations

from selfmodel.records.importers.mapping.logs_apply import (
    apply_mapping,
)
from selfmodel.records.importers.mapping.logs_apply import (
    as_mapping as as_mapping,
)
from selfmodel.records.importers.mapping.logs_apply import (
    import_logs as import_logs,
)
from selfmodel.records.importers.mapping.logs_paths import (
    resolve_path,
)
from selfmodel.records.importers.mapping.logs_spec import (
    FieldSpec,
    JoinSpec,
    LogSample,
    MappedImport,
    Mapping,
    Samples,
    load_mapping,
    parse_mapping,
    source_name,
)

__all__ = [
    "FieldSpec",
    "JoinSpec",
    "LogSample",
    "MappedImport",
    "Mapping",
    "Samples",
    "apply_mapping",
    "load_mapping",
    "parse_mapping",
    "resolve_path",
    "source_name",
]
