"""Open rendered reports in headless Chromium, offline: no errors, no requests, images decode."""

from __future__ import annotations

import os
import shutil
import struct
from pathlib import Path

import pytest

from selfmodel.report.document import render_report
from selfmodel.report.render import render

try:  # tests/ is on sys.path (pytest's default rootdir-less import mode)
    import layout_util as lu
    from browser_util import find_chromium, layout_problems, open_in_chromium
except ImportError:  # tests/ became a package
    from tests import layout_util as lu
    from tests.browser_util import find_chromium, layout_problems, open_in_chromium

FIXTURE = Path(__file__).parents[1] / "fixtures" / "render"
ARTIFACTS = Path(__file__).parents[1] / "artifacts"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        find_chromium() is None,
        reason="headless Chromium not installed (apt-get install -y chromium)",
    ),
]


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", head[16:24])
    return width, height


@pytest.mark.e2e  # renders the mini report (a report kernel)
def test_mini_report_in_chromium(tmp_path: Path) -> None:
    shutil.copytree(FIXTURE, tmp_path / "mini")
    html = render(tmp_path / "mini" / "mini.qmd", out_file=tmp_path / "mini.html").out_file
    shot = ARTIFACTS / "mini_report.png"
    report = open_in_chromium(html, shot)
    assert report["console_errors"] == []
    assert report["page_errors"] == []
    assert report["failed_requests"] == []
    assert report["requests"] == []  # self-contained: nothing fetched at all
    assert len(report["images"]) == 1 and report["all_images_decoded"]
    assert report["images"][0]["natural_width"] > 100
    assert report["title"] == "Mini report"
    assert report["body_text_length"] > 200
    assert _png_size(shot) == (1280, 2000)


def test_probe_catches_a_broken_page(tmp_path: Path) -> None:
    """Negative control: the helper must see remote loads, broken images and script errors."""
    page = tmp_path / "bad.html"
    page.write_text(
        "<!doctype html><html><head><title>bad</title>"
        '<link rel="stylesheet" href="https://fonts.example.com/x.css"></head><body>'
        '<img src="https://example.com/a.png"><img src="data:image/png;base64,AAAA">'
        '<script>console.error("boom"); undefinedFn();</script></body></html>'
    )
    report = open_in_chromium(page)
    assert report["console_errors"] == ["boom"]
    assert any("undefinedFn" in e for e in report["page_errors"])
    assert any("example.com/a.png" in r for r in report["failed_requests"])
    assert any("fonts.example.com" in r for r in report["failed_requests"])
    assert not report["all_images_decoded"]
    assert report["screenshot"] is None


def test_layout_probe_catches_a_wide_page_and_a_late_verdict(tmp_path: Path) -> None:
    """Negative control for the layout checks: each fault is seen, a clean page passes."""
    bad = tmp_path / "bad.html"
    bad.write_text(
        "<!doctype html><html><head><title>t</title></head><body>"
        '<div style="height: 1500px">a long preamble</div>'
        '<div id="verdict">the verdict</div>'
        '<div style="width: 2000px">a banner wider than any screen</div>'
        '<div style="overflow-x: auto; max-width: 300px"><table><tr>'
        + "<td>wide_cell_content_here</td>" * 12
        + "</tr></table></div></body></html>"
    )
    report = open_in_chromium(bad, window=(800, 1200))
    problems = layout_problems(report, first_screen=("verdict", "missing"), sideways_scroll=False)
    text = "\n".join(problems)
    assert "the page is" in text and "div reaches" in text
    assert "#verdict spans" in text and "no element with id 'missing'" in text
    assert "scrolls sideways" in text
    assert not any("td" in p for p in problems)  # clipped by its scroll box: not too wide
    good = tmp_path / "good.html"
    good.write_text('<!doctype html><html><body><div id="verdict">first</div></body></html>')
    assert layout_problems(open_in_chromium(good, window=(800, 1200)),
                           first_screen=("verdict",), sideways_scroll=False) == []


@pytest.mark.e2e  # renders the mini report (a report kernel)
@pytest.mark.parametrize("window", [(1280, 800), (800, 1200)], ids=["1280x800", "800x1200"])
def test_mini_report_fits_the_screen(tmp_path: Path, window: tuple[int, int]) -> None:
    shutil.copytree(FIXTURE, tmp_path / "mini")
    html = render(tmp_path / "mini" / "mini.qmd", out_file=tmp_path / "mini.html").out_file
    shot = ARTIFACTS / f"mini_report_{window[0]}x{window[1]}.png"
    report = open_in_chromium(html, shot, window=window)
    assert _png_size(shot) == window
    assert layout_problems(report, first_screen=("title-block-header",), sideways_scroll=False) == []
    toc, main = report["layout"]["ids"]["TOC"], report["layout"]["ids"]["main"]
    if window[0] >= 1100:  # the contents are a side column beside the report
        assert toc["right"] <= main["left"] and toc["top"] < 100
    else:  # a compact list above it
        assert toc["bottom"] <= main["top"] and toc["bottom"] - toc["top"] < 200


@pytest.mark.slow
@pytest.mark.shared_data
@pytest.mark.e2e
@pytest.mark.parametrize("window", [(1280, 800), (800, 1200)], ids=["1280x800", "800x1200"])
def test_seb_report_leads_with_the_verdict(tmp_path: Path, window: tuple[int, int]) -> None:
    """The SEB-shaped report (see tests/layout_util.py): the question and the verdict block in
    the first screen, nothing wider than the screen, offline and without errors. The
    default-data report has the same test in tests/end_to_end/test_report.py. Screenshots:
    tests/artifacts/seb_report_WxH.png (look at them)."""
    if not lu.SEB_DATA.is_dir() and not os.environ.get("SELFMODEL_SEB_RESULTS"):
        pytest.skip(f"shared Self-Execution Benchmark data not found at {lu.SEB_DATA}")
    build = tmp_path / "build"
    shutil.copytree(lu.seb_results(), build)
    html = render_report(build)
    shot = ARTIFACTS / f"seb_report_{window[0]}x{window[1]}.png"
    report = open_in_chromium(html, shot, window=window)
    assert report["console_errors"] == [] and report["page_errors"] == []
    assert report["requests"] == [] and report["failed_requests"] == []
    assert _png_size(shot) == window
    wide = window[0] >= 1100
    problems = layout_problems(report, first_screen=("title-block-header", "sec-verdict", "verdict"),
                               sideways_scroll=not wide)
    assert problems == []
    assert "Question:" in html.read_text()
