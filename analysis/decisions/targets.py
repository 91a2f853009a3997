"""The targets of an operating-characteristics arm, and a kind of decision's status in words.

The validation map (:mod:`selfmodel.decisions.validation_map`) holds each arm of a study to its
targets with :func:`target_check` and says a kind's status with :func:`status_words`; the
first screen (:mod:`selfmodel.decisions.verdict`) and the report print those words. Nothing
here fits or samples, so the report may import it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["COVERAGE_TOLERANCE", "coverage_range", "first_screen", "status_words", "target_check", "target_words"]

#: Half-width of the coverage range around an interval's nominal level, for a study that declares
#: no range: the pipeline study's own (94% -> 0.91-0.97), about the Monte Carlo error at 200 data sets.
COVERAGE_TOLERANCE = 0.03

def coverage_range(level: float) -> list[float]:
    """The coverage range of an interval of nominal ``level`` when its study declares none.

    >>> coverage_range(0.94), coverage_range(0.95), coverage_range(0.99)
    ([0.91, 0.97], [0.92, 0.98], [0.96, 1.0])
    """
    return [round(level - COVERAGE_TOLERANCE, 4), round(min(1.0, level + COVERAGE_TOLERANCE), 4)]


def target_check(what: str, value: float | None, ci95: Sequence[float] | None, *,
                 at_most: float | None = None, within: Sequence[float] | None = None,
                 declared_by: str = "the study") -> dict[str, Any]:
    """One target of an arm and whether the arm's figure meets it (``met``; ``None``: no figure).

    A rate (``at_most``: the largest acceptable rate) misses its bound only when the exact
    95% interval lies wholly above it (its lower end above the bound): a bound that is the
    rule's nominal level is where a calibrated rule sits, and a point estimate above it would
    flag such a rule about half the time; the interval flags it 2.5% of the time. A coverage
    (``within``: a range) meets it when the point is inside the range: the range is already
    the nominal level widened by the Monte Carlo error of the study's data sets.

    >>> target_check("false 'improves'", 0.075, [0.043, 0.12], at_most=0.05)["met"]
    True
    >>> target_check("false 'improves'", 0.09, [0.055, 0.14], at_most=0.05)["met"]
    False
    >>> target_check("94% HDI coverage", 0.90, [0.82, 0.95], within=[0.91, 0.97])["met"]
    False
    """
    out: dict[str, Any] = {"measure": what, "value": value, "ci95": list(ci95) if ci95 else None,
                           "declared_by": declared_by}
    if at_most is not None:
        out["at_most"] = at_most
        low = ci95[0] if ci95 else value
        out["met"] = None if low is None else bool(low <= at_most + 1e-12)
        out["rule"] = "missed when the exact 95% interval lies wholly above the bound"
    else:
        assert within is not None
        out["within"] = [float(within[0]), float(within[1])]
        out["met"] = None if value is None else bool(within[0] - 1e-12 <= value <= within[1] + 1e-12)
        out["rule"] = "met when the point is inside the range"
    return out


def _figure(v: float | None, as_rate: bool) -> str:
    """A rate in percent, a coverage to the digits it was counted in (0.90, 0.985)."""
    if v is None:
        return "n/a"
    if as_rate:
        return f"{100 * v:.1f}%"
    text = f"{v:.3f}"
    return text[:-1] if text.endswith("0") else text


def _bound(c: float) -> str:
    """An interval's end to two decimals, or three where two would print 1.00 for less than 1."""
    for digits in (2, 3, 4):
        text = f"{c:.{digits}f}"
        if c >= 1 or float(text) < 1:
            return text
    return text


def target_words(t: Mapping[str, Any]) -> str:
    """A target check in words: the figure, its interval and the target.

    >>> target_words(target_check("94% HDI coverage", 0.9, [0.8238, 0.951], within=[0.91, 0.97]))
    '94% HDI coverage 0.90 [0.82, 0.95], target 0.91-0.97'
    >>> target_words(target_check("false 'improves'", 0.09, [0.055, 0.14], at_most=0.05))
    "false 'improves' 9.0% [5.5, 14.0], target at most 5.0%"
    """
    rate_like = "at_most" in t
    ci = t.get("ci95")
    if ci:
        shown = [f"{100 * c:.1f}" for c in ci] if rate_like else [_bound(c) for c in ci]
        ci_text = f" [{shown[0]}, {shown[1]}]"
    else:
        ci_text = ""
    target = (f"at most {100 * t['at_most']:.1f}%" if rate_like
              else f"{_figure(t['within'][0], False)}-{_figure(t['within'][1], False)}")
    return f"{t['measure']} {_figure(t['value'], rate_like)}{ci_text}, target {target}"


def _settings_short(arm: Mapping[str, Any]) -> str:
    """An arm not at the pipeline's settings, with its counts of records, in a few words."""
    parts = []
    if "records_at_other_settings" in arm:  # a study that counts its records (the pipeline study's)
        other = arm["records_at_other_settings"]
        if other is None or other:
            parts.append(f"{'some' if other is None else other} records at other settings")
        for key, what in (("records_without_settings", "settings"), ("records_without_versions", "versions")):
            if arm.get(key):
                parts.append(f"{what} of {arm[key]} not recorded")
    if not parts:
        parts.append("other sampler settings" if arm["settings"] == "other" else "settings or versions not recorded")
    return f"{arm['arm']} ({', '.join(parts)})"


