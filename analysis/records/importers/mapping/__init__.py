r"""Mapping files: where the canonical fields live in a foreign log's samples.

A mapping is data (TOML), never executed. It names, for each canonical record field, a
*dotted path* into one logged sample (a nested dict/list as the log format stores it), or
into the log's metadata. The format readers (:mod:`selfmodel.records.importers.lmeval`,
:mod:`selfmodel.records.importers.inspect_logs`) turn each log into :class:`LogSample` objects; this
module applies the mapping to them.

Layout::

    format = "lmeval"                 # or "inspect"
    task = "refusal"                  # constant task (or give fields.task as a path)
    # model = "llama-3-8b"            # optional constant; default is "@model"
    # run_id = "run-7"                # optional constant

    [fields]                          # canonical field -> where it lives in a sample
    item_id = "doc.id"                # dotted path: dict keys and list indices ("resps.0.0")
    prediction = { path = "filtered_resps.0", map = { A = "true", B = "false" } }
    outcome = { path = "acc", type = "bool" }
    cluster = "doc.type"
    model = "@model"                  # '@' reads the log's metadata: @model, @task, @<path>

    [where]                           # optional: keep only samples whose path has a value
    filter = "strict-match"           # (a list: any of them; "@task" = [...] reads metadata)

    [join]                            # optional: an object-level and a hypothetical log
    object = "object/samples_x.jsonl" # what the model did        (relative to SRC or this file)
    hypothetical = "hyp/samples_y.jsonl"  # what a model predicted it would do (or a glob;
                                      # [[join]] for several pairs)
    key = "doc.id"                    # item key, same path in both (or object_key/
                                      # hypothetical_key; a list of paths for a compound key)

Field values
    A string is a path; a table has ``path`` and optionally ``regex`` (extract the answer:
    the first match or its one group), ``normalize`` (``strip``, ``casefold``,
    ``punctuation``, in order), ``map`` (raw value, normalised, -> canonical string; a value
    not in the map becomes null), ``type`` (``"str"``, ``"bool"``: read with
    :func:`selfmodel.records.contract.parse_bool` into ``"true"``/``"false"``, ``"float"``, ``"int"``,
    ``"score"``: Inspect's ``C``/``I``) and ``default`` (used when the path is absent in a
    sample). Canonical fields: ``model, task, item_id, prediction, outcome, correct,
    predictor, confidence, cluster, status, run_id, sample``. ``task`` defaults to ``@task``
    and ``item_id`` to the format's sample id. Prediction and outcome are then read by
    ingest's rule (:func:`~selfmodel.records.importers.mapping.logs_apply.read_values_as_ingest`) and
    ``correct`` derived from them. The reference of every key is ``docs/mapping.md``.

Joined logs
    Each field is read from one side. ``prediction``, ``confidence`` and ``predictor`` come
    from the hypothetical log, everything else from the object-level log; prefix a path with
    ``object:`` or ``hypothetical:`` to choose explicitly. ``model`` defaults to the object
    log's ``@model`` and ``predictor`` to the hypothetical log's ``@model``: when they differ
    the records are cross-predictions. ``item_id`` defaults to the key. An item with no
    hypothetical sample becomes a record with status ``"error"`` and null prediction; a
    hypothetical sample with no object-level sample is dropped; both are counted.

Errors
    A path that resolves in none of a log's samples is an :class:`~selfmodel.records.contract.InputError`
    naming the mapping field, the file and line, the step that failed and the keys the sample
    actually has at that level, with a "did you mean" suggestion.

Modules
-------
``logs_spec``
    The log mapping of ``import lmeval|inspect``: its fields, reading and checking it (line numbers, did-you-mean).
``logs_paths``
    Resolving a log mapping's dotted paths inside a log sample, and converting the values found.
``logs_apply``
    Applying a log mapping to log samples: canonical records, the registry, notes and counts.
``records_spec``
    The records mapping (``format = "records"``) of ``ingest|run --mapping``: its TOML tables, reading and checking it.
``records_apply``
    Applying a records mapping to the rows of plain record files before validation.
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
