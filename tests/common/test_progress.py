"""Progress lines of the long steps (issue 13): format, throttling, terminal vs not, --quiet."""

from __future__ import annotations

import io
from dataclasses import dataclass

import pytest

import selfmodel.pipeline.stages as pipeline
from selfmodel.cli import main
from selfmodel.common import progress


@dataclass
class Chain:
    """What nutpie's ``progress_callback`` passes per chain (the fields read)."""

    finished_draws: int
    total_draws: int
    divergences: int
    tuning: bool


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def plain(stream: io.StringIO, clock: Clock) -> progress.Reporter:
    return progress.Reporter(stream, live=False, plain_interval=5.0, clock=clock)


def test_plain_lines_are_throttled_and_end_with_the_final_count() -> None:
    out, clock = io.StringIO(), Clock()
    with progress.reporting(plain(out, clock)):
        cb = progress.fit_callback("sampling 'scale'", chains=2)
        assert cb is not None
        cb([Chain(0, 1500, 0, True), Chain(0, 1500, 0, True)])  # first call: shown
        clock.t += 2.0
        cb([Chain(300, 1500, 0, True), Chain(280, 1500, 0, True)])  # 2 s later: held back
        clock.t += 4.0
        cb([Chain(900, 1500, 1, False), Chain(850, 1500, 2, False)])  # 6 s: shown
        clock.t += 1.0
        cb.finish()
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue()
    assert lines == [
        "selfmodel   sampling 'scale': 0/3000 draws (tuning), 2 chains, 0 divergences, 0 s",
        "selfmodel   sampling 'scale': 1750/3000 draws, 2 chains, 3 divergences, 6 s",
        "selfmodel   sampling 'scale': 3000/3000 draws, 2 chains, 3 divergences, 7 s",
    ]


def test_a_terminal_gets_one_line_redrawn_in_place() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    out = Tty()
    rep = progress.make_reporter(out)
    assert rep is not None and rep.live
    rep.clock = Clock()
    with progress.reporting(rep):
        cb = progress.fit_callback("sampling 'sdt'", chains=1)
        assert cb is not None
        cb([Chain(10, 100, 1, True)])
        cb.finish()
    text = out.getvalue()
    assert text.startswith("\rselfmodel   sampling 'sdt': 10/100 draws (tuning), 1 chains, 1 divergence")
    assert text.endswith("100/100 draws, 1 chains, 1 divergence, 0 s\x1b[K\n")
    assert text.count("\n") == 1


def test_refit_loops_number_their_steps_and_fits() -> None:
    out, clock = io.StringIO(), Clock()
    prefixes, fit_lines = [], []
    with progress.reporting(plain(out, clock)):
        with progress.steps("prior sensitivity ('scale')", 2) as st:
            for _ in range(2):
                prefixes.append(st.next())
                cb = progress.fit_callback("sampling 'scale'", chains=4)
                assert cb is not None
                clock.t += 10
                cb.finish()
                fit_lines.append(out.getvalue().splitlines()[-1])
        assert progress.step_prefix() == ""
    assert prefixes == ["[1/2] ", "[2/2] "]
    assert fit_lines[1].startswith("selfmodel   [2/2] sampling 'scale': 0/0 draws")
    assert out.getvalue().splitlines()[-1] == "selfmodel   prior sensitivity ('scale'): 2/2 done, 20 s"


def test_the_power_counter_shows_k_of_n_and_elapsed() -> None:
    out, clock = io.StringIO(), Clock()
    with progress.reporting(plain(out, clock)):
        tick = progress.counter("power simulation")
        assert tick is not None
        for done in range(1, 11):
            clock.t += 1.0
            tick(done, 10)
    assert out.getvalue().splitlines() == [
        "selfmodel   [1/10] power simulation, 1 s",
        "selfmodel   [6/10] power simulation, 6 s",
        "selfmodel   [10/10] power simulation, 10 s",
    ]


def test_a_status_line_carries_the_loop_step() -> None:
    out = io.StringIO()
    with progress.reporting(plain(out, Clock())), progress.steps("refits", 3) as st:
        st.next()
        progress.status("compiling 'scale'")
    assert out.getvalue().splitlines()[0] == "selfmodel   [1/3] compiling 'scale'"


def test_nobody_reporting_means_no_callbacks() -> None:
    assert progress.current() is None
    assert progress.fit_callback("x", 1) is None and progress.counter("x") is None
    assert progress.make_reporter(io.StringIO(), quiet=True) is None
    with progress.steps("loop", 3) as st:
        assert st.next() == "[1/3] "  # the step lines still carry the count


