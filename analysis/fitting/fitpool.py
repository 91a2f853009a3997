"""Fits that run at the same time: sampling in worker processes, analyses in threads.

A cold run is dominated by compiling models (numba, single-threaded) and sampling them;
the Python between two fits takes seconds. On a machine with two or more cores the run
therefore goes faster when independent fits run at once. Two pieces do that:

* :func:`workers` starts a pool of worker processes (``spawn``: a fresh interpreter each,
  so numba and the threads of this process are not forked). While it is open,
  :func:`selfmodel.fitting.sampling.fit` hands every fit that is not in its cache to a worker, which runs
  the same ``fit`` with the same arguments and saves it in the cache folder; the calling
  thread then reads the saved fit. Draws depend only on the seed and the compiled code, so a
  fit sampled in a worker is the fit this process would have sampled (same cache key, same
  bytes; ``tests/fitting/test_fitpool.py``).
* :func:`concurrently` runs independent analyses (each a function of no arguments) in
  threads, so that their fits reach the workers together. Only one of these threads runs
  Python at a time: each holds :data:`_turn` while it works and lets go of it only while it
  waits for a worker (:func:`waiting`). The analyses' own code (building tables, arviz
  summaries, PSIS reweighting, warnings filters) therefore never runs in two threads at
  once, and needs no locking of its own; only the waiting overlaps.

Without :func:`workers` (``RunConfig.jobs`` = 1, its default; ``--jobs 1``;
``SELFMODEL_JOBS=1``, which the tests set) nothing changes: :func:`concurrently` calls its functions one after the other and fits run in
this process. The results are the same either way; what differs is the order in which
progress lines appear.
"""

from __future__ import annotations

import contextvars
import multiprocessing
import os
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

from selfmodel.common import progress, seal

__all__ = ["active", "concurrently", "default_jobs", "run_in_worker", "waiting", "workers"]


_pool: ProcessPoolExecutor | None = None
_pool_lock = threading.Lock()
#: Held by the thread of :func:`concurrently` that is running Python (see module docstring).
_turn = threading.Lock()
_local = threading.local()


def default_jobs() -> int:
    """Worker processes for a run: ``$SELFMODEL_JOBS``, else the CPUs this process may use, at most 4.

    An unusable ``$SELFMODEL_JOBS`` (not a whole number of at least 1) is ignored.
    """
    env = os.environ.get("SELFMODEL_JOBS", "").strip()
    if env.isdigit() and int(env) >= 1:
        return int(env)
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        n = os.cpu_count() or 1
    return max(1, min(n, 4))


def active() -> bool:
    """A pool of worker processes is open (fits go to it)."""
    return _pool is not None


def _init_worker(report: bool, key: bytes | None) -> None:
    if key is not None:  # the parent seals with a key no file holds: the worker must too
        seal.adopt(key)
    if report:  # plain lines: a worker never redraws the terminal line this process may own
        progress.reporting(progress.Reporter(sys.stderr, live=False)).__enter__()


@contextmanager
def workers(jobs: int, *, report: bool = True) -> Iterator[None]:
    """Open a pool of ``jobs`` worker processes for fits (``jobs <= 1``: no pool).

    ``report``: the workers write their fits' progress lines on stderr.
    """
    global _pool
    if jobs <= 1 or _pool is not None:
        yield
        return
    ctx = multiprocessing.get_context("spawn")
    # a worker inherits this process's environment (os.environ when it starts): the cache
    # folders of selfmodel.common.caches, a private temporary one included; a key for seals
    # that no file holds is handed over explicitly
    pool = ProcessPoolExecutor(jobs, mp_context=ctx, initializer=_init_worker,
                               initargs=(report, seal.ephemeral()))
    with _pool_lock:
        _pool = pool
    try:
        yield
    except BaseException:
        # Ctrl-C or an error: stop the workers' fits now rather than wait for them (a fit
        # can take minutes); finished fits are already saved in the cache
        with _pool_lock:
            _pool = None
        processes = list((getattr(pool, "_processes", None) or {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        for proc in processes:
            proc.terminate()
        for proc in processes:
            proc.join()
        raise
    with _pool_lock:
        _pool = None
    pool.shutdown(wait=True, cancel_futures=True)


@contextmanager
def waiting() -> Iterator[None]:
    """Let the other threads of :func:`concurrently` run while this one waits."""
    if getattr(_local, "holds", False):
        _local.holds = False
        _turn.release()
        try:
            yield
        finally:
            _turn.acquire()
            _local.holds = True
    else:
        yield


def _holding[T](fn: Callable[[], T]) -> T:
    _turn.acquire()
    _local.holds = True
    try:
        return fn()
    finally:
        _local.holds = False
        _turn.release()


def concurrently(*tasks: Callable[[], Any]) -> list[Any]:
    """Run ``tasks`` (functions of no arguments) and return their results in order.

    With a pool of workers open, each task runs in a thread of its own (taking turns, see
    the module docstring) so that their fits run at once; otherwise one after the other.
    An exception of a task is raised after every task has finished (the first in order).
    """
    if not active() or len(tasks) < 2:
        return [t() for t in tasks]
    with waiting(), ThreadPoolExecutor(len(tasks), thread_name_prefix="selfmodel") as ex:
        futures = [ex.submit(contextvars.copy_context().run, _holding, t) for t in tasks]
        for f in futures:  # wait for all before raising, so no task outlives the call
            f.exception()
    return [f.result() for f in futures]


def run_in_worker(task: Callable[[], None]) -> None:
    """Run ``task`` (picklable; ``selfmodel.fitting.sampling`` passes a fit that saves itself) in a worker.

    The calling thread waits for it, letting the other threads of :func:`concurrently` run.
    """
    pool = _pool
    if pool is None:
        raise RuntimeError("no pool of fit workers is open")
    future: Future[None] = pool.submit(task)
    with waiting():
        future.result()
