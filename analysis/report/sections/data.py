"""The data (``#sec-data``): every record accounted for, the models and the tasks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from selfmodel.records.contract import STATUS_MEANING
from selfmodel.report.sections.common import Out, Report, esc, md_table, num

__all__ = ["accounting", "models_table", "status_counts", "tasks_table"]


def accounting(rep: Report) -> str:
    """Input hash, records read/used/quarantined/duplicate/excluded, statuses, reasons, files."""
    data, out = rep.results["data"], Out()
    out(f"Input SHA-256: `{data['sha256']}`.\n")
    excluded = int(data.get("records_excluded") or 0)
    out(f"Records read **{data['records_read']}**, used **{data['records_used']}**, quarantined "
        f"**{data['records_quarantined']}**, duplicates counted once **{data['records_duplicate']}**"
        + (f", excluded by the mapping's rules **{excluded}**" if excluded else "")
        + f" (read = used + quarantined + duplicate{' + excluded' if excluded else ''}). "
        f"Unreadable predictions kept (status `unparsed`, `refused` or `error`): "
        f"{data['unreadable_predictions']}.\n")
    carried = data.get("carried") or []
    if carried:
        out("These counts include the accounting of the ingest that made each `records.parquet` read "
            "(its quarantined rows are in the `quarantine.parquet` beside it; this run's own in "
            "`quarantine.parquet` here):\n")
        out(md_table(["records.parquet", "read", "used", "quarantined", "duplicate", "excluded"],
                     [[esc(c["path"]), c["records_read"], c["records_used"], c["records_quarantined"],
                       c["records_duplicate"], c.get("records_excluded", 0)] for c in carried],
                     ["---"] + ["---:"] * 5))
        out()
    for bad in data.get("carried_not_trusted") or []:
        out(f"Not carried: {esc(bad['path'])}: {esc(bad['reason'])}.\n")
    out(status_counts(data))
    if data.get("excluded_reasons"):
        out("Rows left out by the records mapping's rules:\n")
        out(md_table(["reason", "rows"], [[esc(k), v] for k, v in data["excluded_reasons"].items()]))
        out()
    if data.get("quarantine_reasons"):
        out("Quarantine reasons (see `quarantine.parquet` for file and line):\n")
        reasons = sorted(data["quarantine_reasons"].items(), key=lambda kv: -kv[1])
        out(md_table(["reason", "records"], [[esc(k), v] for k, v in reasons]))
        out()
    files = data.get("files") or []
    if files:
        out("\nSource files:\n")
        out(md_table(["file", "rows"], [[esc(f.get("path", "")), f.get("rows", "")] for f in files]))
    return str(out)


def status_counts(data: Mapping[str, Any]) -> str:
    """The used records by status, each under its own name, with what it means ("" if all ok)."""
    statuses = {k: int(v) for k, v in (data.get("statuses") or {}).items() if v}
    if set(statuses) <= {"ok"}:
        return ""
    rows = [[f"`{k}`" if k in STATUS_MEANING else esc(k), v, esc(STATUS_MEANING.get(k, ""))]
            for k, v in sorted(statuses.items(), key=lambda kv: (kv[0] != "ok", kv[0]))]
    return ("Used records by status:\n\n" + md_table(["status", "records", "meaning"], rows,
                                                     ["---", "---:", "---"]) + "\n")


def models_table(rep: Report) -> str:
    """Models: family, size, records and whether each is in the slope."""
    return md_table(["model", "family", "params (B)", "active (B)", "records", "in slope"],
                    [[esc(m["model"]), esc(m["family"]), num(m["params_b"], "g"), num(m["active_params_b"], "g"),
                      m["records"], "yes" if m["in_scale_fit"] else "no"] for m in rep.results["models"]],
                    ["---", "---", "---:", "---:", "---:", "---"])


def tasks_table(rep: Report) -> str:
    """Tasks: models, records, unreadable predictions, outcome base rate and pooled accuracy.

    Rows with nothing to score (``not asked``, ``unanswered``) get their own columns when
    any task has them; ``records`` are the self-predictions to score.
    """
    tasks = rep.results["tasks"]
    extra = [(k, label) for k, label in (("n_not_asked", "not asked"), ("n_unanswered", "unanswered"))
             if any(t.get(k) for t in tasks)]
    return md_table(["task", "models", "records", "unreadable", *(label for _, label in extra),
                     "outcome base rate", "accuracy"],
                    [[esc(t["task"]), t["models"], t["n_total"], t["n_unreadable"],
                      *(t.get(k, 0) for k, _ in extra), num(t["outcome_base_rate"]),
                      num(t["accuracy"])] for t in tasks],
                    ["---", "---:", "---:", "---:", *(["---:"] * len(extra)), "---:", "---:"])
