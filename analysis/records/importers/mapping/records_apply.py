r"""Applying a ``format = "records"`` mapping to the rows of one record file.

:class:`RecordsTransform` is called by ingest on each file's rows (every value still as the
file holds it, with its line number) before the validation rules. It returns a
:class:`Mapped`: the mapped rows; for the rows the mapping cannot read, ``(line, category,
reason)`` (those rows are quarantined with that reason); how many records the file's rows
became (a wide table melts into one record per row and column group) and how many a
``[[rule]]`` left out (``excluded``). So the accounting ``read = used + quarantined +
duplicate + excluded`` holds and nothing is dropped silently.

Order of the steps: the row position (``item_id = "@row"``), the fields from the file's path
(constants, ``@folder``/``@file``, ``[path] pattern``), ``[melt]``, the check that what the
mapping sets does not contradict the file's own column of that name, ``[join]`` (answer keys,
on one or several columns), ``[map]``, ``[recode]``, ``[[rule]]`` (on the values as the file
holds them), the confidence (per-option probability, ``normalize``, declared ``scale``),
``[answered]`` (the outcome), then ``[prediction]`` (confidence >= threshold). A row a rule
gives a status is never quarantined by the later steps: the rule said what it is.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import polars as pl
import regex as rx

from selfmodel.records.contract import InputError
from selfmodel.records.importers.mapping.records_spec import (
    MELT_COLUMN,
    PATTERN_TIMEOUT,
    RecordsMapping,
    Rule,
    load_records_mapping,
)
from selfmodel.records.ingest.columns import kind_fits
from selfmodel.records.reduction import FLOAT_PATTERN, MISSING_SPELLINGS, WHITE_SPACE, boolean, text
from selfmodel.records.registry import format_input_error
from selfmodel.records.snippets import snippet

__all__ = ["Mapped", "RecordsTransform", "load_transform"]

LINE = "__line"
_BAD = "__bad_reason"
_CAT = "__bad_cat"
_RULE = "__rule"  # index of the first [[rule]] that matches the row
_PART = "__part_"  # a field given by the melt pattern, per row
_POS = "__position"
#: At most this many tasks are listed in the join warning.
_SHOWN = 6


class Mapped(NamedTuple):
    """What the mapping made of one file's rows (see the module docstring)."""

    frame: pl.DataFrame
    quarantined: list[tuple[int, str, str, str | None]]
    records: int
    #: rows left out by a ``[[rule]]`` (``then = "excluded"``), by the rule's description
    excluded: dict[str, int]


def without_join_file(paths: list[Path], transform: RecordsTransform | None
                      ) -> tuple[list[Path], list[dict[str, str]]]:
    """The record files minus the mapping's joined files, and those files as not read.

    An answer key kept in the records' folder is not records.
    """
    if transform is None or not transform.mapping.join_files:
        return paths, []
    keys = {p.resolve() for p in transform.mapping.join_files}
    kept = [p for p in paths if Path(p).resolve() not in keys]
    dropped = [{"path": Path(p).as_posix(), "reason": "the file the mapping joins ([join] file)"}
               for p in paths if Path(p).resolve() in keys]
    return kept, dropped


def load_transform(path: Path | str) -> RecordsTransform:
    """The transform of the mapping file at ``path`` (see :class:`RecordsTransform`)."""
    return RecordsTransform(load_records_mapping(path))


def _text(e: pl.Expr) -> pl.Expr:
    """Ingest's text of a value (:func:`selfmodel.records.reduction.text`) for an expression."""
    t = e.cast(pl.Utf8).str.strip_chars(WHITE_SPACE)
    return pl.when((t != "") & ~t.is_in(MISSING_SPELLINGS)).then(t)


