"""Fits at once (analysis/fitting/fitpool.py): threads that take turns, fits in worker processes.

The fast tests check the turn-taking without sampling anything (the pool's worker
processes are never started: nothing is submitted to them). The slow test samples one
small model in a worker and in this process and finds the same draws.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from selfmodel.cli import main
from selfmodel.fitting import fitpool


def test_without_workers_tasks_run_one_after_the_other_in_order():
    seen: list[str] = []
    got = fitpool.concurrently(lambda: seen.append("a") or 1, lambda: seen.append("b") or 2)
    assert got == [1, 2] and seen == ["a", "b"]
    assert not fitpool.active()


def test_with_workers_tasks_take_turns_and_overlap_only_while_waiting():
    """Only one task runs Python at a time; one that waits (as for a worker's fit) lets the
    next run. Without the turn being released while waiting, task a would wait for b's
    event forever (the timeout turns that into a failure, not a hang)."""
    running = {"now": 0, "most": 0}
    lock = threading.Lock()
    b_started = threading.Event()

    def enter() -> None:
        with lock:
            running["now"] += 1
            running["most"] = max(running["most"], running["now"])

    def leave() -> None:
        with lock:
            running["now"] -= 1

    def a() -> str:
        enter()
        leave()
        with fitpool.waiting():  # as fit() does while a worker samples
            assert b_started.wait(timeout=60), "task b never ran while a waited"
        enter()
        leave()
        return "a"

    def b() -> str:
        enter()
        b_started.set()
        leave()
        return "b"

    with fitpool.workers(2, report=False):
        assert fitpool.active()
        assert fitpool.concurrently(a, b) == ["a", "b"]
    assert not fitpool.active()
    assert running["most"] == 1


def test_an_exception_is_raised_after_every_task_finished():
    done: list[str] = []

    def bad() -> None:
        raise ValueError("boom")

    def slow() -> str:
        with fitpool.waiting():
            threading.Event().wait(0.2)
        done.append("slow")
        return "ok"

    with fitpool.workers(2, report=False), pytest.raises(ValueError, match="boom"):
        fitpool.concurrently(bad, slow)
    assert done == ["slow"]


@pytest.mark.parametrize("value", ["0", "-1", "two"])
def test_jobs_must_be_a_whole_number_of_at_least_one(value, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["run", "--jobs", value, "--out", "unused"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "--jobs takes a whole number of at least 1" in err[-1] and "Traceback" not in "".join(err)


@pytest.mark.slow
def test_a_fit_sampled_in_a_worker_is_the_fit_of_this_process(tmp_path):
    """Same arguments, same seed: the worker's saved fit has the draws this process samples."""
    from selfmodel.fitting.sampling import SamplerSettings, content_sha256, fit
    from selfmodel.records.simulate import simulate_scale_cells

    data, _ = simulate_scale_cells(seed=3, n_families=3, sizes_per_family=2, n_tasks=2,
                                   n_per_cell=100)
    settings = SamplerSettings(draws=200, tune=200, chains=2)
    here = fit("pooled", data, seed=7, settings=settings, cache_dir=tmp_path / "here")
    with fitpool.workers(2, report=False):
        there = fit("pooled", data, seed=7, settings=settings, cache_dir=tmp_path / "there")
    assert not there.reused
    assert there.provenance["cache_key"] == here.provenance["cache_key"]
    assert content_sha256(there.idata) == content_sha256(here.idata)


def test_a_loop_of_steps_can_be_numbered_from_threads():
    """``progress.steps`` numbered from the threads of ``concurrently`` (each step's
    ``[k/n]`` set in its own thread's context) closes without error, as the refit loops do."""
    import functools
    import io

    from selfmodel.common import progress

    rep = progress.make_reporter(io.StringIO())
    with progress.reporting(rep), fitpool.workers(2, report=False):
        with progress.steps("loop", 2) as st:

            def step(_i: int) -> str:
                prefix = st.next()
                with fitpool.waiting():
                    threading.Event().wait(0.05)
                return prefix + progress.step_prefix()

            got = fitpool.concurrently(*[functools.partial(step, i) for i in range(2)])
        assert progress.step_prefix() == ""
    assert sorted(got) == ["[1/2] [1/2] ", "[2/2] [2/2] "]


@pytest.mark.parametrize(("env", "expected"), [("3", 3), ("1", 1), ("0", None), ("two", None)])
def test_selfmodel_jobs_sets_the_default_and_a_bad_value_is_ignored(env, expected, monkeypatch):
    monkeypatch.delenv("SELFMODEL_JOBS", raising=False)
    from_cpus = fitpool.default_jobs()
    assert 1 <= from_cpus <= 4
    monkeypatch.setenv("SELFMODEL_JOBS", env)
    assert fitpool.default_jobs() == (expected if expected is not None else from_cpus)


def test_an_interrupted_run_stops_its_workers_instead_of_waiting_for_them():
    """Ctrl-C (or an error) inside the pool ends the workers' running tasks: no process
    is left behind, and the exception goes on. The task would sleep an hour."""
    import functools
    import time

    with pytest.raises(KeyboardInterrupt):
        with fitpool.workers(2, report=False):
            pool = fitpool._pool
            assert pool is not None
            pool.submit(functools.partial(time.sleep, 3600))
            while not pool._processes:  # started on submit
                threading.Event().wait(0.05)
            processes = list(pool._processes.values())
            raise KeyboardInterrupt
    # asked of the OS, not of Process.is_alive(): the pool's manager thread may reap a worker
    # first, and then is_alive() of our copy still says True (its poll finds no child to wait for)
    assert processes and all(_gone(p.pid) for p in processes)
    assert not fitpool.active()


def _gone(pid: int | None) -> bool:
    """Whether process ``pid`` has ended (no such process, or a zombie not yet reaped)."""
    import os

    if pid is None:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return True
    return state in ("Z", "X")
