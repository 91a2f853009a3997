"""Page layout of rendered reports: the checks that look, and what the renderer does for them.

The first group proves the two PDF checks of ``tests/layout_util.py`` fail on the faults they
exist for (a figure wider than the page, words printed over words) and pass a clean page. The
second renders a report built to be hard to lay out (a long table, a wide table, a table too
wide for any portrait page, a figure drawn too wide, one drawn at the default size) and checks
every page of its PDF, and what the renderer says it did. The third reads the text inside
every figure of the real report (a probe in the kernel: figures are images to pdftotext) for
raw mathtext tick labels. The last renders a report with the Self-Execution Benchmark's shape
from a quick SEB run (slow, needs ../shared/data; ``SELFMODEL_SEB_RESULTS`` may name saved
results instead) and checks every page. The default-data report's pages and first screen are
checked in ``tests/end_to_end/test_report.py``. Page images are kept in ``tests/artifacts/layout/``
(git-ignored) for a person to look at.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from selfmodel.report.document import REPORT_QMD, render_report
from selfmodel.report.render import PAGE, RenderResult, render

try:  # tests/ is on sys.path (pytest's default rootdir-less import mode)
    import layout_util as lu
except ImportError:  # tests/ became a package
    from tests import layout_util as lu

ARTIFACTS = Path(__file__).parents[1] / "artifacts" / "layout"

pytestmark = pytest.mark.skipif(
    bool(lu.tools_missing()),
    reason="poppler-utils (pdftoppm, pdftotext) not installed (apt-get install -y poppler-utils)",
)


# ------------------------------------------------------------------ the checks can fail


def _typst_pdf(folder: Path, name: str, body: str) -> Path:
    """A PDF in the report's page geometry with ``body`` as its Typst markup."""
    import typst

    folder.mkdir(parents=True, exist_ok=True)
    page = (
        f'#set page(paper: "a4", margin: (x: {PAGE.margin_x_mm}mm, '
        f"top: {PAGE.margin_top_mm}mm, bottom: {PAGE.margin_bottom_mm}mm))\n"
        "#set text(size: 10pt, hyphenate: false)\n"
    )
    typ = folder / f"{name}.typ"
    typ.write_text(page + body)
    pdf = folder / f"{name}.pdf"
    pdf.write_bytes(typst.compile(str(typ), root=str(folder), ignore_system_fonts=True))
    return pdf


def _dark_png(path: Path, width: int, height: int) -> None:
    from PIL import Image

    Image.new("RGB", (width, height), (30, 60, 120)).save(path)


def test_ink_check_finds_a_figure_wider_than_the_page(tmp_path: Path) -> None:
    _dark_png(tmp_path / "wide.png", 1600, 300)
    pdf = _typst_pdf(tmp_path, "wide", '#align(center, image("wide.png", width: 240mm))\n')
    reports = lu.check_pdf(pdf, ARTIFACTS / "negative-wide-figure")
    assert len(reports) == 1
    found = reports[0].ink_outside
    assert any("left margin" in f for f in found) and any("right margin" in f for f in found)
    assert reports[0].overlaps == []  # an image has no words


def test_ink_check_finds_ink_below_the_footer(tmp_path: Path) -> None:
    body = "#place(bottom + left, dy: 22mm, rect(width: 60mm, height: 4mm, fill: black))\n"
    reports = lu.check_pdf(_typst_pdf(tmp_path, "low", body), ARTIFACTS / "negative-low")
    assert [f.split(":")[0] for f in reports[0].ink_outside] == ["below the footer band"]


def test_overlap_check_finds_rows_piled_up_at_the_page_bottom(tmp_path: Path) -> None:
    """An unbreakable table taller than the page: Typst prints its last rows on one another
    at the bottom (what the report's tables did inside pandoc's unbreakable figures)."""
    rows = ", ".join(f"[row {i}], [value {i}]" for i in range(60))
    body = f"#block(breakable: false, table(columns: 2, {rows}))\n"
    reports = lu.check_pdf(_typst_pdf(tmp_path, "tall", body), ARTIFACTS / "negative-pile")
    assert len(reports) == 1 and reports[0].ink_outside == []  # all within the page...
    piled = {w.text for pair in reports[0].overlaps for w in pair}
    # (pdftotext keeps one copy of identical words printed at one place, so the overprinted
    # "row"/"value" labels are invisible to it; the row numbers differ and collide)
    assert {str(i) for i in range(45, 60)} <= piled, piled