class RecordsTransform:
    """Apply a records mapping to a file's rows; count what it did for ``ingest.json``.

    Parameters
    ----------
    mapping
        The parsed mapping.
    """

    def __init__(self, mapping: RecordsMapping) -> None:
        self.mapping = mapping
        self.counts: dict[str, int] = {"rows_mapped": 0, "confidence_rescaled": 0,
                                       "predictions_derived": 0, "outcomes_derived": 0,
                                       "joined": 0}
        if mapping.melt is not None:
            self.counts |= {"rows_melted": 0, "records_from_melt": 0}
        if mapping.rules:
            self.counts["excluded"] = 0
        self.rule_counts = [0] * len(mapping.rules)
        self.relabelled: dict[str, Counter[str]] = {}
        # field -> value the mapping gives -> {the file's own value: first file}
        self._own: dict[str, dict[str, dict[str, str]]] = {}
        self.melt_groups: dict[str, list[str]] = {}
        self.joined_tasks: set[str] = set()
        self.options_absent: dict[str, list[str]] = {}  # file -> options it has no column of
        self._here: dict[str, str] = dict(mapping.options)  # the options of the current file
        self._key: pl.DataFrame | None = None

    @property
    def read_columns(self) -> set[str]:
        """Columns of the record files that must be read (JSONL keys), not the joined file's."""
        cols = self.mapping.source_columns()
        if self.mapping.join_files:
            cols -= set(self._key_frame().columns)
        return cols

    def summary(self) -> dict[str, Any]:
        """What the mapping declared and did, for ``ingest.json`` (``study_mapping``)."""
        m = self.mapping
        out: dict[str, Any] = {
            "path": m.path,
            "confidence": ({"column": m.confidence_column, "options": m.options or None,
                            "chosen": m.chosen, "normalize": m.normalize,
                            "scale": list(m.scale) if m.scale else [0.0, 1.0]}
                           if (m.confidence_column or m.options) else None),
            "prediction": (f"confidence >= {m.threshold}: the model says it will be right"
                           if m.threshold is not None else None),
            "outcome": ("whether the task was answered right"
                        if (m.answered_column or m.answer) else None),
            "join": (None if not m.join_files else
                     {"file": str(m.join_file) if m.join_glob is None else m.join_glob,
                      "files": [str(p) for p in m.join_files], "left_on": list(m.left_on),
                      "right_on": list(m.right_on)}),
            "counts": dict(self.counts),
        }
        if m.item_from_row:
            out["item_id"] = ("the row's position in its file (1 = the first row after the "
                              "header): the file has no id column")
        if m.path_pattern is not None:
            out["path_pattern"] = m.path_pattern.pattern
        if m.melt is not None:
            out["melt"] = {"columns": m.melt.pattern, "groups": dict(self.melt_groups)}
        if m.rules:
            out["rules"] = [{"rule": r.describe(), "rows": n}
                            for r, n in zip(m.rules, self.rule_counts, strict=True)]
        if self.options_absent:
            out["options_absent"] = dict(self.options_absent)
        if self.relabelled:
            out["relabelled"] = {f: dict(sorted(c.items())) for f, c in self.relabelled.items()}
        warnings = self.warnings()
        if warnings:
            out["warnings"] = warnings
        return out

    def warnings(self) -> list[str]:
        """What the mapping did that a reader must know: relabels, a key shared by tasks."""
        m = self.mapping
        out = []
        for f, c in sorted(self.relabelled.items()):
            n = sum(c.values())
            pairs = ", ".join(list(c)[:3]) + (", ..." if len(c) > 3 else "")
            out.append(f"the mapping relabelled the {f} of {n:,} rows whose own '{f}' column "
                       f"says otherwise ({pairs}).")
        if len(self.joined_tasks) > 1 and "task" not in m.left_on:
            tasks = sorted(self.joined_tasks)
            shown = ", ".join(tasks[:_SHOWN]) + (", ..." if len(tasks) > _SHOWN else "")
            out.append(
                f"rows of {len(tasks)} tasks ({shown}) were joined to the same key on "
                f"{', '.join(m.left_on)} only: if each task has its own key, key the join by "
                "task too: " + snippet('on = ["task", "<id column>"]', table="join") + " with "
                + snippet("path = '(?P<task>[^/]+)_key\\.csv$'", table="join")
                + " (the task of each key file from its name).")
        return out

    # ------------------------------------------------------------------ the steps

    def __call__(self, name: str, frame: pl.DataFrame, present: list[str],
                 skipped: Sequence[int] = (), *, offset: int = 0) -> Mapped:
        """Map one file's rows, or one batch of them (see the module docstring).

        ``present`` are the columns the file has (a JSONL key only when some line gives
        it a value); ``skipped`` the lines of rows the reader could not read (they still
        count in a row's position); ``offset`` the file's rows before this batch
        (:mod:`selfmodel.records.ingest.readers` reads large files in batches).
        """
        m = self.mapping
        rows_in = frame.height
        if m.item_from_row:
            frame = _positions(frame, skipped, offset)
        parts = {c: _constant(v, name) for c, v in m.constants.items()}
        parts |= self._path_parts(name)
        present = list(present)
        if m.melt is not None:
            frame, present = self._melt(name, frame, present)
        melted = frame.height
        # every field the mapping sets: a constant of this file or a melted column per row
        sets: dict[str, pl.Expr] = {f: pl.lit(v, dtype=pl.Utf8) for f, v in parts.items()}
        sets |= {f: pl.col(_PART + f) for f in m.part_fields() if f not in parts}
        frame = frame.with_columns(pl.lit(None, dtype=pl.Utf8).alias(_BAD),
                                   pl.lit(None, dtype=pl.Utf8).alias(_CAT))
        read = {m.confidence_column, m.chosen, m.answered_column, m.answer, m.key,
                *m.left_on, *m.options.values()}
        frame = frame.with_columns(pl.col(c).cast(pl.Utf8) for c in read if c in frame.columns)
        frame = self._contradictions(name, frame, sets)
        if m.join_files:
            self._check_columns(name, present, [c for c in m.left_on if c not in sets])
            frame = self._join(name, frame, sets)
            present += [c for c in self._key_frame().columns if not c.startswith("__")]
        wanted = sorted(m.source_columns() - set(sets) - set(m.options.values()))
        self._check_columns(name, present, wanted, frame)
        self._options_here(name, present)
        frame = frame.with_columns(
            *(e.alias(f) for f, e in sets.items()),
            *((sets[s] if s in sets and s not in frame.columns else pl.col(s)).alias(c)
              for c, s in m.columns.items()),
            *(pl.col(_POS).alias("item_id") for _ in [m.item_from_row] if m.item_from_row),
        )
        frame = self._recode(frame)
        frame = self._rules(name, frame, present, sets)
        if m.join_files:
            frame = self._join_failures(frame)
        if m.confidence_column or m.options:
            frame = self._confidence(frame)
        if m.answered_column or m.answer:
            frame = self._answered(frame)
        if m.threshold is not None:
            conf = pl.col("confidence")
            # the record's confidence is the stated probability that the *prediction* is
            # right (docs/records.md): for "I will be wrong" that is 1 - the stated chance
            frame = frame.with_columns(
                pl.when(conf.is_null()).then(None)
                .when(conf >= m.threshold).then(pl.lit("true")).otherwise(pl.lit("false"))
                .alias("prediction"),
                pl.when(conf >= m.threshold).then(conf).otherwise(1.0 - conf).alias("confidence"))
        frame = self._ruled_status(frame)
        # the columns read are dropped, unless the mapping wrote that canonical column itself:
        # a file's own 'correct' read by [answered] is task accuracy and must not reach ingest
        # as the self-prediction's 'correct'
        written = set(m.columns) | set(sets) | ({"item_id"} if m.item_from_row else set())
        written |= {"confidence"} if (m.confidence_column or m.options) else set()
        written |= {"outcome"} if (m.answered_column or m.answer) else set()
        written |= {"prediction"} if m.threshold is not None else set()
        written |= {"status"} if m.rules else set()
        consumed = [c for c in m.source_columns() if c not in written and c in frame.columns]
        helpers = [c for c in frame.columns if c.startswith((_PART, _POS, _RULE))]
        excluded = frame.filter(pl.col(_RULE).is_not_null() & (pl.col("status") == "excluded")
                                ) if m.rules else frame.clear()
        keep = pl.col(_BAD).is_null()
        if m.rules:
            keep &= ~(pl.col("status") == "excluded").fill_null(False)
        bad = frame.filter(pl.col(_BAD).is_not_null())
        good = frame.filter(keep).drop(_BAD, _CAT, *consumed, *helpers)
        self._count(good, rows_in, melted, excluded.height)
        by_rule: dict[str, int] = {}
        for i, n in excluded.get_column(_RULE).value_counts().iter_rows() if excluded.height else []:
            by_rule[m.rules[int(i)].describe()] = int(n)
        return Mapped(good, [(int(r[0]), str(r[1]), str(r[2]), None)
                             for r in bad.select(LINE, _CAT, _BAD).iter_rows()],
                      melted, by_rule)

    def _count(self, good: pl.DataFrame, rows_in: int, melted: int, excluded: int) -> None:
        m = self.mapping
        self.counts["rows_mapped"] += good.height
        if m.scale is not None:
            self.counts["confidence_rescaled"] += int(good["confidence"].is_not_null().sum())
        if m.threshold is not None:
            self.counts["predictions_derived"] += int(good["prediction"].is_not_null().sum())
        if m.answered_column or m.answer:
            self.counts["outcomes_derived"] += int(good["outcome"].is_not_null().sum())
        if m.join_files:
            self.counts["joined"] += good.height
            if "task" in good.columns:
                self.joined_tasks |= set(good["task"].drop_nulls().unique().to_list())
        if m.melt is not None:
            self.counts["rows_melted"] += rows_in
            self.counts["records_from_melt"] += melted
        if m.rules:
            self.counts["excluded"] += excluded

    # ------------------------------------------------------------------ checks

    def _check_columns(self, name: str, present: list[str], wanted: list[str],
                       frame: pl.DataFrame | None = None) -> None:
        """Every column the mapping names must exist (a typo never falls back silently).

        The closest column suggested is of the kind the mapped field needs: for ``[map]
        model = "modl"`` a column of booleans or numbers is never suggested (``frame``).
        """
        fills = {source: canonical for canonical, source in self.mapping.columns.items()}
        for col in wanted:
            if col in present:
                continue
            canonical = fills.get(col)
            fit = [c for c in present if canonical is None or kind_fits(canonical, frame, c)]
            close = difflib.get_close_matches(col, fit, n=1, cutoff=0.6)
            raise InputError(format_input_error(
                name, f"column '{col}' named in the mapping {self.mapping.path} is not in the "
                f"file (present: {', '.join(present[:20])})",
                f"Fix the mapping, e.g. '{close[0]}'" if close else "Fix the mapping",
                line=1 if name.endswith((".csv", ".csv.gz")) else None, column=col))

    def _options_here(self, name: str, present: list[str]) -> None:
        """The options of this file: a question set may have fewer (four beside five).

        An option whose column the file lacks is listed (``options_absent``); a row that
        chose it is quarantined. A file with fewer than two of the option columns is an error.
        """
        m = self.mapping
        if not m.options:
            return
        self._here = {label: c for label, c in m.options.items() if c in present}
        absent = [label for label in m.options if label not in self._here]
        if len(self._here) < 2:
            self._check_columns(name, present, [m.options[label] for label in absent])
        if absent:
            self.options_absent[name] = absent

    def _contradictions(self, name: str, frame: pl.DataFrame, sets: dict[str, pl.Expr]
                        ) -> pl.DataFrame:
        """A field the mapping sets that the file's own column of that name says otherwise.

        One of the file's own values given another name is relabelled, and counted
        (``study_mapping.relabelled``, a warning). Two or more of them given one value (a
        constant ``task`` over logs of two tasks) would merge what the files keep apart: an
        error, in this file or across files.
        """
        m = self.mapping
        read_by_map = set(m.columns.values())
        for f, expr in sets.items():
            if f not in frame.columns or f in read_by_map:
                continue
            own, mine = _text(pl.col(f)), _text(expr)
            pairs = (frame.select(own.alias("own"), mine.alias("mine"), pl.col(LINE))
                     .filter(pl.col("own").is_not_null())
                     .group_by("own", "mine").agg(pl.len(), pl.col(LINE).min())
                     .sort(LINE))
            for theirs, ours, n, line in pairs.iter_rows():
                seen = self._own.setdefault(f, {}).setdefault(ours, {})
                seen.setdefault(theirs, name)
                if len(seen) > 1:
                    (a, file_a), (b, file_b) = list(seen.items())[:2]
                    raise InputError(format_input_error(
                        name, f"the mapping {m.path} gives {f} {ours!r} to rows whose own "
                        f"'{f}' column says {a!r} ({file_a}) and {b!r} ({file_b}): they would "
                        f"become one {f}", f"Drop the mapping's {f} to keep the file's own, "
                        "or leave out the rows of the others with " + snippet(
                            f'column = "{f}"\nequals = "{b}"\nthen = "excluded"', table="rule", array=True),
                        line=line, column=f))
                if theirs != ours:
                    self.relabelled.setdefault(f, Counter())[f"{theirs} -> {ours}"] += n
        return frame

    # ------------------------------------------------------------------ path, melt

    def _path_parts(self, name: str) -> dict[str, str]:
        """The named groups of ``[path] pattern`` in the file's path (an error when it fails)."""
        pattern = self.mapping.path_pattern
        if pattern is None:
            return {}
        path = Path(name).as_posix()
        match = _search(pattern, path, self.mapping.path, "[path] pattern")
        if match is None:
            raise InputError(format_input_error(
                name, f"the mapping's [path] pattern {pattern.pattern!r} does not match this "
                "file's path", "Fix the pattern (it is searched in the path with / between "
                "folders), or give the files it fits only", column="pattern"))
        missing = [g for g, v in match.groupdict().items() if not v]
        if missing:
            raise InputError(format_input_error(
                name, f"the group (?P<{missing[0]}>...) of [path] pattern {pattern.pattern!r} "
                "matches nothing in this file's path", "Make the group match at least one "
                "character", column="pattern"))
        return {g: str(v) for g, v in match.groupdict().items()}

    def _melt(self, name: str, frame: pl.DataFrame, present: list[str]
              ) -> tuple[pl.DataFrame, list[str]]:
        """One row per source row and column group (``[melt] columns``)."""
        pattern = self.mapping.melt
        assert pattern is not None
        groups: dict[tuple[str, ...], dict[str, str]] = {}
        fields = [g for g in pattern.groupindex if g != MELT_COLUMN]
        kept = []
        for col in present:
            match = _search(pattern, col, self.mapping.path, "[melt] columns", full=True)
            if match is None:
                kept.append(col)
                continue
            key = tuple(str(match.group(f)) for f in fields)
            groups.setdefault(key, {})[str(match.group(MELT_COLUMN))] = col
        if not groups:
            raise InputError(format_input_error(
                name, f"no column matches the mapping's [melt] columns {pattern.pattern!r} "
                f"(present: {', '.join(present[:20])})", "Fix the pattern (it must match "
                "a whole column name)", line=1 if name.endswith((".csv", ".csv.gz")) else None,
                column="columns"))
        names = sorted({c for g in groups.values() for c in g})
        clash = sorted(set(names) & set(kept))
        if clash:
            raise InputError(format_input_error(
                name, f"the melted column '{clash[0]}' is also a column of the file",
                "Rename the pattern's column group, or the file's column", column=clash[0]))
        for key, cols in groups.items():
            if set(cols) != set(names):
                lack = sorted(set(names) - set(cols))[0]
                label = ", ".join(f"{f} {v!r}" for f, v in zip(fields, key, strict=True))
                raise InputError(format_input_error(
                    name, f"the column group of {label} has no '{lack}' column (the other "
                    f"groups have {', '.join(names)})", "Give every group the same columns, "
                    "or narrow the pattern", line=1 if name.endswith((".csv", ".csv.gz"))
                    else None, column=lack))
        for key, cols in groups.items():
            label = "/".join(key)
            self.melt_groups.setdefault(label, sorted(cols.values()))
        base = [c for c in frame.columns if c in kept or c.startswith("__")]
        pieces = [frame.select(
            *base, *(pl.lit(v, dtype=pl.Utf8).alias(_PART + f)
                     for f, v in zip(fields, key, strict=True)),
            *(pl.col(src).cast(pl.Utf8).alias(col) for col, src in sorted(cols.items())))
            for key, cols in groups.items()]
        return pl.concat(pieces, how="vertical"), [*kept, *names]

    # ------------------------------------------------------------------ join

    def _join(self, name: str, frame: pl.DataFrame, sets: dict[str, pl.Expr]) -> pl.DataFrame:
        m = self.mapping
        key = self._key_frame()
        clash = sorted(set(key.columns) - {"__matched", "__keyfile"} - {
            f"__k{i}" for i in range(len(m.right_on))} & set(frame.columns))
        if clash:
            raise InputError(format_input_error(
                m.path, f"columns {', '.join(clash)} of the joined file {m.join_file} are also "
                f"in {name}", "Set " + snippet('prefix = "key_"', table="join") + " to tell "
                "them apart", column="prefix"))
        lefts = [_text(sets[c]) if c in sets else _text(pl.col(c)) for c in m.left_on]
        frame = frame.with_columns(e.alias(f"__k{i}") for i, e in enumerate(lefts))
        on = [f"__k{i}" for i in range(len(lefts))]
        return frame.join(key.drop("__keyfile"), on=on, how="left", maintain_order="left",
                          nulls_equal=False)

    def _join_failures(self, frame: pl.DataFrame) -> pl.DataFrame:
        """Quarantine rows without a key, or whose key is not in the joined files."""
        m = self.mapping
        on = [f"__k{i}" for i in range(len(m.left_on))]
        no_key = pl.any_horizontal(pl.col(c).is_null() for c in on)
        frame = self._fail(frame, no_key, "no join key",
                           pl.lit(f"no join key '{', '.join(m.left_on)}'"))
        shown = pl.concat_str([pl.col(c).fill_null("null") for c in on], separator="', '")
        where = (m.join_file.name if m.join_file is not None and m.join_glob is None
                 else f"the joined files ({m.join_glob})")
        frame = self._fail(frame, pl.col("__matched").is_null(), "not in joined file",
                           pl.format(f"no row in {where} with {', '.join(m.right_on)} = '{{}}'",
                                     shown))
        return frame.drop(*on, "__matched")

    def _key_frame(self) -> pl.DataFrame:
        """The joined files, every value as text, their key unique (read once)."""
        if self._key is not None:
            return self._key
        m = self.mapping
        frames = []
        for path in m.join_files:
            key = _read_any(path)
            if m.join_pattern is not None:
                match = _search(m.join_pattern, path.as_posix(), m.path, "[join] path")
                if match is None:
                    raise InputError(format_input_error(
                        path, f"the mapping's [join] path {m.join_pattern.pattern!r} does not "
                        "match this joined file's path", f"Fix [join] path in {m.path}",
                        column="path"))
                key = key.with_columns(pl.lit(str(v), dtype=pl.Utf8).alias(g)
                                       for g, v in match.groupdict().items())
            for col in m.right_on:
                if col not in key.columns:
                    raise InputError(format_input_error(
                        path, f"join key '{col}' is not a column (present: "
                        f"{', '.join(key.columns[:20])})", "Fix [join] right_on (or on) in "
                        f"{m.path}", line=1, column=col))
            frames.append(key.with_columns(pl.lit(path.name).alias("__keyfile")))
        key = pl.concat(frames, how="diagonal") if len(frames) > 1 else frames[0]
        on = [f"__k{i}" for i in range(len(m.right_on))]
        key = key.with_columns(*(text(c, pl).alias(k) for c, k in zip(m.right_on, on, strict=True)),
                               pl.lit(True).alias("__matched"))
        key = key.filter(pl.all_horizontal(pl.col(k).is_not_null() for k in on))
        dup = key.filter(pl.struct(on).is_duplicated())
        if dup.height:
            first = dup.row(0, named=True)
            same = dup.filter(pl.all_horizontal(pl.col(k) == first[k] for k in on))
            files = sorted(set(same["__keyfile"].to_list()))
            value = ", ".join(f"{c} = {first[k]!r}" for c, k in zip(m.right_on, on, strict=True))
            hint = ("Give each key one row in the joined file" if len(files) == 1 else
                    "Each joined file needs its own part of the key: " + snippet(
                        'on = ["task", "<id column>"]', table="join") + " with "
                    + snippet("path = '(?P<task>[^/]+)_key\\.csv$'", table="join"))
            raise InputError(format_input_error(
                m.join_files[0] if len(files) == 1 else m.path,
                f"key {value} appears {same.height} times (in {', '.join(files)})", hint,
                column=m.right_on[-1]))
        keep = [c for c in key.columns if c not in (*m.right_on, *on, "__matched", "__keyfile")]
        key = key.select(*on, "__matched", "__keyfile",
                         *(pl.col(c).alias(m.prefix + c) for c in keep))
        self._key = key
        return key

    # ------------------------------------------------------------------ values

    def _recode(self, frame: pl.DataFrame) -> pl.DataFrame:
        """``[recode]``: values of canonical columns, as written, to what they stand for."""
        rec = self.mapping.recode
        return frame.with_columns(
            pl.col(c).cast(pl.Utf8).str.strip_chars(WHITE_SPACE).replace(
                list(table), list(table.values())).alias(c)
            for c, table in rec.items() if c in frame.columns)

    def _rules(self, name: str, frame: pl.DataFrame, present: list[str],
               sets: dict[str, pl.Expr]) -> pl.DataFrame:
        """``[[rule]]``: the index of the first rule each row matches (``__rule``)."""
        m = self.mapping
        if not m.rules:
            return frame.with_columns(pl.lit(None, dtype=pl.Int64).alias(_RULE))
        hit = pl.lit(None, dtype=pl.Int64)
        for i in reversed(range(len(m.rules))):
            rule = m.rules[i]
            source = self._rule_source(name, rule, present, sets)
            hit = pl.when(_matches(source, rule).fill_null(False)).then(pl.lit(i)).otherwise(hit)
        frame = frame.with_columns(hit.alias(_RULE))
        counts = frame.get_column(_RULE).drop_nulls().value_counts()
        for i, n in counts.iter_rows():
            self.rule_counts[int(i)] += int(n)
        return frame

    def _rule_source(self, name: str, rule: Rule, present: list[str],
                     sets: dict[str, pl.Expr]) -> pl.Expr:
        """The values a rule reads: the file's column, or a field the mapping sets or maps."""
        m = self.mapping
        if rule.column in present:
            return pl.col(rule.column)
        if rule.column in sets:
            return sets[rule.column]
        if rule.column in m.columns:
            return pl.col(m.columns[rule.column])
        self._check_columns(name, present, [rule.column])
        raise AssertionError  # pragma: no cover - _check_columns raised

    def _ruled_status(self, frame: pl.DataFrame) -> pl.DataFrame:
        """The status of rows a rule matched; what they have no value for is null."""
        m = self.mapping
        if not m.rules:
            return frame
        then = [r.then for r in m.rules]
        rule = pl.col(_RULE)
        status = pl.lit(None, dtype=pl.Utf8)
        for i, action in enumerate(then):
            status = pl.when(rule == i).then(pl.lit(action)).otherwise(status)
        # unanswered: no outcome; every other status: no (readable) prediction
        unanswered = rule.is_in([i for i, a in enumerate(then) if a == "unanswered"])
        others = rule.is_not_null() & ~unanswered
        current = pl.col("status") if "status" in frame.columns else pl.lit(None, dtype=pl.Utf8)
        out = [pl.when(rule.is_not_null()).then(status).otherwise(current.cast(pl.Utf8))
               .alias("status")]
        for c in ("prediction", "confidence"):
            if c in frame.columns:
                out.append(pl.when(others).then(None).otherwise(pl.col(c)).alias(c))
        for c in ("outcome", "correct"):
            if c in frame.columns:
                out.append(pl.when(rule.is_not_null() & unanswered).then(None)
                           .otherwise(pl.col(c)).alias(c))
        return frame.with_columns(out)

    def _fail(self, frame: pl.DataFrame, cond: pl.Expr, cat: str, reason: pl.Expr
              ) -> pl.DataFrame:
        """Mark rows where ``cond`` holds (no earlier step failed, no rule matched) as quarantined."""
        hit = pl.col(_BAD).is_null() & pl.col(_RULE).is_null() & cond.fill_null(False)
        return frame.with_columns(
            pl.when(hit).then(reason).otherwise(pl.col(_BAD)).alias(_BAD),
            pl.when(hit).then(pl.lit(cat)).otherwise(pl.col(_CAT)).alias(_CAT),
        )

    def _number(self, frame: pl.DataFrame, col: str, what: str
                ) -> tuple[pl.DataFrame, pl.Expr]:
        """A column as a number; text that is not one quarantines its row."""
        value = text(col, pl)
        num = value.cast(pl.Float64, strict=False)
        num = pl.when(num.is_nan() | num.is_infinite()).then(None).otherwise(num)
        frame = self._fail(frame, value.is_not_null() & num.is_null(), "invalid confidence",
                           pl.format(f"{what} '{{}}' (column '{col}') is not a finite number",
                                     value))
        return frame, num

    def _confidence(self, frame: pl.DataFrame) -> pl.DataFrame:
        m = self.mapping
        probs: dict[str, pl.Expr] = {}
        if m.confidence_column:
            frame, x = self._number(frame, m.confidence_column, "confidence")
            shown = pl.col(m.confidence_column).cast(pl.Utf8)
        else:
            chosen = text(m.chosen or "", pl)
            for label, col in self._here.items():
                frame, probs[label] = self._number(frame, col, f"probability of option {label}")
            frame = self._fail(
                frame, chosen.is_not_null() & ~chosen.is_in(list(m.options)), "invalid chosen option",
                pl.format(f"chosen option '{{}}' (column '{m.chosen}') is not one of "
                          f"{', '.join(m.options)}", chosen))
            absent = [label for label in m.options if label not in self._here]
            frame = self._fail(
                frame, chosen.is_in(absent), "invalid chosen option",
                pl.format(f"chosen option '{{}}' (column '{m.chosen}') has no probability "
                          "column in this file", chosen))
            x = pl.lit(None, dtype=pl.Float64)
            for label in reversed(list(self._here)):
                x = pl.when(chosen == label).then(probs[label]).otherwise(x)
            shown = x.cast(pl.Utf8)
        low, high = m.scale if m.scale is not None else (0.0, 1.0)
        frame = self._fail(
            frame, (x < low) | (x > high), "confidence outside declared scale",
            pl.format(f"confidence {{}} is outside the declared scale [{low:g}, {high:g}]",
                      shown))
        if m.normalize:  # a share of the options' sum: on the scale of the options already
            total = pl.sum_horizontal(*probs.values())
            frame = self._fail(frame, x.is_not_null() & (total <= 0), "invalid confidence",
                               pl.lit("the option probabilities sum to 0"))
            conf = pl.when(total > 0).then(x / total).otherwise(None)
        else:
            conf = (x - low) / (high - low)
        # 12 decimals: 6 of 10 is 0.6 (not 0.6000000000000001), so 5 of 10 meets a 0.5 threshold
        return frame.with_columns(conf.round(12).alias("confidence"))

    def _answered(self, frame: pl.DataFrame) -> pl.DataFrame:
        m = self.mapping
        if m.answered_column:
            col = m.answered_column
            value = text(col, pl)
            b = boolean(value, pl)
            frame = self._fail(frame, value.is_not_null() & b.is_null(), "invalid answered",
                               pl.format(f"'{{}}' (column '{col}', whether the task was "
                                         "answered right) is not a boolean", value))
        else:
            a = text(m.answer or "", pl)
            k = text(m.key or "", pl)
            b = pl.when(a.is_null() | k.is_null()).then(None).otherwise(a == k)
        outcome = pl.when(b.is_null()).then(None).when(b).then(pl.lit("true")) \
            .otherwise(pl.lit("false"))
        return frame.with_columns(outcome.alias("outcome"))


