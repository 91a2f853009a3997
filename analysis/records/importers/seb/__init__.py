r"""Importer for the Self-Execution Benchmark (Ezra, Weizman & Azaria, arXiv 2508.12277).

``import_seb(SRC)`` reads a clone of the repository
``anon-researcher-2025/Self-Execution-Benchmark``
and returns canonical records (:data:`selfmodel.records.contract.RECORD_SCHEMA`), a model registry and
an account of every choice made on the way (``notes``) with the numbers behind it (``counts``).

Experiment 1 -- word association (task ``word_association``)
    ``experiment 1/results-04-05-25/<model>.csv``, one row per target word. ``Predictions`` is
    a Python dict literal ``option word -> bool`` ("this word will appear in my list") and
    ``Generated Words`` a Python list literal (the words the model then produced); both are
    read with :func:`ast.literal_eval` only. One record per option word:
    ``prediction`` = the bool, ``outcome`` = the option word (lower-cased) is among the
    generated words (lower-cased, otherwise compared exactly, as the authors did: a word
    written with a stray space, ``' trunk '``, does not match ``'trunk'``; such cases are
    counted in the notes), ``item_id = "<target>::<option>"`` with the option stripped and
    lower-cased, ``cluster`` = target.
    A prediction written as a string (``'true'``) is read with
    :func:`selfmodel.records.contract.parse_bool`, as the authors' table does; it is counted in the notes.
    The earlier run ``results-27-4-25/`` is imported only for models absent from the newer
    run (``run_id`` names the run folder); for the others the newer run is used.

Experiment 2 -- refusal prediction on XSTest (task ``refusal``)
    ``experiment 2/results/output_data_<model>.csv``: headerless rows
    ``id,prompt,provision,verification`` appended across runs, each run starting with a line
    ``0,1,2,3``. The largest run (most non-empty rows; the later one on a tie) is used.
    ``prediction`` is ``"true"`` for provision ``A`` ("I will answer"), ``"false"`` for ``B``;
    ``outcome`` is ``"true"`` for verification ``A`` (answered), ``"false"`` for ``B``. Any
    other letter is unreadable: the record gets ``status="unparsed"`` and ``correct`` is null.
    One record per XSTest prompt: a prompt with no row in the run gets ``status="error"``, so
    that counting unreadable records as wrong reproduces the authors' ``consistency_rate``
    (consistent answers out of 450). ``cluster`` is the XSTest ``type``.

Model names
    Each file's spelling is mapped to a canonical id through the ``aliases`` column of
    ``models.csv`` (by default ``SRC/models.csv``; pass ``models=`` otherwise). A spelling that
    is not listed is kept under its own name and reported in the notes. When two files map to
    the same model and task, the larger one is used and the other is noted.

Registry
    ``models.csv`` gives ``family``, ``params_b``, ``active_params_b``, ``open_weights``,
    ``reasoning`` (plus ``developer`` and ``aliases``). ``capability`` is the Rasch
    "Ability (θ)" column of ``benchmarks/benchmarks_with_rasch.csv``, whose model column uses
    the experiment-1 spellings and is mapped through the same aliases; models it does not
    cover get a null capability.

``source_line`` is the 1-based CSV row within the file's data: after the header for
experiment 1, and counting every row (run markers included) for the headerless experiment-2
files.

Modules
-------
``layout``
    Where the benchmark's files are in a clone of its repository, and the task names.
``model_names``
    The benchmark's model spellings mapped to one name (models.csv aliases), and the registry rows (Rasch ability as capability).
``word_association``
    Experiment 1 (word association): reading its run files into canonical records.
``refusal``
    Experiment 2 (XSTest refusal prediction): the blocks of its result files.
``run``
    ``import_seb``: both experiments into canonical records and a registry.
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
