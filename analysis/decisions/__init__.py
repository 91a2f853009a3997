"""Decisions and the words for them: the declared rule on fitted effects, declared hypotheses, multiplicity, the verdict and status sentences."""