def _matches(source: pl.Expr, rule: Rule) -> pl.Expr:
    """Whether a rule matches: a missing value, or one of the rule's values.

    Text is compared as written (white space stripped, case kept); ``true``/``false`` match
    any boolean spelling of that value; a number matches a cell that reads as that number.
    """
    t = _text(source)
    if rule.missing:
        return t.is_null()
    cond = pl.lit(False)
    for v in rule.values:
        if isinstance(v, bool):
            cond |= boolean(t, pl) == v
        elif isinstance(v, int | float):
            num = pl.when(t.str.contains(FLOAT_PATTERN)).then(t).cast(pl.Float64, strict=False)
            cond |= num == float(v)
        else:
            cond |= t == str(v).strip()
    return cond


def _search(pattern: rx.Pattern[str], value: str, mapping: str | None, what: str,
            *, full: bool = False) -> Any:
    """``pattern`` searched in (or ``full``: matched against) ``value``, with a time limit."""
    try:
        if full:
            return pattern.fullmatch(value, timeout=PATTERN_TIMEOUT)
        return pattern.search(value, timeout=PATTERN_TIMEOUT)
    except TimeoutError:
        raise InputError(format_input_error(
            mapping, f"{what} {pattern.pattern!r} ran for {PATTERN_TIMEOUT:g} s on {value!r} "
            "(nested repeats backtrack without end)", "Simplify the pattern")) from None


