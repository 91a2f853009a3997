"""``selfmodel import ... --preview``: what an import would write, shown before anything is.

The preview is text: the first mapped records, the number of records per model and task
(with their statuses), and a registry template (CSV) for the models found, ``params_b``
filled where the logs state a size (lm-eval's ``config.model_num_parameters``). Nothing is
written; the template is meant to be completed and saved as ``registry.csv``.
"""

from __future__ import annotations

import polars as pl

from selfmodel.records.importers.result import ImportResult

__all__ = ["preview_text"]

#: Columns of the record preview (the rest are provenance).
SHOWN = ("model", "predictor", "task", "item_id", "sample", "prediction", "outcome", "correct",
         "status")


def preview_text(result: ImportResult, *, rows: int = 10) -> str:
    """The preview of an import as text.

    Parameters
    ----------
    result
        What an importer returned.
    rows
        How many records to show.

    Returns
    -------
    str
        Three blocks: first records, counts per model and task, registry template (CSV).

    Examples
    --------
    >>> recs = pl.DataFrame({"model": ["m", "m"], "task": ["t", "t"], "status": ["ok", "error"]})
    >>> print(preview_text(ImportResult(records=recs)).splitlines()[0])
    first 2 of 2 mapped records:
    """
    recs = result.records
    shown = recs.select([c for c in SHOWN if c in recs.columns]).head(rows)
    counts = (
        recs.group_by("model", "task")
        .agg(
            pl.len().alias("records"),
            *[
                (pl.col("status") == s).sum().alias(s)
                for s in sorted(set(recs["status"].drop_nulls().to_list()))
            ],
        )
        .sort("model", "task")
    )
    with pl.Config(
        tbl_rows=max(rows, counts.height),
        tbl_cols=-1,
        tbl_width_chars=160,
        fmt_str_lengths=40,
        tbl_hide_dataframe_shape=True,
        tbl_hide_column_data_types=True,
    ):
        first, per = str(shown), str(counts)
    sized = result.registry.filter(pl.col("params_b").is_not_null()).height
    template = result.registry.write_csv()
    return "\n".join(
        [
            f"first {shown.height} of {recs.height} mapped records:",
            first,
            f"records per model and task ({counts.height} pairs):",
            per,
            f"registry template ({result.registry.height} models, params_b from the logs for "
            f"{sized}; fill in the rest and save as registry.csv):",
            template.rstrip("\n"),
            "preview only: nothing written.",
        ]
    )


#: Columns of the ingest preview (the mapped record fields).
INGEST_SHOWN = ("model", "task", "item_id", "sample", "confidence", "prediction", "outcome",
                "correct", "status")


def ingest_preview_text(result, status: list[str], *, rows: int = 10) -> str:
    """``selfmodel ingest|run ... --preview``: mapped records and the accounting, as text.

    Parameters
    ----------
    result
        What :func:`selfmodel.records.ingest.ingest` returned (an ``IngestResult``).
    status
        The status sentences that lead (low yield, ``correct`` only, repeats).
    rows
        How many records (and quarantined rows) to show.

    Returns
    -------
    str
        The status sentences, the accounting (read = used + quarantined + duplicate) with
        the quarantine reasons, the first records and the first quarantined rows.
    """
    s = result.summary
    recs = result.records
    shown = recs.select([c for c in INGEST_SHOWN if c in recs.columns]).head(rows)
    bad = result.quarantine.select("source_file", "source_line", "reason").head(rows)
    with pl.Config(tbl_rows=rows, tbl_cols=-1, tbl_width_chars=160, fmt_str_lengths=60,
                   tbl_hide_dataframe_shape=True, tbl_hide_column_data_types=True):
        first, quarantined = str(shown), str(bad)
    reasons = ", ".join(f"{k} {v}" for k, v in sorted(
        (s.get("quarantine_reasons") or {}).items(), key=lambda kv: -kv[1]))
    excluded = int(s.get("records_excluded") or 0)
    statuses = ", ".join(f"{k} {v}" for k, v in (s.get("statuses") or {}).items())
    out = [*status,
           f"records read {s['records_read']}, used {s['records_used']}, quarantined "
           f"{s['records_quarantined']}, duplicate {s['records_duplicate']}"
           + (f", excluded by the mapping's rules {excluded}" if excluded else "")
           + (f" (quarantine reasons: {reasons})" if reasons else ""),
           f"statuses of the records used: {statuses}" if statuses else "",
           f"models: {', '.join(s['models'])}; tasks: {', '.join(s['tasks'])}",
           f"first {shown.height} of {recs.height} records:", first]
    if bad.height:
        out += [f"first {bad.height} of {result.quarantine.height} quarantined rows:",
                quarantined]
    out += mapping_lines(s.get("study_mapping") or {})
    out.append("preview only: nothing written, nothing fitted.")
    return "\n".join(line for line in out if line)


def mapping_lines(study: dict) -> list[str]:
    """What a records mapping did, as lines: counts, melt, item ids, rules, relabels, warnings.

    Examples
    --------
    >>> mapping_lines({"counts": {"rows_mapped": 2}, "rules": [{"rule": "c = x -> excluded",
    ...                                                          "rows": 1}]})
    ['mapping: rows mapped 2', 'rule c = x -> excluded: 1 rows']
    """
    out = []
    counts = study.get("counts")
    if counts:
        out.append("mapping: " + ", ".join(f"{k.replace('_', ' ')} {v}"
                                           for k, v in counts.items()))
    melt = study.get("melt")
    if melt:
        groups = list(melt.get("groups") or {})
        out.append(f"melted: columns {melt['columns']!r} give {len(groups)} groups ("
                   + ", ".join(groups[:8]) + (", ..." if len(groups) > 8 else "") + ")")
    if study.get("item_id"):
        out.append(f"item_id: {study['item_id']}")
    if study.get("path_pattern"):
        out.append(f"fields from each file's path: {study['path_pattern']!r}")
    absent = study.get("options_absent") or {}
    if absent:
        files = sorted(absent)
        out.append("option columns absent (rows choosing them are quarantined): "
                   + "; ".join(f"{f}: {', '.join(absent[f])}" for f in files[:4])
                   + (f"; and {len(files) - 4} more files" if len(files) > 4 else ""))
    out += [f"rule {r['rule']}: {r['rows']} rows" for r in study.get("rules") or []]
    for field, pairs in (study.get("relabelled") or {}).items():
        out.append(f"relabelled {field}: " + ", ".join(f"{k} ({v})" for k, v in pairs.items()))
    out += [f"warning: {w}" for w in study.get("warnings") or []]
    return out
