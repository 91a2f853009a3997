r"""Compile a PyMC model for nutpie once, and reuse the compiled code across runs.

:func:`compiled_model` rebuilds a model with every array constant turned into a named
shared variable (:func:`data_as_shared`), so the compiled code depends only on the model's
structure and shapes: PyTensor's on-disk numba cache hits across processes, and within a
process a model of the same structure is reused with new data
(``CompiledPyMCModel.with_data``). Draws are the same for a given seed whichever way the
compiled code came (``tests/fitting/test_compile_cache.py``). Why, and what it costs:
``docs/fitting.md``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import numpy as np

from selfmodel.common import caches

__all__ = [
    "compiled_model",
    "configure_cache",
    "data_as_shared",
    "default_cache_dir",
    "memo_info",
    "structure_key",
]

#: Prefix of the shared variables that replace array constants.
SHARED_PREFIX: Final = "__data_"

#: In-process compiled models kept (least recently used are dropped).
MEMO_SIZE: Final = 8

_memo: OrderedDict[str, Any] = OrderedDict()
_memo_lock = threading.Lock()
_stats = {"hits": 0, "misses": 0}


def default_cache_dir() -> Path:
    """Folder for compiled code: ``$SELFMODEL_CACHE_DIR``, else ``$XDG_CACHE_HOME/selfmodel``.

    Falls back to ``~/.cache/selfmodel``; when that folder cannot be used, the command's
    private temporary one (:func:`selfmodel.common.caches.folder`, which says so). Compiled
    code is machine-specific (numba keys it by CPU and library versions), so it belongs in
    a user cache, not in ``--out``. PyTensor's compile folder is already in it
    (:func:`selfmodel.common.caches.export_environment`).
    """
    return caches.folder() or caches.chosen()[0]


def configure_cache(cache_dir: Path | str) -> Path:
    """Point PyTensor's on-disk numba cache at ``cache_dir/numba``; return that folder.

    PyTensor reads the folder from a module-level name when numba asks for a cache
    location, so this takes effect for every function compiled afterwards in this
    process, including ones other code compiles.
    """
    from pytensor.link.numba import cache as pt_numba_cache

    folder = Path(cache_dir) / "numba"
    folder.mkdir(parents=True, exist_ok=True)
    pt_numba_cache.NUMBA_CACHE_PATH = folder
    return folder


def _array_constants(fgraph: Any) -> list[Any]:
    """Array constants that carry data, in a deterministic (topological) order.

    The ``size`` argument of a random variable is left alone: it fixes the variable's
    shape, which the compiled code may rely on.
    """
    from pytensor.tensor.random.op import RandomVariable
    from pytensor.tensor.variable import TensorConstant

    found: list[Any] = []
    seen: set[int] = set()
    for node in fgraph.toposort():
        for position, inp in enumerate(node.inputs):
            if not isinstance(inp, TensorConstant) or inp.ndim == 0 or inp.data.size == 0:
                continue
            if isinstance(node.op, RandomVariable) and position == 1:
                continue
            if id(inp) not in seen:
                seen.add(id(inp))
                found.append(inp)
    return found


def data_as_shared(pm_model: Any) -> Any:
    """Return an equivalent model whose array constants are shared variables.

    Parameters
    ----------
    pm_model
        A ``pymc.Model``; it is not modified.

    Returns
    -------
    pymc.Model
        The same random variables, transforms, coords and dims, with the free variables in
        the original order; every non-scalar constant of the graph (observed data, trial
        counts, index arrays, covariates) becomes a shared variable named ``__data_<i>``
        with the constant's static shape, ``i`` counting in topological order.
    """
    import pytensor
    from pymc.model.fgraph import fgraph_from_model, model_from_fgraph

    fgraph, _ = fgraph_from_model(pm_model, inlined_views=True)
    constants = _array_constants(fgraph)
    replacements = [
        (
            c,
            pytensor.shared(
                np.array(c.data, copy=True), name=f"{SHARED_PREFIX}{i}", shape=c.type.shape
            ),
        )
        for i, c in enumerate(constants)
    ]
    if replacements:
        fgraph.replace_all(replacements, import_missing=True)
    shared = model_from_fgraph(fgraph, mutate_fgraph=True)
    # model_from_fgraph registers variables in topological order, which can differ between
    # processes; the sampler's parameter layout follows free_RVs, so restore the original.
    order = {rv.name: i for i, rv in enumerate(pm_model.free_RVs)}
    shared.free_RVs.sort(key=lambda rv: order[rv.name])
    det_order = {d.name: i for i, d in enumerate(pm_model.deterministics)}
    shared.deterministics.sort(key=lambda d: det_order.get(d.name, len(det_order)))
    return shared


def _shared_values(model: Any) -> dict[str, np.ndarray]:
    """Values of the ``__data_<i>`` shared variables of a :func:`data_as_shared` model."""
    from pytensor.compile.sharedvalue import SharedVariable
    from pytensor.graph.traversal import ancestors

    outputs = [*model.free_RVs, *model.observed_RVs, *model.deterministics,
               *model.rvs_to_values.values()]
    out: dict[str, np.ndarray] = {}
    for var in ancestors(outputs):
        name = var.name or ""
        if isinstance(var, SharedVariable) and name.startswith(SHARED_PREFIX):
            out[name] = np.asarray(var.get_value(borrow=True))
    return dict(sorted(out.items()))


def structure_key(shared_model: Any) -> str:
    """SHA-256 of a :func:`data_as_shared` model's structure, without its data values.

    Two models with the same key have the same graph, variable names, transforms, shapes,
    coords and dims, and differ at most in the values of their ``__data_<i>`` variables.
    """
    import pytensor

    graph = pytensor.dprint(
        [shared_model.logp(), *shared_model.deterministics, *shared_model.free_RVs],
        file="str",
        print_type=True,
        print_shape=True,
    )
    meta = {
        "free": [
            (rv.name, str(shared_model.rvs_to_transforms.get(rv))) for rv in shared_model.free_RVs
        ],
        "coords": {k: [str(v) for v in vals] if vals is not None else None
                   for k, vals in shared_model.coords.items()},
        "dims": {k: list(v) for k, v in shared_model.named_vars_to_dims.items()},
        "data": {k: (v.dtype.str, v.shape) for k, v in _shared_values(shared_model).items()},
    }
    graph = re.sub(r" at 0x[0-9A-Fa-f]+", "", str(graph))  # RNG objects print their address
    h = hashlib.sha256(graph.encode())
    h.update(repr(sorted(meta.items())).encode())
    return h.hexdigest()


def _initial_point_func(pm_model: Any, compiled: Any) -> Any:
    """Return the seeded initial-point function nutpie would build for ``pm_model``."""
    from nutpie.compile_pymc import _rv_dict_to_flat_array_wrapper, _wrap_with_lock
    from pymc.initial_point import make_initial_point_fn

    fn = make_initial_point_fn(
        model=pm_model,
        jitter_rvs=set(pm_model.free_RVs),
        default_strategy="support_point",
        return_transformed=True,
    )
    n_free = len(pm_model.free_RVs)
    names = list(compiled.shape_info[0][:n_free])
    shapes = list(compiled.shape_info[2][:n_free])
    return _rv_dict_to_flat_array_wrapper(_wrap_with_lock(fn), names=names, shapes=shapes)


def compiled_model(
    pm_model: Any,
    cache_dir: Path | str | None = None,
    *,
    share_data: bool = True,
    memo: bool = True,
    compile_kwargs: Mapping[str, Any] | None = None,
) -> Any:
    """Compile ``pm_model`` for nutpie (numba backend), reusing earlier compilations.

    Parameters
    ----------
    pm_model
        The ``pymc.Model`` to sample.
    cache_dir
        Folder for PyTensor's on-disk numba cache (``cache_dir/numba``); ``None`` keeps
        PyTensor's folder (``<cache folder>/pytensor/numba``, :func:`default_cache_dir`).
    share_data
        Replace the model's data constants by shared variables first
        (:func:`data_as_shared`) so compiled code is reused for new data of the same shape.
        ``False`` compiles ``pm_model`` as ``nutpie.compile_pymc_model`` would.
    memo
        Reuse a model with the same :func:`structure_key` compiled earlier in this process
        (with ``share_data`` only).
    compile_kwargs
        Extra keyword arguments for ``nutpie.compile_pymc_model``.

    Returns
    -------
    nutpie.CompiledModel
        Ready for ``nutpie.sample`` (same parameter layout, coords and initial points as
        ``nutpie.compile_pymc_model(pm_model)``).
    """
    import nutpie

    if cache_dir is not None:
        configure_cache(cache_dir)
    kwargs = dict(compile_kwargs or {})
    if not share_data:
        return nutpie.compile_pymc_model(pm_model, **kwargs)
    shared = data_as_shared(pm_model)
    key = structure_key(shared) + hashlib.sha256(repr(sorted(kwargs.items())).encode()).hexdigest()
    with _memo_lock:
        base = _memo.get(key) if memo else None
        if base is not None:
            _memo.move_to_end(key)
            _stats["hits"] += 1
        else:
            _stats["misses"] += 1
    if base is None:
        compiled = nutpie.compile_pymc_model(shared, **kwargs)
        if memo:
            with _memo_lock:
                _memo[key] = compiled
                while len(_memo) > MEMO_SIZE:
                    _memo.popitem(last=False)
        return compiled
    # Same structure compiled before: swap in this model's data. The initial-point function
    # is rebuilt from this model's graph (cheap, no numba) in case a prior uses the data.
    compiled = base.with_data(**_shared_values(shared))
    return dataclasses.replace(compiled, initial_point_func=_initial_point_func(shared, compiled))


def memo_info(*, clear: bool = False) -> dict[str, int]:
    """In-process memo counters ``{"hits", "misses", "size"}``; ``clear`` empties it."""
    with _memo_lock:
        info = {**_stats, "size": len(_memo)}
        if clear:
            _memo.clear()
            _stats.update(hits=0, misses=0)
    return info
