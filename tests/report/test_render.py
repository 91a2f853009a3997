"""Tests for selfmodel.report.render: the built-in Quarto-subset engine, HTML and PDF output."""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from selfmodel.report.render import RenderError, RenderResult, escape_md, render

FIXTURE = Path(__file__).parents[1] / "fixtures" / "render"
SCRIPT = "<script>alert(1)</script>"


def _copy_fixture(dest: Path) -> Path:
    shutil.copytree(FIXTURE, dest)
    return dest / "mini.qmd"


@pytest.fixture(scope="module")
def mini_html(tmp_path_factory: pytest.TempPathFactory) -> tuple[RenderResult, str]:
    qmd = _copy_fixture(tmp_path_factory.mktemp("render") / "mini")
    messages: list[str] = []
    result = render(qmd, out_file=qmd.parent / "out" / "mini.html", progress=messages.append)
    assert messages and any("fig-accuracy" in m for m in messages)
    return result, result.out_file.read_text(encoding="utf-8")


def _visible(html: str) -> str:
    """Body of the page without embedded data URIs and MathML, for text assertions."""
    body = html[html.find("<body") :]
    body = re.sub(r"data:[^\"')]+", "data:", body)
    return re.sub(r"<math.*?</math>", "", body, flags=re.S)


# ------------------------------------------------------------------ escape_md (fast, no kernel)


NASTY = [
    SCRIPT,
    "gpt_4 | *big* [link](http://x) `code` #1",
    "=SUM(A1:A2) + @fig-x $x$ ~sub~ ^sup^",
    "back\\slash & ampersand < > \"quoted\" 'single' -- ...",
    "line\nbreak\r\nand\ttab",
    "naïve — ünïcode ✓ 模型",
    "   leading spaces and trailing   ",
    "1. not a list",
    "- not a bullet",
    "> not a quote",
    "<!-- not a comment -->",
    "{.class} ::: div",
]


@pytest.mark.parametrize("s", NASTY)
def test_escape_md_renders_literally_in_text_and_table(s: str) -> None:
    import html as htmlmod

    import pypandoc

    expected = " ".join(s.split())
    para = pypandoc.convert_text(escape_md(s), "html", format="markdown")
    assert "<script" not in para and "<a " not in para and "<em>" not in para
    text = htmlmod.unescape(re.sub(r"<[^>]+>", "", para))
    assert " ".join(text.split()) == expected
    table = f"| a | b |\n|---|---|\n| {escape_md(s)} | 1 |\n"
    out = pypandoc.convert_text(table, "html", format="markdown")
    cell = re.search(r"<td>(.*?)</td>", out, flags=re.S)
    assert cell is not None, out
    assert " ".join(htmlmod.unescape(cell.group(1)).split()) == expected


def test_escape_md_accepts_non_strings() -> None:
    assert escape_md(0.5) == "0\\.5"
    assert escape_md(None) == "None"


# ------------------------------------------------------------------ HTML


@pytest.mark.e2e
def test_html_is_self_contained(mini_html: tuple[RenderResult, str]) -> None:
    result, html = mini_html
    assert result.engine == "builtin" and result.n_figures == 1 and result.seconds > 0
    refs = re.findall(r"\b(?:src|href)\s*=\s*[\"']?([^\"'\s>]+)", html, flags=re.I)
    assert refs, "expected at least the figure's src"
    remote = [r for r in refs if re.match(r"(?:https?:)?//", r, flags=re.I)]
    assert remote == []
    imgs = re.findall(r"<img\b[^>]*\bsrc=\"([^\"]*)\"", html)
    assert len(imgs) == 1 and all(s.startswith("data:image/png;base64,") for s in imgs)
    assert not re.search(r"<script\b[^>]*\bsrc=", html, flags=re.I)
    assert not re.search(r"<link\b[^>]*\bhref=", html, flags=re.I)
    assert "mathjax" not in html.lower() and "@import" not in html
    assert "<math" in html  # the LaTeX equation became MathML


