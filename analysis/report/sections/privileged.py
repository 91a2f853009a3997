"""The report's privileged-access section, as Markdown, from ``results.json`` (issue 28.1).

Reads ``training_effect.privileged_access`` (:mod:`selfmodel.analyses.privileged`) and writes the
contrast per checkpoint with its decision and reading, the held-out tasks and other
predictors, and the shipped operating characteristics' figures; every number comes from the
results or the study's summary. The report's cell only prints :func:`section`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from selfmodel.decisions.verdict import fmt_number
from selfmodel.report.render_base import escape_md as esc
from selfmodel.report.sections.common import Report


def _num(v: float | None) -> str:
    return fmt_number(v, "+.2f")


def _iv(e: Mapping[str, Any], lo: str = "hdi_low", hi: str = "hdi_high") -> str:
    return f"[{_num(e.get(lo))}, {_num(e.get(hi))}]"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return out + ["| " + " | ".join(r) + " |" for r in rows]


def _code(s: object) -> str:
    return f"<code>{esc(s)}</code>"


def _main_rows(per: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    rows = []
    for e in per:
        if e["decision"] == "not_estimable" and e.get("estimate") is None:
            rows.append([_code(e["model"]), _code(e["base_model"]), "—", "—", "—", "—",
                         _code("not_estimable")])
            continue
        rows.append([_code(e["model"]), _code(e["base_model"]), str(e["n_items"]),
                     f"{_num(e['self_gain'])} {_iv(e, 'self_gain_low', 'self_gain_high')}",
                     f"{_num(e['other_gain'])} {_iv(e, 'other_gain_low', 'other_gain_high')}",
                     f"{_num(e['estimate'])} {_iv(e)}", _code(e["decision"])])
    return rows


def _secondary(per: Sequence[Mapping[str, Any]]) -> list[str]:
    """Held-out tasks and other predictors of both targets, one line per checkpoint."""
    out = []
    for e in per:
        if "held_out" not in e:
            continue
        h = e["held_out"]
        parts = [f"held-out tasks {_num(h.get('estimate'))} {_iv(h)} {_code(h['decision'])}"]
        parts += [f"against predictor {_code(v['predictor'])} {_num(v.get('estimate'))} "
                  f"{_iv(v)} {_code(v['decision'])}" for v in e.get("vs_other_predictors", [])]
        out.append(f"- {_code(e['model'])}: " + "; ".join(parts))
    return out


def operating_characteristics_sentence(cal: Mapping[str, Any]) -> str:
    """What the shipped operating-characteristics study measured, with its command (or that none is shipped)."""
    if not cal.get("available"):
        return f"No operating-characteristics study is shipped: {esc(cal.get('reason', ''))}."
    arms = cal["arms"]

    def r(x: Mapping[str, Any]) -> str:
        return (f"{x['k']} of {x['n']} ({fmt_number(x['rate'], '.1%')}; "
                f"{esc(cal['interval'])} {fmt_number(x['ci_low'], '.1%')} to "
                f"{fmt_number(x['ci_high'], '.1%')})")

    text = [f"**Operating characteristics** ({_code(cal['command'])}, independent generator, default rule, "
            f"{cal['n_boot']} bootstrap replicates): positive decisions under no privileged gain"]
    for name in ("null", "misspecified_null"):
        if name in arms:
            a = arms[name]
            failed = sum(f["failed"] for f in a["families"].values())
            text.append(f"{esc(name.replace('_', ' '))}: {r(a['positive_pooled'])}, "
                        f"{failed} failed")
    if "null" in arms and "held_out_positive_pooled" in arms["null"]:
        text.append(f"held-out contrasts under the null: {r(arms['null']['held_out_positive_pooled'])}")
    t = arms.get("truth")
    if t:
        f = t["families"]
        text.append(f"with truth: fully privileged positive in {r(f['full']['positive'])}, no "
                    f"privileged access in {r(f['none']['positive'])}, ordered full > half > "
                    f"none in {r(t['ordered_full_half_none'])}")
    return "; ".join(text) + "."


def privileged_markdown(training: Mapping[str, Any] | None) -> str:
    """The section's Markdown from ``results.json["training_effect"]`` (or ``None``)."""
    pa = (training or {}).get("privileged_access")
    if not pa:
        reason = (training or {}).get("reason", "no training_effect in these results")
        return f"Not estimated: {esc(reason)}.\n"
    lines = [f"Do the gains from training come from privileged access? {esc(pa['method'])}. "
             f"Units: {esc(pa['units'])}; ROPE ±{pa['rule']['rope']:g}; intervals hold "
             f"{pa['rule']['hdi_prob']:.0%} of {pa['n_boot']} bootstrap replicates.", ""]
    if pa.get("decision_basis"):
        lines += [f"**Decisions from a bootstrap.** The words below are {esc(pa['decision_basis'])}.",
                  ""]
    if not pa.get("available"):
        lines += [f"**Not estimable**: {esc(pa.get('reason', ''))}.", ""]
    per = pa.get("per_checkpoint", [])
    if per and pa.get("available"):
        lines += _table(["checkpoint", "base", "items (trained)", "self-gain", "other-gain",
                         "contrast", "decision"], _main_rows(per))
        m = pa["mean"]
        lines += ["", f"Mean over checkpoints: {_num(m.get('estimate'))} {_iv(m)}, "
                  f"{_code(m['decision'])}.", "", "Reading, per checkpoint:", ""]
        lines += [f"- {_code(e['model'])}: {esc(e['reading'])}"
                  + (f" ({esc(e['reason'])})" if e["decision"] == "not_estimable" else "")
                  for e in per]
        lines += ["", "Held-out tasks and other predictors of both targets:", ""]
        lines += _secondary(per)
    lines += ["", operating_characteristics_sentence(pa.get("operating_characteristics") or {}), ""]
    return "\n".join(lines)


__all__ = ["operating_characteristics_sentence", "privileged_markdown"]


def section(rep: Report) -> str:
    """The privileged-access section of the report's results."""
    return privileged_markdown(rep.results.get("training_effect"))
