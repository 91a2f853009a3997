"""The analyses that read cells: skill beyond base rates, descriptives, training, self versus other, the frequentist cross-checks."""
