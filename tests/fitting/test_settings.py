"""The sampler settings are declared once: the CLI's defaults are read from them."""

from __future__ import annotations

import pytest

from selfmodel.cli import build_parser
from selfmodel.fitting.settings import SamplerSettings


@pytest.mark.parametrize("command", ["run", "fit"])
def test_cli_sampler_defaults_are_the_declared_settings(command: str) -> None:
    args = build_parser().parse_args([command])
    declared = SamplerSettings()
    assert (args.draws, args.tune, args.chains) == (declared.draws, declared.tune, declared.chains)


def test_the_cli_default_follows_a_changed_declaration(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not a copy of today's numbers: the parser is built from the declaration."""
    import selfmodel.cli as cli

    monkeypatch.setattr(cli, "SAMPLER", SamplerSettings(draws=123, tune=45, chains=3))
    args = build_parser().parse_args(["run"])
    assert (args.draws, args.tune, args.chains) == (123, 45, 3)
