"""Where the benchmark's files are in a clone of its repository, and the task names."""

from __future__ import annotations

from typing import Final

from selfmodel.records.importers.result import ImportResult

#: Folder of experiment 1 and its runs, newest first.
EXP1_DIR: Final = "experiment 1"
EXP1_RUNS: Final = ("results-04-05-25", "results-27-4-25")
#: Folder of experiment 2 and its files.
EXP2_DIR: Final = "experiment 2"
EXP2_RESULTS: Final = "results"
XSTEST_FILE: Final = "xstest_prompts.csv"
EXP2_PREFIX: Final = "output_data_"
#: Run marker that starts each appended block in an experiment-2 file.
BLOCK_MARKER: Final = ["0", "1", "2", "3"]
RASCH_FILE: Final = "benchmarks/benchmarks_with_rasch.csv"
TABOO_FILE: Final = "3-5_taboo_words.json"

TASK_ASSOCIATION: Final = "word_association"
TASK_REFUSAL: Final = "refusal"

#: Provision/verification letters: A = answers, B = does not.
LETTERS: Final = {"A": "true", "B": "false"}
#: Registry columns taken from models.csv beyond the contract's.
REGISTRY_EXTRA: Final = ("developer", "aliases")


#: What :func:`import_seb` returns (the one import result type of every importer).
SebImport = ImportResult