def _positions(frame: pl.DataFrame, skipped: Sequence[int], offset: int = 0) -> pl.DataFrame:
    """``__position``: each row's 1-based position among the file's rows (unread ones too).

    ``offset``: the rows of the file before these (earlier batches).

    >>> f = pl.DataFrame({LINE: [2, 3, 5]})
    >>> _positions(f, [4])[_POS].to_list(), _positions(f, [4], 10)[_POS].to_list()
    (['1', '2', '4'], ['11', '12', '14'])
    """
    lines = sorted(set(frame.get_column(LINE).to_list()) | set(skipped))
    index = {line: str(offset + i + 1) for i, line in enumerate(lines)}
    return frame.with_columns(pl.col(LINE).replace_strict(
        list(index), list(index.values()), return_dtype=pl.Utf8).alias(_POS))


def _constant(value: str, name: str) -> str:
    """A top-level constant; ``@folder`` and ``@file`` are read from the file's path ``name``.

    >>> _constant("@folder", "logs/gpt-4o/sciq.csv"), _constant("@file", "logs/gpt-4o/sciq.csv")
    ('gpt-4o', 'sciq')
    >>> _constant("trivia", "logs/gpt-4o/sciq.csv")
    'trivia'
    """
    if value == "@folder":
        return Path(name).absolute().parent.name
    if value == "@file":
        return Path(Path(name).name.removesuffix(".gz")).stem
    return value


def _read_any(path: Path) -> pl.DataFrame:
    """A CSV, JSONL or Parquet file with every column as text (one-line error otherwise)."""
    name = path.name.lower()
    try:
        if name.endswith((".csv", ".csv.gz")):
            return pl.read_csv(path, infer_schema=False)
        if name.endswith((".jsonl", ".ndjson", ".jsonl.gz")):
            frame = pl.read_ndjson(path, infer_schema_length=None)
        elif name.endswith(".parquet"):
            frame = pl.read_parquet(path)
        else:
            raise InputError(format_input_error(
                path, "the joined file must be .csv, .jsonl or .parquet", "Convert it"))
    except (OSError, pl.exceptions.PolarsError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InputError(format_input_error(path, f"cannot read the joined file ({first})",
                                            "Check the path and format")) from None
    return frame.with_columns(pl.all().cast(pl.Utf8))
