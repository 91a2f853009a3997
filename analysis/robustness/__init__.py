"""Robustness: does the verdict survive other choices? Priors, the scale variable, families left out, confounds, missingness, mixed predictive checks, the SDT cross-check."""