def status_words(row: Mapping[str, Any]) -> str:
    """A kind's status in one sentence with its figures, for the first screen (``""`` when ``checked``).

    Every reason is said, in the order of ``selfmodel.decisions.validation_map.STATUSES``: the missed targets with their
    figures, the arms not at the pipeline's settings with their counts of records, the
    missing or short arms, the arms with no target.

    >>> arm = {"arm": "d:x", "check": "coverage", "n": 100, "target_n": 100, "complete": True,
    ...        "settings": "pipeline", "meets_target": False, "targets": [target_check(
    ...            "94% HDI coverage", 0.9, [0.82, 0.95], within=[0.91, 0.97])]}
    >>> status_words({"decision": "d' slope", "status": "missed", "missing": [], "arms": [arm]})
    "d' slope -- missed: the coverage arm d:x, 94% HDI coverage 0.90 [0.82, 0.95], target 0.91-0.97."
    """
    if row["status"] == "checked":
        return ""
    if row["status"] == "none":
        return f"{row['decision']} -- no operating-characteristics study."
    arms = [a for a in row["arms"] if a["n"]]
    missed = [f"the {a['check']} arm {a['arm']}, {target_words(t)}" for a in arms if a["complete"]
              for t in a["targets"] if t["met"] is False]
    settings = [_settings_short(a) for a in arms if a["settings"] in ("other", "not_recorded")]
    short = ([f"no {c} arm" for c in row["missing"]]
             + [f"{a['arm']} has {a['n']} of {a['target_n']} data sets" for a in arms if not a["complete"]])
    untargeted = [a["arm"] for a in arms if a["complete"] and a["meets_target"] is None]
    groups = [(f"missed: {'; '.join(missed)}" if missed else ""),
              (f"not at the pipeline's settings: {', '.join(settings)}" if settings else ""),
              (f"partial: {'; '.join(short)}" if short else ""),
              (f"no target for {', '.join(untargeted)}" if untargeted else "")]
    return f"{row['decision']} -- " + "; ".join(g for g in groups if g) + "."




def _target_text(t: Mapping[str, Any]) -> str:
    """A target alone: ``coverage 0.91-0.97`` or ``false 'improves' at most 5.0%``."""
    if "within" in t:
        return f"coverage {_figure(t['within'][0], False)}-{_figure(t['within'][1], False)}"
    return f"{t['measure']} at most {100 * t['at_most']:.1f}%"


def first_screen(rows: Sequence[Mapping[str, Any]]) -> str:
    """The kinds of ``rows`` that are not ``checked``, in one short sentence for the first screen.

    Grouped by status: the kinds that missed a target, each with its first missed figure (and
    how many more: ``+2``), then the targets once; the kinds with arms at other or unrecorded sampler
    settings; the partly checked; those with no study. The verdict block must fit the first
    screen, so the arms and intervals are left to the validation map (:func:`status_words`).

    >>> arm = {"arm": "d:x", "check": "coverage", "n": 100, "target_n": 100, "complete": True,
    ...        "settings": "other", "meets_target": False, "targets": [target_check(
    ...            "94% HDI coverage", 0.9, [0.82, 0.95], within=[0.91, 0.97])]}
    >>> first_screen([{"short": "d' slope", "status": "missed", "missing": [], "arms": [arm]}])
    "missed a target: d' slope (0.90), against coverage 0.91-0.97; sampler settings other or not recorded: d' slope"
    """
    missed: list[str] = []
    targets: dict[str, list[str]] = {}
    off: list[str] = []
    part: list[str] = []
    none: list[str] = []
    for row in rows:
        name = row.get("short") or row["decision"]
        if row["status"] == "none":
            none.append(name)
            continue
        arms = [a for a in row["arms"] if a["n"]]
        ts = [t for a in arms if a["complete"] for t in a["targets"] if t["met"] is False]
        if ts:
            more = f", +{len(ts) - 1}" if len(ts) > 1 else ""
            missed.append(f"{name} ({_figure(ts[0]['value'], 'at_most' in ts[0])}{more})")
            targets.setdefault(_target_text(ts[0]), []).append(name)
        if any(a["settings"] in ("other", "not_recorded") for a in arms):
            off.append(name)
        if row["missing"] or any(not a["complete"] for a in arms):
            part.append(name)
    groups = []
    if missed:
        common = max(targets, key=lambda t: len(targets[t]))
        others = [f"{', '.join(names)}: {t.removeprefix('coverage ') if common.startswith('coverage') else t}"
                  for t, names in targets.items() if t != common]
        groups.append(f"missed a target: {', '.join(missed)}, against {common}"
                      + (f" ({'; '.join(others)})" if others else ""))
    for what, names in (("sampler settings other or not recorded", off), ("partly checked", part),
                        ("no study", none)):
        if names:
            groups.append(f"{what}: {', '.join(names)}")
    return "; ".join(groups)
