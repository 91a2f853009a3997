"""The console table of ``selfmodel power``: each column holds the outcome its header names."""

from __future__ import annotations

import io

from rich.console import Console

from selfmodel.power.design import OUTCOMES
from selfmodel.power.output import power_table
from selfmodel.records.contract import DECISIONS


def test_each_outcome_column_holds_its_own_probability() -> None:
    row = {"slope": 0.2, "mean_posterior_sd": 0.123}
    row |= {f"p_{o}": (i + 1) / 100 for i, o in enumerate(OUTCOMES)}  # 0.01, 0.02, ... by outcome
    table = power_table({"units": "logits", "sims": 10, "results": [row]})
    headers = [str(c.header) for c in table.columns]
    assert headers == ["slope", *(o.replace("_", " ") for o in OUTCOMES), "mean post. sd"]
    cells = {str(c.header): next(iter(c.cells)) for c in table.columns}
    for i, o in enumerate(OUTCOMES):
        assert cells[o.replace("_", " ")] == f"{(i + 1) / 100:.2f}", o
    assert cells["mean post. sd"] == "0.123"
    out = io.StringIO()
    Console(file=out, width=200).print(table)
    assert "practically null" in out.getvalue()


def test_the_outcomes_are_the_rules_words_most_positive_first() -> None:
    assert OUTCOMES == ("improves", "credibly_positive", "no_credible_effect", "practically_null",
                        "credibly_negative", "worsens")
    assert set(OUTCOMES) == set(DECISIONS) - {"not_estimable", "not_decided"}