def test_overlap_check_finds_overprinted_words(tmp_path: Path) -> None:
    body = (
        # a word wider than its column runs over the next cell (the "bore- alis" failure's
        # cousin when words are not allowed to break)
        "#table(columns: (14mm, 14mm, 30mm), [supercalifragilistic], [0.123], [fine])\n"
        # two rows printed at one place (a table overflowing into the next block)
        "#place(top + left, dy: 60mm)[overprinted row one]\n"
        "#place(top + left, dy: 61mm)[second row printed on it]\n"
    )
    reports = lu.check_pdf(_typst_pdf(tmp_path, "over", body), ARTIFACTS / "negative-overlap")
    texts = {(a.text, b.text) for a, b in reports[0].overlaps}
    flat = {t for pair in texts for t in pair}
    assert "supercalifragilistic" in flat and "0.123" in flat
    assert any("overprinted" in a or "overprinted" in b for a, b in texts)


def test_checks_pass_a_clean_page(tmp_path: Path) -> None:
    _dark_png(tmp_path / "fig.png", 900, 400)
    rows = ", ".join(f"[model-{i}], [0.{i:03d}], [a few words here]" for i in range(30))
    body = (
        "= A heading\n\nSome running text, justified, long enough to wrap onto a second line "
        "of the text block so that the line spacing is exercised as well.\n\n"
        '#image("fig.png", width: 100%)\n\n'
        f"#table(columns: 3, table.header([model], [value], [note]), {rows})\n"
    )
    reports = lu.check_pdf(_typst_pdf(tmp_path, "clean", body), ARTIFACTS / "clean")
    assert len(reports) >= 1
    assert lu.faults(reports) == ""


# ------------------------------------------------------------------ the renderer's layout

HARD = """\
---
title: Hard to lay out
toc: false
---

```{python}
#| include: false
import matplotlib.pyplot as plt
```

```{python}
#| output: asis
print("::: {.running-header}\\nHEADER-TEXT for every page\\n:::\\n")
print("::: {.running-footer}\\ndata SHA-256 0123abcd\\n:::\\n")
```

# Long table

```{python}
#| label: tbl-long
#| tbl-cap: "A table longer than a page."
#| output: asis
print("| item | value | comment |")
print("|---|---:|---|")
for i in range(140):
    print(f"| row-{i} | {i / 7:.3f} | some text for row {i} |")
```

# Wide table

```{python}
#| label: tbl-wide
#| tbl-cap: "Twelve columns of long words: a smaller font, no broken words."
#| output: asis
head = [f"heading_{k}" for k in range(12)]
print("| " + " | ".join(head) + " |")
print("|" + "---|" * 12)
for i in range(6):
    print("| " + " | ".join(f"value_{i}_{k}" for k in range(12)) + " |")
```

# Widest table

```{python}
#| label: tbl-widest
#| tbl-cap: "Too wide for a portrait page even in the smallest table font."
#| output: asis
print("| " + " | ".join(f"column_number_{k}" for k in range(17)) + " |")
print("|" + "---|" * 17)
for i in range(4):
    print("| " + " | ".join(f"cell_{i}_{k}_text" for k in range(17)) + " |")
```

# Tables of long names

```{python}
#| output: asis
# shaped like the self-versus-other tables: one long unbreakable name beside eight short
# columns with two-word headers (their one-line widths left the name less than its width)
print("| model | others | d' self | d' others | advantage | interval | target side | interval | acc. advantage |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for i in range(8):
    name = "mistral-small-3.1-24b-instruct" if i == 3 else f"model-{i}-instruct"
    print(f"| {name} | 18 | 1.{i}9 | 1.49 | -0.30 | [-0.70, +0.0{i}] | -0.02 | [-0.42, +0.3{i}] | +0.067 |")
print()
# a column of hyphenated names that must wrap between names, never inside one
names = ", ".join(f"gemini-2.{k}-flash" for k in range(12))
print("| variable | models | models without it | mean | HDI | decision | per task |")
print("|---|---:|---|---:|---:|---|---|")
for v in ("params", "active_params"):
    print(f"| {v} | 13 | {names} | -0.019 | [-0.209, 0.171] | no_credible_effect | refusal: no_credible_effect |")
```

# Figures

```{python}
#| label: fig-default
#| fig-cap: "Drawn at the default size."
fig, ax = plt.subplots(layout="constrained")
ax.plot([0, 1], [0, 1])
ax.set_title("DEFAULT-FIGURE-WIDTH")
plt.show()
```

```{python}
#| label: fig-wide
#| fig-cap: "Drawn far too wide: reduced to the text block."
fig, ax = plt.subplots(figsize=(16, 3))
ax.plot([0, 1], [1, 0])
plt.show()
```

```{python}
#| output: asis
print(f"Default figure width {plt.rcParams['figure.figsize'][0]:.2f} in.")
print()
print("| check | threshold |")
print("|---|---|")
print("| divergences | == 0 |")
```

```{=typst}
#text[RAW-TYPST-BLOCK]
```
"""


