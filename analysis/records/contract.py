"""Record and registry contract: the canonical columns every stage above relies on.

This module is the bottom of the pipeline. It names the canonical record columns
(see ``DESIGN.md``), their polars dtypes, the allowed ``status`` values, the
decision vocabulary of ``results.json``, and the one exception type that the
command line turns into ``exit 2`` with a one-line message.

A canonical *record* is one checked self-prediction:

==============  ===========  =========================================================
column          dtype        meaning
==============  ===========  =========================================================
model           Utf8         the model whose behaviour was executed (the target)
task            Utf8         kind of self-prediction
item_id         Utf8         the item within the task
prediction      Utf8         what the model predicted; ``"true"``/``"false"`` for
                             binary predictions, free text otherwise, null when unread
outcome         Utf8         what it actually did (same encoding as ``prediction``)
correct         Boolean      prediction matched outcome (null when unreadable)
predictor       Utf8         the model that made the prediction (defaults to ``model``)
confidence      Float64      stated probability that the prediction is right, 0..1
cluster         Utf8         item group sharing context
condition       Utf8         the study condition the record was made under (prompting,
                             reasoning on/off, temperature); null when the study has one
status          Utf8         ``ok``; ``unparsed``, ``refused`` or ``error`` (an unreadable
                             prediction); ``not_asked`` or ``unanswered`` (nothing to score)
run_id          Utf8         provenance
sample          Int64        repeat index (0 when absent)
source_file     Utf8         file the record came from
source_line     Int64        1-based line (JSONL/CSV data line) or row (Parquet)
==============  ===========  =========================================================
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Literal, get_args

import polars as pl

from selfmodel.common.errors import InputError as InputError  # re-exported: the contract's error

#: Columns a record must have (after column mapping).
REQUIRED: Final = ("model", "task", "item_id")

#: Canonical record columns and their dtypes, in output order.
RECORD_SCHEMA: Final[dict[str, pl.DataType]] = {
    "model": pl.Utf8(),
    "task": pl.Utf8(),
    "item_id": pl.Utf8(),
    "prediction": pl.Utf8(),
    "outcome": pl.Utf8(),
    "correct": pl.Boolean(),
    "predictor": pl.Utf8(),
    "confidence": pl.Float64(),
    "cluster": pl.Utf8(),
    "condition": pl.Utf8(),
    "status": pl.Utf8(),
    "run_id": pl.Utf8(),
    "sample": pl.Int64(),
    "source_file": pl.Utf8(),
    "source_line": pl.Int64(),
}

#: Columns that identify one self-prediction; two records with equal keys are duplicates.
#: Runs are data: records of different runs (``run_id``; an importer sets it to the log
#: file when the log names no run) are separate samples of the item, never resolved by
#: file order, whether their answers agree or not. Within one run, equal keys with
#: different answers are conflicts (quarantined). An item asked under two ``condition`` s
#: is two records (null when the study has one condition).
KEY: Final = ("model", "predictor", "task", "condition", "item_id", "run_id", "sample")

#: Allowed values of ``status`` (``docs/records.md``; :data:`STATUS_MEANING`).
STATUSES: Final = ("ok", "unparsed", "refused", "error", "not_asked", "unanswered")
#: Statuses of an unreadable prediction: wrong in ``accuracy_strict``, left out of ``accuracy``.
UNREADABLE_STATUSES: Final = ("unparsed", "refused", "error")
#: Statuses of a row with no self-prediction to score: in neither accuracy, counted by name.
NOT_SCORED_STATUSES: Final = ("not_asked", "unanswered")
#: What each status means (``docs/records.md``, the report's accounting).
STATUS_MEANING: Final[dict[str, str]] = {
    "ok": "a readable prediction, checked against the outcome",
    "unparsed": "the prediction could not be read (unreadable: wrong in strict accuracy)",
    "refused": "the model refused to predict (unreadable: wrong in strict accuracy)",
    "error": "the run failed (unreadable: wrong in strict accuracy)",
    "not_asked": "no prediction was asked, by design (a control condition): not a prediction, "
                 "in neither accuracy",
    "unanswered": "the model gave no answer to the question, so there is no outcome to check "
                  "the prediction against: in neither accuracy",
}
#: Accounting name of the rows a records mapping's row filter leaves out. Not a status: such
#: rows are no records; ingest counts them (``records_excluded``, ``excluded_reasons``) so
#: that ``read = used + quarantined + duplicate + excluded``.
EXCLUDED: Final = "excluded"

#: Quarantine table columns.
QUARANTINE_SCHEMA: Final[dict[str, pl.DataType]] = {
    "source_file": pl.Utf8(),
    "source_line": pl.Int64(),
    "reason": pl.Utf8(),
    "raw": pl.Utf8(),
}

#: Registry columns and dtypes (joined on ``model``).
REGISTRY_SCHEMA: Final[dict[str, pl.DataType]] = {
    "model": pl.Utf8(),
    "family": pl.Utf8(),
    "params_b": pl.Float64(),
    "active_params_b": pl.Float64(),
    "open_weights": pl.Boolean(),
    "reasoning": pl.Boolean(),
    "capability": pl.Float64(),
    # derived checkpoints (issue 19): the checkpoint this model was derived from, the
    # intervention that derived it (free label), and the tasks that intervention trained on
    # (";"-separated; every other task in the data is held out)
    "base_model": pl.Utf8(),
    "intervention": pl.Utf8(),
    "trained_tasks": pl.Utf8(),
}

#: Strings accepted as booleans (compared case-insensitively, whitespace stripped); the
#: numbers 1/0 as written by any tool (``1.0``/``0.0`` from a pandas CSV) are booleans too.
TRUE_STRINGS: Final = frozenset({"true", "1", "1.0", "yes", "y", "t"})
FALSE_STRINGS: Final = frozenset({"false", "0", "0.0", "no", "n", "f"})
#: Spellings of a missing value (case-insensitive, whitespace stripped; empty is missing too):
#: read as missing in every column and every format, never as a readable answer.
MISSING_STRINGS: Final = frozenset({"null", "nan", "none"})

Decision = Literal[
    "improves",
    "credibly_positive",
    "practically_null",
    "credibly_negative",
    "worsens",
    "no_credible_effect",
    "not_estimable",
    "not_decided",
]


@dataclass(frozen=True)
class DecisionWord:
    """A decision word of ``results.json``, declared once.

    What it means, the sign it asserts, its colour in figures and, for a word the declared
    rule gives, when it gives it.

    ``sign`` is +1 or -1 for a credible sign, 0 for practically null, ``None`` for none.
    ``when(hdi_low, hdi_high, rope)`` is true when the rule gives this word; the rule tries
    the words in their registered order and gives the first whose ``when`` holds. A word
    without ``when`` is given by the pipeline (not estimable, not decided).
    """

    name: str
    meaning: str
    sign: int | None = None
    beyond_rope: bool = False
    colour: str = "#999999"
    when: Callable[[float, float, float], bool] | None = None
    reason: str = ""


#: The built-in words, in the order the declared rule tries them (docs/decisions.md).
#: Colours: the Okabe-Ito palette (Okabe and Ito 2008, "Color universal design").
_BUILT_IN: Final = (
    DecisionWord("improves", "credibly positive and larger than the ROPE", 1, True, "#0072B2",
                 lambda lo, hi, rope: lo > rope, "HDI above the ROPE"),
    DecisionWord("worsens", "credibly negative and larger than the ROPE", -1, True, "#D55E00",
                 lambda lo, hi, rope: hi < -rope, "HDI below the ROPE"),
    DecisionWord("practically_null", "practically null (the HDI lies inside the ROPE)", 0,
                 False, "#009E73", lambda lo, hi, rope: lo >= -rope and hi <= rope,
                 "HDI inside the ROPE"),
    DecisionWord("credibly_positive", "credibly positive, size not shown to exceed the ROPE", 1,
                 False, "#56B4E9", lambda lo, hi, rope: lo > 0,
                 "HDI above 0 but not above the ROPE"),
    DecisionWord("credibly_negative", "credibly negative, size not shown to exceed the ROPE", -1,
                 False, "#E69F00", lambda lo, hi, rope: hi < 0,
                 "HDI below 0 but not below the ROPE"),
    DecisionWord("no_credible_effect", "inconclusive (the sign is not credible)", None, False,
                 "#999999", lambda lo, hi, rope: True,
                 "HDI contains 0 and is not inside the ROPE"),
    DecisionWord("not_estimable", "not estimable from these data"),
    DecisionWord("not_decided", "not decided (its fit failed the diagnostics gate)"),
)
_WORDS: dict[str, DecisionWord] = {w.name: w for w in _BUILT_IN}


def register_word(word: DecisionWord, *, before: str) -> None:
    """Add a decision word, tried by the rule just before the word ``before``."""
    if word.name in _WORDS:
        raise ValueError(f"a decision word {word.name!r} is registered already")
    if before not in _WORDS:
        raise ValueError(f"no decision word {before!r} to place {word.name!r} before")
    items = list(_WORDS.items())
    at = [k for k, _ in items].index(before)
    _WORDS.clear()
    _WORDS.update([*items[:at], (word.name, word), *items[at:]])


def unregister_word(name: str) -> None:
    """Remove a registered word (never a built-in one)."""
    if name in {w.name for w in _BUILT_IN}:
        raise ValueError(f"{name!r} is a built-in decision word")
    _WORDS.pop(name, None)


def decision_words() -> tuple[DecisionWord, ...]:
    """Every decision word, in the order the rule tries them."""
    return tuple(_WORDS.values())


def decision_word(name: str) -> DecisionWord:
    """The word ``name`` (``KeyError`` for a name that is none)."""
    return _WORDS[name]


def word_meanings() -> dict[str, str]:
    """Word -> meaning: the built-in words in :data:`DECISIONS` order, then registered ones."""
    extra = {w.name: w.meaning for w in _WORDS.values() if w.name not in DECISIONS}
    return {**{d: _WORDS[d].meaning for d in DECISIONS}, **extra}


def rule_word(hdi_low: float, hdi_high: float, rope: float) -> DecisionWord:
    """The word the declared rule gives an interval: the first whose ``when`` holds."""
    return next(w for w in _WORDS.values() if w.when is not None and w.when(hdi_low, hdi_high, rope))


def display_order(words: tuple[DecisionWord, ...]) -> tuple[DecisionWord, ...]:
    """Rule words from the most positive to the most negative, for tables and figures."""
    def key(w: DecisionWord) -> tuple[float, int]:
        s = 0.5 if w.sign is None else w.sign
        return (-s, -int(w.beyond_rope) if s >= 0 else int(w.beyond_rope))
    return tuple(sorted((w for w in words if w.when is not None), key=key))


#: The built-in decision vocabulary of ``results.json`` (DESIGN.md), direction and size
#: separated; :func:`decision_words` adds any registered word.
DECISIONS: Final[tuple[str, ...]] = get_args(Decision)
#: What each built-in decision means, in words (one phrase each; ``docs/decisions.md``).
DECISION_MEANING: Final[dict[str, str]] = {d: _WORDS[d].meaning for d in DECISIONS}
#: The decision of an effect whose fit failed its diagnostics gate (issue 53): the rule's word
#: for its numbers is kept beside it as ``decision_if_passed`` (``selfmodel.decisions.gate``).
UNDECIDED: Final = "not_decided"
#: Built-in decisions whose sign is credible (the decision's printed HDI excludes 0 on that side).
POSITIVE_DECISIONS: Final = frozenset(w.name for w in _BUILT_IN if w.sign == 1)
NEGATIVE_DECISIONS: Final = frozenset(w.name for w in _BUILT_IN if w.sign == -1)

ScaleVariable = Literal["params", "active_params", "capability"]
#: ``--scale`` choice -> registry column. Sizes enter models as log10; capability as is.
SCALE_COLUMNS: Final[dict[str, str]] = {
    "params": "params_b",
    "active_params": "active_params_b",
    "capability": "capability",
}

#: Version of the ``results.json`` layout (``docs/results.md``, "Versions").
RESULTS_SCHEMA_VERSION: Final = "2.0"


#: What ``json.loads`` raises on text it cannot turn into data: a syntax error or an integer
#: of more than 4,300 digits (``ValueError``), nesting deeper than the interpreter's
#: recursion limit (``RecursionError``).
JSON_ERRORS: Final = (ValueError, RecursionError)


def json_problem(exc: BaseException) -> str:
    """Why a JSON text could not be read, in a few words (for a quarantine reason or message).

    Examples
    --------
    >>> import json
    >>> try:
    ...     json.loads("[" * 100_000 + "]" * 100_000)
    ... except JSON_ERRORS as exc:
    ...     json_problem(exc)
    'nested too deeply, over about 1,000 levels'
    >>> try:
    ...     json.loads("9" * 5000)
    ... except JSON_ERRORS as exc:
    ...     json_problem(exc)
    'an integer of more than 4300 digits'
    """
    if isinstance(exc, RecursionError):
        return "nested too deeply, over about 1,000 levels"
    msg = getattr(exc, "msg", None)
    if msg is not None and hasattr(exc, "colno"):  # json.JSONDecodeError
        return f"{msg} at column {exc.colno}"  # type: ignore[attr-defined]
    text = str(exc)
    if "integer string conversion" in text:
        return "an integer of more than 4300 digits"
    return text.splitlines()[0] if text else type(exc).__name__


def name_key(name: str) -> str:
    """The form in which two model names are compared: the one rule for look-alike names.

    Invisible format characters (zero-width space and joiners, soft hyphen, byte-order
    mark: Unicode category Cf) are removed, the text is put in Unicode normal form NFC, and
    white space is trimmed and collapsed to single spaces. Names with the same key are the
    same name: a registry may hold only one of them, and a record's model matches the
    registry row with its key.

    Examples
    --------
    >>> name_key("llama\u200b-70b") == name_key("llama-70b") == name_key(" llama-70b ")
    True
    >>> name_key("Qwe\u0301n") == name_key("Qw\u00e9n"), name_key("gpt  4") == "gpt 4"
    (True, True)
    """
    visible = "".join(ch for ch in name if unicodedata.category(ch) != "Cf")
    return " ".join(unicodedata.normalize("NFC", visible).split())


def shown(name: str) -> str:
    r"""A name as it is written, quoted, with invisible and combining characters escaped.

    >>> print(shown("llama​-70b"), shown("m1"), shown("gpt  4"))
    'llama​-70b' 'm1' 'gpt\x20\x204'
    """
    if name == name_key(name) and name.isascii():
        return repr(name)
    text = ascii(name)
    if name != " ".join(name.split()):  # spaces that a one-line message would collapse
        text = text[0] + text[1:-1].replace(" ", "\\x20") + text[-1]
    return text


def parse_bool(value: object) -> bool | None:
    """Parse a boolean written as true/false/1/0/yes/no in any case.

    Parameters
    ----------
    value
        A Python bool, int 0/1, or string.

    Returns
    -------
    bool or None
        ``None`` when the value is null or not a recognised boolean.

    Examples
    --------
    >>> parse_bool("YES"), parse_bool(" 0 "), parse_bool("maybe"), parse_bool(None)
    (True, False, None, None)
    """
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        s = value.strip().lower()
        if s in TRUE_STRINGS:
            return True
        if s in FALSE_STRINGS:
            return False
    return None


def empty_records() -> pl.DataFrame:
    """Return an empty canonical record table."""
    return pl.DataFrame(schema=RECORD_SCHEMA)


def empty_quarantine() -> pl.DataFrame:
    """Return an empty quarantine table."""
    return pl.DataFrame(schema=QUARANTINE_SCHEMA)

#: Why derived checkpoints are left out of the scale and SDT models.
SCALE_EXCLUSION_REASON = (
    "derived checkpoint (registry base_model): it has its base's size, so it would be an extra "
    "point at one size on the scale axis; its effect is estimated in training_effect"
)
