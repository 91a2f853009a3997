"""The accounting that travels with ingested records: a ``records.parquet`` and its ``ingest.json``.

When a Parquet input has an ``ingest.json`` beside it whose ``records_sha256`` is the
input's own SHA-256 and whose ``records_used`` is the number of rows read from it, that
ingest's read, quarantined, duplicate and excluded counts (and reasons) are carried, so
``read = used + quarantined + duplicate + excluded`` still holds over several ingests
(``carried``); an ``ingest.json`` that does not describe the file is named in
``carried_not_trusted``. The rule as a user meets it: ``docs/records.md`` ("Accounting").
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from selfmodel.records.contract import JSON_ERRORS
from selfmodel.records.ingest.discover import InputFile

__all__ = ["CARRIED_COUNTS", "carry", "file_sha256", "upstream_accounting"]

#: The counts of an ``ingest.json`` that a run over its ``records.parquet`` adds up.
CARRIED_COUNTS: Final = ("records_quarantined", "records_duplicate", "records_excluded")
#: The name of the accounting file beside a ``records.parquet``.
INGEST_JSON: Final = "ingest.json"


def file_sha256(path: Path) -> str:
    """SHA-256 of a file's bytes (hex)."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def upstream_accounting(inp: InputFile, sha256: str, rows: int
                        ) -> tuple[dict[str, Any] | None, str | None]:
    """The ``ingest.json`` beside a Parquet input, when it describes exactly this file.

    Returns ``(summary, None)`` when trusted, ``(None, why)`` when an ``ingest.json`` is
    there but does not describe the file, ``(None, None)`` when there is none.
    """
    beside = inp.path.parent / INGEST_JSON
    if inp.format != "parquet" or not beside.is_file():
        return None, None
    try:
        summary = json.loads(beside.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, *JSON_ERRORS) as exc:
        return None, f"{INGEST_JSON} beside it could not be read ({type(exc).__name__})"
    if not isinstance(summary, dict):
        return None, f"{INGEST_JSON} beside it is not an ingest summary"
    recorded = summary.get("records_sha256")
    if not recorded:
        return None, (f"{INGEST_JSON} beside it names no records_sha256 (written by an older "
                      "selfmodel): rerun selfmodel ingest to carry its accounting")
    if recorded != sha256:
        return None, (f"{INGEST_JSON} beside it describes another records.parquet (SHA-256 "
                      f"{str(recorded)[:12]}..., this file {sha256[:12]}...): the file was "
                      "changed after that ingest")
    if summary.get("records_used") != rows:
        return None, (f"{INGEST_JSON} beside it says {summary.get('records_used')} records were "
                      f"kept, the file has {rows}")
    counts = [summary.get(k, 0) for k in ("records_read", *CARRIED_COUNTS)]
    reasons = [summary.get(k) or {} for k in ("quarantine_reasons", "excluded_reasons")]
    if not all(isinstance(n, int) and n >= 0 for n in counts) or not all(
            isinstance(r, dict) and all(isinstance(n, int) for n in r.values()) for r in reasons):
        return None, f"{INGEST_JSON} beside it has counts that are not whole numbers"
    return summary, None


def carry(summary: dict[str, Any], inputs: Sequence[InputFile],
          files: Sequence[Mapping[str, Any]]) -> None:
    """Add the accounting of each ingested ``records.parquet`` input to ``summary`` (in place).

    ``files`` are the summary's ``files`` (``path``, ``rows``, ``sha256`` per input, in the
    order of ``inputs``). See the module docstring.
    """
    carried: list[dict[str, Any]] = []
    not_trusted: list[dict[str, str]] = []
    reasons: Counter[str] = Counter(summary.get("quarantine_reasons") or {})
    excluded: Counter[str] = Counter(summary.get("excluded_reasons") or {})
    for inp, f in zip(inputs, files, strict=True):
        up, why = upstream_accounting(inp, str(f["sha256"]), int(f["rows"]))
        if why is not None:
            not_trusted.append({"path": inp.name, "reason": why})
        if up is None:
            continue
        counts = {k: int(up.get(k) or 0) for k in ("records_read", "records_used", *CARRIED_COUNTS)}
        why_quarantined = {str(k): int(v) for k, v in (up.get("quarantine_reasons") or {}).items()}
        why_excluded = {str(k): int(v) for k, v in (up.get("excluded_reasons") or {}).items()}
        carried.append({"path": inp.name,
                        "accounting": (Path(inp.name).parent / INGEST_JSON).as_posix(),
                        **counts, "quarantine_reasons": why_quarantined,
                        "excluded_reasons": why_excluded})
        summary["records_read"] += counts["records_read"] - int(f["rows"])
        for k in CARRIED_COUNTS:
            summary[k] = int(summary.get(k) or 0) + counts[k]
        reasons.update(why_quarantined)
        excluded.update(why_excluded)
    summary["quarantine_reasons"] = dict(sorted(reasons.items()))
    summary["excluded_reasons"] = dict(sorted(excluded.items()))
    summary["carried"] = carried
    summary["carried_not_trusted"] = not_trusted
