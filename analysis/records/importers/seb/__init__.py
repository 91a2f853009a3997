r"""Importer for the Self-Execution Benchmark (Ezra, Weizman & Azaria, arXiv 2508.12277).

``import_seb(SRC)`` reads a clone of the repository
``anon-researcher-2025/Self-Execution-Benchmark``
and returns canonical records (:data:`selfmodel.records.contract.RECORD_SCHEMA`), a model registry and
an account of every choice made on the way (``notes``) with the numbers behind it (``counts``).

How each experiment's files, the model names and the registry are read: ``docs/seb.md``.
"""

from __future__ import annotations

from selfmodel.records.importers.result import ImportResult
from selfmodel.records.importers.seb.layout import (
    SebImport,
)
from selfmodel.records.importers.seb.run import (
    import_seb,
    write_import,
)

__all__ = [
    "ImportResult",
    "SebImport",
    "import_seb",
    "write_import",
]
