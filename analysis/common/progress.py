"""Progress of the long steps (sampling, refits, the power simulation) on stderr.

What a run shows (per fit the draws, chains, divergences and time; ``[k/n]`` for loops of
refits and the power simulation) and the line format, which is stable and tests read:
``docs/cli.md`` ("Progress"). Where the lines go is decided once, by whoever starts the run
(the command line, :func:`selfmodel.api.run`), with :func:`reporting`; library code only
asks for a callback (:func:`fit_callback`, :func:`counter`) or opens a loop (:func:`steps`),
which are no-ops when nobody reports. On a terminal a fit's line is redrawn in place at most
:data:`LIVE_INTERVAL` seconds apart; elsewhere plain lines, at most one every
:data:`PLAIN_INTERVAL` seconds per fit or loop, never a carriage return.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TextIO

#: Seconds between two plain lines of one fit or loop when stderr is not a terminal.
PLAIN_INTERVAL = 5.0
#: Seconds between two redraws of the live line on a terminal.
LIVE_INTERVAL = 0.25
PREFIX = "selfmodel   "


@dataclass
class Reporter:
    """Where progress lines go and how (``live``: redraw one line on a terminal)."""

    stream: TextIO
    live: bool
    plain_interval: float = PLAIN_INTERVAL
    live_interval: float = LIVE_INTERVAL
    clock: Callable[[], float] = time.monotonic
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _open: bool = field(default=False, repr=False)  # a live line is on screen, unterminated

    @property
    def interval(self) -> float:
        """Seconds between two updates of one fit or loop."""
        return self.live_interval if self.live else self.plain_interval

    def update(self, text: str, *, final: bool = False) -> None:
        """Show ``text``: redraw the live line, or write a plain line."""
        with self._lock:
            if self.live:
                self.stream.write(f"\r{PREFIX}{text}\x1b[K" + ("\n" if final else ""))
                self._open = not final
            else:
                self.stream.write(f"{PREFIX}{text}\n")
            self.stream.flush()

    def end_line(self) -> None:
        """End a live line left open (before other output)."""
        with self._lock:
            if self._open:
                self.stream.write("\n")
                self.stream.flush()
                self._open = False


_CURRENT: ContextVar[Reporter | None] = ContextVar("selfmodel_progress", default=None)
_STEP: ContextVar[str] = ContextVar("selfmodel_progress_step", default="")


def make_reporter(stream: TextIO | None = None, *, quiet: bool = False) -> Reporter | None:
    """A reporter on ``stream`` (stderr), live when it is a terminal; ``None`` when quiet."""
    if quiet:
        return None
    stream = stream if stream is not None else sys.stderr
    isatty = getattr(stream, "isatty", None)
    return Reporter(stream, live=bool(isatty and isatty()))


@contextmanager
def reporting(reporter: Reporter | None) -> Iterator[Reporter | None]:
    """Report progress to ``reporter`` inside the block (``None``: silent)."""
    token = _CURRENT.set(reporter)
    try:
        yield reporter
    finally:
        if reporter is not None:
            reporter.end_line()
        _CURRENT.reset(token)


def current() -> Reporter | None:
    """The reporter of this context, if any."""
    return _CURRENT.get()


class _Throttle:
    """At most one update per ``interval`` seconds; the first and the final always pass."""

    def __init__(self, rep: Reporter) -> None:
        self.rep, self.t0 = rep, rep.clock()
        self.last: float | None = None

    def elapsed(self) -> float:
        return self.rep.clock() - self.t0

    def due(self) -> bool:
        now = self.rep.clock()
        if self.last is not None and now - self.last < self.rep.interval:
            return False
        self.last = now
        return True


class FitProgress:
    """The sampler's progress callback for one fit (nutpie's ``progress_callback``).

    Called with one status per chain (``finished_draws``, ``total_draws``, ``divergences``,
    ``tuning``); safe to call from the sampler's thread.
    """

    def __init__(self, rep: Reporter, label: str, chains: int) -> None:
        self.rep, self.label, self.chains = rep, label, chains
        self.step = _STEP.get()  # read here: the sampler calls back from its own thread
        self.throttle = _Throttle(rep)
        self.state: tuple[int, int, int, bool] = (0, 0, 0, True)

    def line(self) -> str:
        """The progress line of the last state."""
        done, total, div, tuning = self.state
        return (f"{self.step}{self.label}: {done}/{total} draws{' (tuning)' if tuning else ''}, "
                f"{self.chains} chains, {div} divergence{'' if div == 1 else 's'}, "
                f"{self.throttle.elapsed():.0f} s")

    def __call__(self, chains: Sequence[Any]) -> None:
        """Record the chains' status; show it when the last line is old enough."""
        self.state = (
            sum(int(c.finished_draws) for c in chains),
            sum(int(c.total_draws) for c in chains),
            sum(int(c.divergences) for c in chains),
            any(bool(c.tuning) for c in chains),
        )
        if self.throttle.due():
            self.rep.update(self.line())

    def finish(self) -> None:
        """The last line: the final count (ends the live line)."""
        self.state = (self.state[1], self.state[1], self.state[2], False)
        self.rep.update(self.line(), final=True)