@pytest.mark.ci  # compiles and samples a tiny model with nutpie
def test_nutpie_calls_back_with_draws_chains_and_divergences() -> None:
    pm = pytest.importorskip("pymc")
    import nutpie

    from selfmodel.fitting.sampling import SamplerSettings, sample_nutpie

    with pm.Model() as model:
        pm.Normal("x", 0, 1, shape=2)
    compiled = nutpie.compile_pymc_model(model)
    out = io.StringIO()
    with progress.reporting(progress.Reporter(out, live=False, plain_interval=0.0)):
        sample_nutpie(compiled, SamplerSettings(draws=150, tune=100, chains=2, cores=1), 1,
                      label="sampling 'tiny'")
    lines = out.getvalue().splitlines()
    assert lines[-1].startswith("selfmodel   sampling 'tiny': 500/500 draws, 2 chains, 0 divergences, ")
    assert all(" draws" in line and "2 chains" in line for line in lines)


def _fake_run(cfg, *, progress: object, argv: object) -> dict:
    say = progress
    say("ingesting 1 file(s)")  # type: ignore[operator]
    from selfmodel.common import progress as lines

    cb = lines.fit_callback("sampling 'scale'", chains=2)
    if cb is not None:
        cb([Chain(5, 10, 0, True), Chain(5, 10, 0, True)])
        cb.finish()
    return {"scale_effect": {"units": "per decade", "decision": "inconclusive"},
            "diagnostics": {"passed": True}}


@pytest.mark.parametrize("quiet", [False, True])
def test_quiet_silences_progress_and_stderr_gets_plain_lines(
    quiet: bool, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path
) -> None:
    monkeypatch.setattr(pipeline, "run", _fake_run)
    argv = ["fit", "--out", str(tmp_path), *(["--quiet"] if quiet else [])]
    assert main(argv) == 0
    cap = capsys.readouterr()
    assert "scale effect (per decade): inconclusive" in cap.out  # the result is never silenced
    if quiet:
        assert cap.err == ""
    else:
        assert "ingesting 1 file(s)" in cap.err and "\r" not in cap.err
        assert "selfmodel   sampling 'scale': 20/20 draws, 2 chains, 0 divergences, 0 s" in cap.err


@pytest.mark.parametrize("quiet", [False, True])
def test_report_quiet_silences_the_render_steps(
    quiet: bool, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path
) -> None:
    import selfmodel.report.document as report

    def fake_render(out, fmt="html", progress=None):  # the real one executes the notebook
        progress("[1/2] cell")
        progress("[2/2] fig-verdict")
        return out / f"report.{fmt}"

    monkeypatch.setattr(report, "render_report", fake_render)
    assert main(["report", "--out", str(tmp_path), *(["--quiet"] if quiet else [])]) == 0
    cap = capsys.readouterr()
    assert f"report: {tmp_path / 'report.html'}" in cap.out  # where the report is: always said
    assert (cap.err == "") if quiet else ("[2/2] fig-verdict" in cap.err)


def test_the_last_line_of_a_failed_fit_decides_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path
) -> None:
    """Issue 28.4: the command's summary line shows no decision of a fit that failed its gate."""
    failed = {"passed": False, "checks": [{"name": "r_hat", "passed": False, "value": 1.047,
                                           "threshold": "<= 1.01"}]}
    effect = {"units": "per decade", "decision": "credibly_positive", "mean": 0.19, "hdi_prob": 0.94,
              "hdi_low": 0.06, "hdi_high": 0.31, "fit_model": "scale"}
    monkeypatch.setattr(pipeline, "run", lambda *a, **k: {"scale_effect": effect, "diagnostics": failed})
    assert main(["fit", "--out", str(tmp_path), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert ("scale effect (per decade): not decided (its fit failed the diagnostics gate); as computed, "
            "mean 0.190") in out and "credibly_positive" not in out
    monkeypatch.setattr(pipeline, "run", lambda *a, **k: {
        "scale_effect": effect, "diagnostics": failed, "settings": {"preset": "exploratory"}})
    assert main(["fit", "--out", str(tmp_path / "x"), "--quiet"]) == 0
    assert "credibly_positive, mean 0.190, 94% HDI [0.060, 0.310]  (not a finding)" in capsys.readouterr().out