@pytest.mark.e2e
def test_html_content(mini_html: tuple[RenderResult, str]) -> None:
    _, html = mini_html
    body = _visible(html)
    assert '<h1 class="title">Mini report</h1>' in html
    assert "Fixture for selfmodel.report.render" in body  # subtitle
    assert '<nav id="TOC"' in html
    assert re.search(r'<figure id="fig-accuracy">', body)
    assert "Figure 1: Accuracy by model (fixture)." in body
    assert 'alt="Accuracy by model (fixture)."' in body
    assert '<a href="#fig-accuracy">Figure 1</a>' in body  # @fig-accuracy cross-reference
    assert "Overall self-prediction accuracy was 0.734" in body  # asis output
    assert "Inline code works too: 3 models." in body  # `{python} expr`
    assert 'id="tbl-models"' in body and "Table 1: Accuracy per model." in body
    assert "<td>beta-70b</td>" in body
    # style.css was embedded
    assert "--accent" in html


@pytest.mark.e2e
def test_html_escapes_data_strings(mini_html: tuple[RenderResult, str]) -> None:
    _, html = mini_html
    assert SCRIPT not in html
    assert html.count("&lt;script&gt;alert(1)&lt;/script&gt;") == 2  # table cell + inline
    assert not re.search(r"<script\b", _visible(html), flags=re.I)


@pytest.mark.e2e
def test_include_false_and_echo(mini_html: tuple[RenderResult, str]) -> None:
    _, html = mini_html
    body = _visible(html)
    assert "HIDDEN-SETUP-OUTPUT" not in body  # include: false runs but shows nothing
    assert "json.loads" not in body and "plt.subplots" not in body  # echo: false
    assert "data_file" not in body
    assert "#|" not in body
    assert "shown_code_marker" in body  # the one cell with echo: true


@pytest.mark.e2e
def test_number_follows_data(tmp_path: Path) -> None:
    """Perturbation: change the JSON the report reads and the sentence changes with it."""
    qmd = _copy_fixture(tmp_path / "mini")
    data = json.loads((qmd.parent / "data.json").read_text())
    data["accuracy"] = 0.512
    data["models"].append({"model": "gamma", "accuracy": 0.9})
    (qmd.parent / "data.json").write_text(json.dumps(data))
    html = render(qmd, out_file=tmp_path / "a.html").out_file.read_text()
    assert "accuracy was 0.512" in html and "0.734" not in html
    assert "Inline code works too: 4 models." in html


@pytest.mark.e2e
def test_params_are_injected_after_parameters_cell(tmp_path: Path) -> None:
    qmd = _copy_fixture(tmp_path / "mini")
    other = qmd.parent / "other.json"
    data = json.loads((qmd.parent / "data.json").read_text())
    data["accuracy"] = 0.25
    other.write_text(json.dumps(data))
    html = render(qmd, out_file=tmp_path / "p.html", params={"data_file": "other.json"})
    assert "accuracy was 0.250" in html.out_file.read_text()
    with pytest.raises(ValueError, match="did you mean 'data_file'"):
        render(qmd, out_file=tmp_path / "q.html", params={"data_fle": "other.json"})


FAILING = """\
---
title: Failing
---

```{python}
x = 1
```

```{python}
#| label: fig-broken
#| fig-cap: never drawn
results = {}
results["scale_effect"]
```
"""


@pytest.mark.e2e
def test_failing_cell_names_the_cell(tmp_path: Path) -> None:
    qmd = tmp_path / "failing.qmd"
    qmd.write_text(FAILING)
    out = tmp_path / "failing.html"
    with pytest.raises(RenderError, match=r"fig-broken.*KeyError: 'scale_effect'") as info:
        render(qmd, out_file=out)
    assert info.value.cell is not None and "code cell #2" in info.value.cell
    assert "line 9" in info.value.cell
    assert info.value.detail == "KeyError: 'scale_effect'"
    assert not out.exists()
    # without a label the cell is named by its position
    qmd.write_text(FAILING.replace("#| label: fig-broken\n", ""))
    with pytest.raises(RenderError, match=r"code cell #2, line 9\) failed|code cell #2"):
        render(qmd, out_file=out)


