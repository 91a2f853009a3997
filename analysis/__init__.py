"""selfmodel's pipeline: ingest, describe, fit, test and report LLM self-prediction."""

from selfmodel.common import caches as _caches

__version__ = "0.1.0"

# Before PyTensor, numba or matplotlib is imported (here or in a worker process or the
# report's kernel, which inherit the environment): their caches go to selfmodel's cache
# folder, the one setting SELFMODEL_CACHE_DIR (docs/cli.md, "Caches").
_caches.export_environment()
