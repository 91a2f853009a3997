"""The data (``#sec-data``): every record accounted for, the models and the tasks."""

from __future__ import annotations

from selfmodel.report.sections.common import Out, Report, esc, md_table, num

__all__ = ["accounting", "models_table", "tasks_table"]


def accounting(rep: Report) -> str:
    """Input hash, records read/used/quarantined/duplicate, quarantine reasons, source files."""
    D, out = rep.results["data"], Out()
    out(f"Input SHA-256: `{D['sha256']}`.\n")
    excluded = D.get("records_excluded") or 0
    out(f"Records read **{D['records_read']}**, used **{D['records_used']}**, quarantined "
        f"**{D['records_quarantined']}**, duplicates counted once **{D['records_duplicate']}** "
        + (f"excluded by the mapping's rules **{excluded}** (read = used + quarantined + "
           "duplicate + excluded)" if excluded else "(read = used + quarantined + duplicate)")
        + f". Unreadable predictions kept as `status != ok`: {D['unreadable_predictions']}.\n")
    if D.get("quarantine_reasons"):
        out("Quarantine reasons (see `quarantine.parquet` for file and line):\n")
        reasons = sorted(D["quarantine_reasons"].items(), key=lambda kv: -kv[1])
        out(md_table(["reason", "records"], [[esc(k), v] for k, v in reasons]))
        out()
    files = D.get("files") or []
    if files:
        out("\nSource files:\n")
        out(md_table(["file", "rows"], [[esc(f.get("path", "")), f.get("rows", "")] for f in files]))
    return str(out)


def models_table(rep: Report) -> str:
    """Models: family, size, records and whether each is in the slope."""
    return md_table(["model", "family", "params (B)", "active (B)", "records", "in slope"],
                    [[esc(m["model"]), esc(m["family"]), num(m["params_b"], "g"), num(m["active_params_b"], "g"),
                      m["records"], "yes" if m["in_scale_fit"] else "no"] for m in rep.results["models"]],
                    ["---", "---", "---:", "---:", "---:", "---"])


def tasks_table(rep: Report) -> str:
    """Tasks: models, records, unreadable predictions, outcome base rate and pooled accuracy."""
    return md_table(["task", "models", "records", "unreadable", "outcome base rate", "accuracy"],
                    [[esc(t["task"]), t["models"], t["n_total"], t["n_unreadable"], num(t["outcome_base_rate"]),
                      num(t["accuracy"])] for t in rep.results["tasks"]],
                    ["---", "---:", "---:", "---:", "---:", "---:"])
