"""Fitting: sampling with diagnostics and provenance, the fit and compile caches, worker processes, model checks, posterior summaries, reweighting."""