@pytest.fixture(scope="module")
def hard_pdf(tmp_path_factory: pytest.TempPathFactory) -> tuple[RenderResult, list[lu.PageReport]]:
    folder = tmp_path_factory.mktemp("hard")
    qmd = folder / "hard.qmd"
    qmd.write_text(HARD)
    result = render(qmd, out_file=folder / "hard.pdf", fmt="pdf")
    return result, lu.check_pdf(result.out_file, ARTIFACTS / "hard")


def _page_texts(pdf: Path) -> list[str]:
    text = subprocess.run(
        ["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True, check=True
    ).stdout
    return text.split("\f")[:-1] if text.endswith("\f") else text.split("\f")


@pytest.mark.e2e
def test_every_page_of_a_hard_report_passes_both_checks(hard_pdf) -> None:
    result, reports = hard_pdf
    assert len(reports) >= 4
    assert lu.faults(reports) == ""


@pytest.mark.e2e
def test_long_table_continues_with_its_header(hard_pdf) -> None:
    result, _ = hard_pdf
    pages = _page_texts(result.out_file)
    with_rows = [k for k, t in enumerate(pages) if re.search(r"\brow-\d+\b", t)]
    assert len(with_rows) >= 2, "140 rows should not fit on one page"
    for k in with_rows:
        assert re.search(r"item\s+value\s+comment", pages[k]), f"no header row on page {k + 1}"
    rows = [int(n) for t in pages for n in re.findall(r"\brow-(\d+)\b", t)]
    assert sorted(set(rows)) == list(range(140))  # every row printed, none lost


@pytest.mark.e2e
def test_wide_tables_get_a_smaller_font_or_a_landscape_page(hard_pdf) -> None:
    result, _ = hard_pdf
    words = lu.page_words(result.out_file)
    heights = {w.text: w.y1 - w.y0 for _, _, ws in words for w in ws}
    body = heights["Long"]  # a level-1 heading word is larger still; body text:
    body = max(h for t, h in heights.items() if t in ("Drawn", "Default", "figure"))
    assert heights["value_0_0"] < 0.9 * body  # set smaller than body text
    for k in range(12):
        assert f"value_5_{k}" in heights and f"heading_{k}" in heights  # no word broken
    # the widest table went to a landscape page, whole words still
    assert len(result.landscape_tables) == 1
    sizes = [(w, h) for w, h, _ in words]
    landscape = [k for k, (w, h) in enumerate(sizes) if w > h]
    assert landscape, sizes
    on_it = [w for w in words[landscape[0]][2]]
    texts = {w.text for w in on_it}
    assert {f"column_number_{k}" for k in range(17)} <= texts
    assert all(f"cell_3_{k}_text" in texts for k in range(17))
    # too wide even there: split into column groups that repeat the first column, in a
    # table font (not scaled down to an unreadable size)
    assert sum(w.text == "column_number_0" for w in on_it) >= 2
    cell_heights = {round(w.y1 - w.y0, 1) for w in on_it if w.text.startswith("cell_")}
    assert len(cell_heights) == 1 and min(cell_heights) >= 0.75 * heights["value_0_0"]


@pytest.mark.e2e
def test_tables_of_long_names_stay_in_the_text_block(hard_pdf) -> None:
    """The table that ran 5 pt past the text block (its columns' one-line widths left its
    unbreakable name less than its width) fits, every row on one line; hyphenated names in a
    wrapping column are never broken inside."""
    result, reports = hard_pdf
    text_right = (PAGE.margin_x_mm + PAGE.text_width_in() * 25.4) / 25.4 * 72
    page = next(k for k, (_, _, ws) in enumerate(lu.page_words(result.out_file))
                if any(w.text == "mistral-small-3.1-24b-instruct" for w in ws))
    words = lu.page_words(result.out_file)[page][2]
    assert lu.faults([reports[page]]) == ""
    assert max(w.x1 for w in words) <= text_right + 0.5
    rows = [w for w in words if re.fullmatch(r"model-\d-instruct|mistral-small-3.1-24b-instruct", w.text)]
    assert len(rows) == 8
    for row in rows:  # the row's last cell is on the row's line: nothing wrapped
        last = [w for w in words if w.text == "+0.067" and abs(w.y0 - row.y0) < 1]
        assert len(last) == 1, row.text
    texts = [w.text.rstrip(",") for _, _, ws in lu.page_words(result.out_file) for w in ws]
    for k in range(12):
        assert texts.count(f"gemini-2.{k}-flash") == 2, k  # whole, in both rows


@pytest.mark.e2e
def test_figures_are_drawn_at_the_text_width_and_never_wider(hard_pdf) -> None:
    result, _ = hard_pdf
    by_label = {f.label: f for f in result.figures}
    default, wide = by_label["fig-default"], by_label["fig-wide"]
    assert default.scale == pytest.approx(1.0)  # printed at the size drawn: fonts as set
    assert PAGE.fig_width_in - 0.3 <= default.width_in <= PAGE.text_width_in()
    assert wide.width_in > PAGE.text_width_in() and wide.scale < 1
    assert wide.shown_width_in == pytest.approx(PAGE.text_width_in())
    text = "\n".join(_page_texts(result.out_file))
    assert f"Default figure width {PAGE.fig_width_in:.2f} in." in text


@pytest.mark.e2e
def test_running_header_footer_and_page_numbers(hard_pdf) -> None:
    result, _ = hard_pdf
    pages = _page_texts(result.out_file)
    for k, text in enumerate(pages, 1):
        assert "HEADER-TEXT for every page" in text, k
        assert "data SHA-256 0123abcd" in text, k
        assert f"{k} of {len(pages)}" in text, k


@pytest.mark.e2e
def test_markup_characters_in_cells_and_raw_blocks(hard_pdf) -> None:
    result, _ = hard_pdf
    text = "\n".join(_page_texts(result.out_file))
    assert re.search(r"divergences\s+== 0", text)  # not a Typst heading "0"
    assert "RAW-TYPST-BLOCK" in text and "#text" not in text


@pytest.mark.e2e
def test_page_images_are_kept_for_a_look(hard_pdf) -> None:
    _, reports = hard_pdf
    assert all(r.image is not None and r.image.is_file() for r in reports)
    assert reports[0].image.parent == ARTIFACTS / "hard"
    shutil.copyfile(reports[0].image, ARTIFACTS / "hard-first-page.png")


# ------------------------------------------------------------------ text inside the figures

# Run first in the report's kernel: every figure matplotlib draws into a PNG (the inline backend
# calls the canvas's print_figure) has its visible texts read after the draw, when tick labels
# hold their formatted strings, and those that are mathtext markup are written to PROBE_FILE.
# With text.parse_math off (names are data) such a label prints literally, e.g. a log axis's
# default "$\mathdefault{10^{1}}$", which pdftotext cannot see (figures are images).
FIGURE_PROBE = """
```{python}
#| include: false
import json as _sm_json
import re as _sm_re
import matplotlib.backend_bases as _sm_bb
import matplotlib.text as _sm_text

_sm_seen = []
_sm_print = _sm_bb.FigureCanvasBase.print_figure
_sm_raw = _sm_re.compile(r"\\\\mathdefault|\\\\times|^\\$.*\\$$", _sm_re.S)

def _sm_probe(self, *args, **kwargs):
    out = _sm_print(self, *args, **kwargs)
    texts = [t.get_text() for t in self.figure.findobj(_sm_text.Text)
             if t.get_visible() and t.get_text().strip()]
    _sm_seen.append({"titles": [ax.get_title() for ax in self.figure.axes],
                     "texts": len(texts), "raw": [t for t in texts if _sm_raw.search(t)]})
    with open(PROBE_FILE, "w") as fh:
        _sm_json.dump(_sm_seen, fh)
    return out

_sm_bb.FigureCanvasBase.print_figure = _sm_probe
```
"""


def _with_probe(qmd_text: str, probe_file: Path) -> str:
    """``qmd_text`` with :data:`FIGURE_PROBE` as its first cell (after the front matter)."""
    probe = FIGURE_PROBE.replace("PROBE_FILE", repr(str(probe_file)))
    m = re.match(r"---\n.*?\n---\n", qmd_text, re.S)
    assert m, "the report has no front matter"
    return qmd_text[: m.end()] + probe + qmd_text[m.end() :]


def figure_texts(qmd: Path, folder: Path, params: dict | None = None) -> list[dict]:
    """Render ``qmd`` (a copy beside its own folder's files, probe added) to HTML; per figure
    drawn: its axes titles, how many texts it shows and which of them are raw mathtext."""
    src = folder / "src"
    shutil.copytree(qmd.parent, src, ignore=shutil.ignore_patterns("*.html", "*.pdf"))
    probe_file = folder / "figure-texts.json"
    (src / qmd.name).write_text(_with_probe(qmd.read_text(), probe_file))
    render(src / qmd.name, out_file=folder / "probed.html", params=params)
    return json.loads(probe_file.read_text()) if probe_file.is_file() else []


RAW_LABELS_QMD = """\
---
title: Raw tick labels
---

```{python}
import matplotlib.pyplot as plt
plt.rcParams["text.parse_math"] = False
fig, ax = plt.subplots()
ax.plot([1, 10, 100], [1, 2, 3])
ax.set_xscale("log")
ax.set_title("LOG-AXIS")
plt.show()
```
"""


@pytest.mark.e2e  # renders a report (a report kernel)
def test_figure_probe_sees_raw_mathtext_tick_labels(tmp_path: Path) -> None:
    """Negative control: a log axis with mathtext off prints $\\mathdefault{10^{k}}$ labels."""
    qmd = tmp_path / "in" / "raw.qmd"
    qmd.parent.mkdir()
    qmd.write_text(RAW_LABELS_QMD)
    seen = figure_texts(qmd, tmp_path / "out")
    assert [s["titles"] for s in seen] == [["LOG-AXIS"]]
    assert any("mathdefault" in t for t in seen[0]["raw"]), seen


@pytest.mark.e2e
def test_no_report_figure_prints_raw_mathtext(quick_build: Path, tmp_path: Path) -> None:
    """Every figure of the real report (default data): no tick label or other text is raw
    mathtext markup (the report turns mathtext off so that names stay data)."""
    seen = figure_texts(REPORT_QMD, tmp_path, {"results_dir": str(quick_build)})
    assert len(seen) >= 8, "the probe saw too few figures: is it still installed first?"
    assert all(s["texts"] > 5 for s in seen), seen  # tick labels were read after the draw
    raw = [(s["titles"], s["raw"][:3]) for s in seen if s["raw"]]
    assert raw == [], raw


# ------------------------------------------------------------------ a SEB-shaped report

# The Self-Execution Benchmark (two binary tasks, long model names, closed models, the
# self-versus-other tables) is run once per session from the shared data (layout_util), so
# these are slow and need ../shared/data; the table shape that failed there is also in HARD.


@pytest.fixture(scope="module")
def seb_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not lu.SEB_DATA.is_dir() and not os.environ.get("SELFMODEL_SEB_RESULTS"):
        pytest.skip(f"shared Self-Execution Benchmark data not found at {lu.SEB_DATA}")
    dst = tmp_path_factory.mktemp("seb") / "build"
    shutil.copytree(lu.seb_results(), dst)
    return dst


@pytest.mark.slow
@pytest.mark.shared_data
@pytest.mark.e2e
def test_seb_report_pdf_pages_hold_their_content(seb_build: Path) -> None:
    """Every page of the SEB report's PDF passes both checks. Page images:
    tests/artifacts/layout/seb-pdf/ (look at them)."""
    pdf = render_report(seb_build, fmt="pdf")
    reports = lu.check_pdf(pdf, ARTIFACTS / "seb-pdf")
    assert len(reports) >= 12
    assert lu.faults(reports) == ""
    text = " ".join(" ".join(_page_texts(pdf)).split())
    assert "Self versus other" in text and "mistral-small-3.1-24b-instruct" in text


@pytest.mark.slow
@pytest.mark.shared_data
@pytest.mark.e2e
def test_no_seb_report_figure_prints_raw_mathtext(seb_build: Path, tmp_path: Path) -> None:
    seen = figure_texts(REPORT_QMD, tmp_path, {"results_dir": str(seb_build)})
    assert len(seen) >= 6, "the probe saw too few figures: is it still installed first?"
    raw = [(s["titles"], s["raw"][:3]) for s in seen if s["raw"]]
    assert raw == [], raw
