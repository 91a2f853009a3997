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
    fit, settings, run, out = rep.results.get("fit") or {}, rep.results["settings"], rep.run, Out()
    out(f"- Command: {code(run.get('command', 'selfmodel run'))}")
    out(f"- Seed: {settings['seed']}; scale variable: `{settings['scale']}`; ROPE ±{settings['rule']['rope']}")
    sm = settings["sampler"]
    out(f"- Sampler: {sm['sampler']}, {sm['chains']} chains x {sm['draws']} draws after {sm['tune']} tuning, "
        f"target_accept {sm['target_accept']}" + "".join(
            f"; model `{esc(name)}`: {own['chains']} x {own['draws']} draws after {own['tune']} tuning, "
            f"target_accept {own['target_accept']} (its `SPEC.sampling`)"
            for name, own in sorted((settings.get("sampler_by_model") or {}).items())))
    if fit:
        out(f"- Fit file: {code(fit['file'])} (cache key `{fit['cache_key'][:16]}`), data SHA-256 of cells "
            f"`{fit['data_sha256'][:16]}…`")
        out("- Versions: " + ", ".join(f"{esc(k)} {esc(v)}" for k, v in sorted(fit["versions"].items())))
    if run:
        out(f"- Platform: {esc(run.get('platform', ''))}; started {esc(run.get('started_utc', ''))}; "
            f"sampling {num(run.get('sampling_seconds'), '.1f')} s"
            + (" (reused saved fit)" if run.get("fit_reused") else ""))
    out("\nRerun: `make report` (default data) or `selfmodel run YOUR_LOGS --registry models.csv --seed "
        f"{settings['seed']} --scale {settings['scale']}`.")
    return str(out)
