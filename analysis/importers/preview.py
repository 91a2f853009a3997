"""``selfmodel import ... --preview``: what an import would write, shown before anything is.

The preview is text: the first mapped records, the number of records per model and task
(with their statuses), and a registry template (CSV) for the models found, ``params_b``
filled where the logs state a size (lm-eval's ``config.model_num_parameters``). Nothing is
written; the template is meant to be completed and saved as ``registry.csv``.
"""

from __future__ import annotations

import polars as pl

from selfmodel.importers.result import ImportResult

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
