"""Methods paragraph and reproducibility (``#sec-methods``, ``#sec-repro``): from the saved provenance."""

from __future__ import annotations

from selfmodel.report.methods import methods_text
from selfmodel.report.sections.common import Out, Report, code, esc, num

__all__ = ["methods", "reproducibility"]


def methods(rep: Report) -> str:
    """The generated methods paragraph, as a block quote ready to paste."""
    return "> " + esc(methods_text(rep.results))


def reproducibility(rep: Report) -> str:
    """Command, seed, sampler, fit file, versions, platform and how to rerun."""
    F, S, RUN, out = rep.results.get("fit") or {}, rep.results["settings"], rep.run, Out()
    out(f"- Command: {code(RUN.get('command', 'selfmodel run'))}")
    out(f"- Seed: {S['seed']}; scale variable: `{S['scale']}`; ROPE ±{S['rule']['rope']}")
    sm = S["sampler"]
    out(f"- Sampler: {sm['sampler']}, {sm['chains']} chains x {sm['draws']} draws after {sm['tune']} tuning, "
        f"target_accept {sm['target_accept']}" + "".join(
            f"; model `{esc(name)}`: {own['chains']} x {own['draws']} draws after {own['tune']} tuning, "
            f"target_accept {own['target_accept']} (its `SPEC.sampling`)"
            for name, own in sorted((S.get("sampler_by_model") or {}).items())))
    if F:
        out(f"- Fit file: {code(F['file'])} (cache key `{F['cache_key'][:16]}`), data SHA-256 of cells "
            f"`{F['data_sha256'][:16]}…`")
        out("- Versions: " + ", ".join(f"{esc(k)} {esc(v)}" for k, v in sorted(F["versions"].items())))
    if RUN:
        out(f"- Platform: {esc(RUN.get('platform', ''))}; started {esc(RUN.get('started_utc', ''))}; "
            f"sampling {num(RUN.get('sampling_seconds'), '.1f')} s"
            + (" (reused saved fit)" if RUN.get("fit_reused") else ""))
    out("\nRerun: `make report` (default data) or `selfmodel run YOUR_LOGS --registry models.csv --seed "
        f"{S['seed']} --scale {S['scale']}`.")
    return str(out)