@pytest.mark.e2e
def test_remote_resources_are_refused(tmp_path: Path) -> None:
    qmd = tmp_path / "remote.qmd"
    qmd.write_text(
        "---\ntitle: R\n---\n\n```{python}\nfrom IPython.display import HTML, display\n"
        "display(HTML('<img src=\"https://example.com/x.png\">'))\n```\n"
    )
    with pytest.raises(RenderError, match="remote resource"):
        render(qmd, out_file=tmp_path / "r.html")


# ------------------------------------------------------------------ PDF


@pytest.mark.e2e
def test_pdf(tmp_path: Path) -> None:
    qmd = _copy_fixture(tmp_path / "mini")
    result = render(qmd, out_file=tmp_path / "mini.pdf", fmt="pdf")
    pdf = result.out_file.read_bytes()
    assert pdf.startswith(b"%PDF") and result.n_figures == 1
    pdftotext = shutil.which("pdftotext")
    if pdftotext is None:
        pytest.skip("pdftotext (apt package poppler-utils) is not installed")
    text = subprocess.run(
        [pdftotext, "-layout", str(result.out_file), "-"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for heading in ("Mini report", "Summary", "Model", "Figures", "Tables"):
        assert heading in text
    assert "Overall self-prediction accuracy was 0.734" in text
    assert "Figure 1: Accuracy by model (fixture)." in text
    assert "Table 1: Accuracy per model." in text
    assert SCRIPT in text  # shown literally, not interpreted
    assert "HIDDEN-SETUP-OUTPUT" not in text and "json.loads" not in text


# ------------------------------------------------------------------ Quarto engine (faked)


def test_quarto_engine_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``quarto`` on PATH, auto uses it with -P params, --output and embedded resources."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "argv.json"
    fake = bindir / "quarto"
    fake.write_text(
        f"#!{sys.executable}\n"
        "import json, pathlib, sys\n"
        "a = sys.argv[1:]\n"
        f"pathlib.Path({str(log)!r}).write_text(json.dumps(a))\n"
        "out = pathlib.Path(a[a.index('--output-dir') + 1]) / a[a.index('--output') + 1]\n"
        "out.write_text('<html>quarto</html>')\n"
    )
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    qmd = _copy_fixture(tmp_path / "mini")
    result = render(qmd, out_file=tmp_path / "o" / "q.html", params={"data_file": "x y.json"})
    assert result.engine == "quarto"
    assert result.out_file.read_text() == "<html>quarto</html>"
    argv = json.loads(log.read_text())
    assert argv[:4] == ["render", str(qmd), "--to", "html"]
    assert ["-P", 'data_file:"x y.json"'] == argv[argv.index("-P") : argv.index("-P") + 2]
    assert "embed-resources:true" in argv
    with pytest.raises(FileNotFoundError):
        monkeypatch.setenv("PATH", "")
        render(qmd, out_file=tmp_path / "x.html", engine="quarto")


DATAFRAME = """\
---
title: Frames
---

# Frames

```{python}
#| label: tbl-df
#| tbl-cap: "A pandas table"
import pandas as pd
pd.DataFrame({"model": ["<b>x</b>", "y"], "acc": [0.5, 0.25]})
```

```{python}
import warnings
warnings.warn("visible-warning")
```

```{python}
#| warning: false
warnings.warn("hidden-warning")
```

```{python}
#| output: false
print("NOT-SHOWN")
```

```{python}
#| eval: false
#| echo: true
raise SystemExit("never run")
```

See @tbl-df.
"""


@pytest.mark.e2e
@pytest.mark.parametrize("fmt", ["html", "pdf"])
def test_dataframe_table_and_output_options(tmp_path: Path, fmt: str) -> None:
    qmd = tmp_path / "frames.qmd"
    qmd.write_text(DATAFRAME)
    out = render(qmd, out_file=tmp_path / f"frames.{fmt}", fmt=fmt).out_file  # type: ignore[arg-type]
    if fmt == "html":
        text = out.read_text()
        assert "<b>x</b>" not in text and "&lt;b&gt;x&lt;/b&gt;" in text
        assert '<a href="#tbl-df">Table 1</a>' in text
    else:
        if shutil.which("pdftotext") is None:
            pytest.skip("pdftotext (apt package poppler-utils) is not installed")
        text = subprocess.run(
            ["pdftotext", "-layout", str(out), "-"], capture_output=True, text=True, check=True
        ).stdout
        assert "<b>x</b>" in text and "See Table 1." in text
    assert "Table 1: A pandas table" in text
    assert "visible-warning" in text and "hidden-warning" not in text
    assert "NOT-SHOWN" not in text
    plain = re.sub(r"<[^>]+>", "", text).replace("&quot;", '"')
    assert 'SystemExit("never run")' in plain  # eval: false, echo: true shows the code


# ------------------------------------------------------------------ stream outputs (no kernel)

PIECES = """\
---
title: Pieces
---

```{python}
#| output: asis
print_the_table()
```

```{python}
print_plain()
```
"""


def _fake_executed(doc, chunks_asis: list[str], chunks_plain: list[str]):
    """The notebook the kernel would give back, with stdout flushed in the pieces given."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    code = [i for i, c in enumerate(doc.cells) if c.kind == "code"]
    for i, chunks in zip(code, (chunks_asis, chunks_plain), strict=True):
        cell = nbformat.v4.new_code_cell("", metadata={"selfmodel": {"role": "cell", "cell": i}})
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=t) for t in chunks]
        nb.cells.append(cell)
    return nb


TABLE = "| model | accuracy |\n|---|---:|\n| alpha-7b | 0.61 |\n| beta-70b | 0.68 |\n"


@pytest.mark.parametrize(
    "cuts",
    [[], [len("| model | accuracy |\n")], [5, 30, 31, 47], list(range(1, len(TABLE)))],
    ids=["one-piece", "after-header", "mid-line", "every-character"],
)
def test_stream_pieces_are_joined_before_they_are_read(tmp_path: Path, cuts: list[int]) -> None:
    """However the kernel cuts what one cell printed, the Markdown is the same (issue 14)."""
    from selfmodel.report.render_markdown import assemble
    from selfmodel.report.render_qmd import QmdDoc

    qmd = tmp_path / "pieces.qmd"
    qmd.write_text(PIECES)
    doc = QmdDoc.read(qmd, "html")
    bounds = [0, *cuts, len(TABLE)]
    pieces = [TABLE[a:b] for a, b in itertools.pairwise(bounds)]
    plain = ["first line\n", "second", " line\n"]
    markdown, _ = assemble(doc, _fake_executed(doc, pieces, plain), "html", tmp_path)
    assert TABLE in markdown  # contiguous: no blank line inside the pipe table
    assert markdown.count("```{.cell-output}") == 1  # one output block, not three
    assert "first line\nsecond line" in markdown
    html = pypandoc_html(markdown)
    assert html.count("<tr") == 3 and "<td>beta-70b</td>" in html


def pypandoc_html(markdown: str) -> str:
    import pypandoc

    return pypandoc.convert_text(markdown, "html", format="markdown")


def test_streams_of_different_names_or_around_a_figure_stay_apart() -> None:
    from selfmodel.report.render_markdown import coalesce_streams

    outs = [
        {"output_type": "stream", "name": "stdout", "text": "a"},
        {"output_type": "stream", "name": "stderr", "text": "warn"},
        {"output_type": "stream", "name": "stdout", "text": "b"},
        {"output_type": "display_data", "data": {"image/png": ""}},
        {"output_type": "stream", "name": "stdout", "text": "c"},
        {"output_type": "stream", "name": "stdout", "text": "d"},
    ]
    got = [(o["output_type"], o.get("name"), o.get("text")) for o in coalesce_streams(outs)]
    assert got == [
        ("stream", "stdout", "a"),
        ("stream", "stderr", "warn"),
        ("stream", "stdout", "b"),
        ("display_data", None, None),
        ("stream", "stdout", "cd"),
    ]
    assert outs[4]["text"] == "c"  # the notebook's own outputs are not modified