def status(text: str) -> None:
    """One line (e.g. ``compiling 'scale'``) when someone reports; in a loop, with its ``[k/n]``."""
    rep = _CURRENT.get()
    if rep is not None:
        rep.update(f"{_STEP.get()}{text}", final=True)


def fit_callback(label: str, chains: int) -> FitProgress | None:
    """A progress callback for one fit, or ``None`` when nobody reports."""
    rep = _CURRENT.get()
    return FitProgress(rep, label, chains) if rep is not None else None


class Steps:
    """A loop of ``total`` long steps (refits): ``[k/n]`` before each, the time at the end."""

    def __init__(self, rep: Reporter | None, label: str, total: int) -> None:
        self.rep, self.label, self.total, self.k = rep, label, total, 0
        self.clock = rep.clock if rep is not None else time.monotonic
        self.t0 = self.clock()
        self._token: Any = None

    def next(self) -> str:
        """Start step ``k + 1``; returns its ``"[k/n] "`` prefix (the fits' lines carry it)."""
        self.k += 1
        prefix = f"[{self.k}/{self.total}] "
        self._reset()
        self._token = _STEP.set(prefix)
        return prefix

    def _reset(self) -> None:
        if self._token is not None:
            try:
                _STEP.reset(self._token)
            except ValueError:  # set in the context of another thread (selfmodel.fitting.fitpool),
                pass  # which ended with it
            self._token = None

    def close(self) -> None:
        """Leave the loop: drop the prefix; report how many steps ran in how long."""
        self._reset()
        if self.rep is not None and self.k:
            self.rep.update(f"{self.label}: {self.k}/{self.total} done, "
                            f"{self.clock() - self.t0:.0f} s", final=True)


def step_prefix() -> str:
    """The ``"[k/n] "`` of the loop step running now (``""`` outside a loop)."""
    return _STEP.get()


@contextmanager
def steps(label: str, total: int) -> Iterator[Steps]:
    """A loop of ``total`` long steps inside the block (lines only when someone reports)."""
    s = Steps(_CURRENT.get(), label, total)
    try:
        yield s
    finally:
        s.close()


def counter(label: str) -> Callable[[int, int], None] | None:
    """A ``(done, total)`` callback for many short steps (the power simulation), throttled."""
    rep = _CURRENT.get()
    if rep is None:
        return None
    throttle = _Throttle(rep)

    def tick(done: int, total: int) -> None:
        final = done >= total
        if final or throttle.due():
            rep.update(f"[{done}/{total}] {label}, {throttle.elapsed():.0f} s", final=final)

    return tick
