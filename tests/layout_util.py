"""Look at a PDF the way a reader does: page images and word boxes, checked for layout faults.

Two checks, each on every page:

* **Ink outside the text block** (clipped or overflowing figures and tables): the page is
  rasterised with ``pdftoppm`` and every pixel darker than :data:`INK_LEVEL` must lie inside
  the text block, or inside the header band above it or the footer band below it (within the
  text block's left and right edges), with a tolerance of :data:`TOLERANCE_MM`. The geometry is
  :data:`selfmodel.report.render.PAGE`; a landscape page uses the same margins turned with the page.
* **Overlapping words** (overprinted rows, colliding column headers): ``pdftotext -bbox-layout``
  gives each word's box; no two boxes on a page may overlap by more than :data:`OVERLAP_PT`
  horizontally and more than :data:`OVERLAP_SHARE` of the lower box's height vertically.

Run as a script to check any PDF and keep the page images:
``python tests/layout_util.py report.pdf --out tests/artifacts/pages``.
"""

from __future__ import annotations

import argparse
import functools
import html
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from selfmodel.cli import main as selfmodel_cli  # noqa: E402
from selfmodel.report.render import PAGE, PageGeometry  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
# the shared copy of the Self-Execution Benchmark (read in place; see tests/records/test_import_seb.py)
SEB_DATA = ROOT.parent / "shared" / "data" / "self-execution-benchmark"
QUICK = ("--draws", "300", "--tune", "300", "--chains", "2")  # as tests/conftest.py's quick build

INK_LEVEL = 200  # 0-255 grey: table zebra stripes (247) and light rules (190+) are lighter
DPI = 72
TOLERANCE_MM = 0.8
OVERLAP_PT = 0.6
OVERLAP_SHARE = 0.25

_PAGE = re.compile(r'<page width="([\d.]+)" height="([\d.]+)">(.*?)</page>', re.S)
_WORD = re.compile(
    r'<word xMin="([-\d.]+)" yMin="([-\d.]+)" xMax="([-\d.]+)" yMax="([-\d.]+)">(.*?)</word>'
)


@dataclass(frozen=True)
class Word:
    """A word's box on its page, in PDF points from the top left."""

    x0: float
    y0: float
    x1: float
    y1: float
    text: str


@dataclass
class PageReport:
    """What the checks found on one page (1-based ``number``)."""

    number: int
    width_pt: float
    height_pt: float
    image: Path | None = None
    ink_outside: list[str] = field(default_factory=list)
    overlaps: list[tuple[Word, Word]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No ink outside the allowed regions and no overlapping words."""
        return not self.ink_outside and not self.overlaps

    def describe(self) -> str:
        """One line per fault, for an assertion message."""
        lines = [f"page {self.number}: ink {r}" for r in self.ink_outside]
        lines += [
            f"page {self.number}: {a.text!r} ({a.x0:.1f},{a.y0:.1f})-({a.x1:.1f},{a.y1:.1f}) "
            f"overlaps {b.text!r} ({b.x0:.1f},{b.y0:.1f})-({b.x1:.1f},{b.y1:.1f})"
            for a, b in self.overlaps[:8]
        ]
        if len(self.overlaps) > 8:
            lines.append(f"page {self.number}: ... {len(self.overlaps) - 8} more overlaps")
        return "\n".join(lines)


def tools_missing() -> list[str]:
    """Poppler tools the checks need that are not on PATH."""
    return [t for t in ("pdftoppm", "pdftotext") if shutil.which(t) is None]


def page_words(pdf: Path) -> list[tuple[float, float, list[Word]]]:
    """Per page: width, height (points) and the words with their boxes."""
    out = subprocess.run(
        ["pdftotext", "-bbox-layout", str(pdf), "-"], capture_output=True, text=True, check=True
    ).stdout
    pages = []
    for m in _PAGE.finditer(out):
        words = [
            Word(float(a), float(b), float(c), float(d), html.unescape(t))
            for a, b, c, d, t in _WORD.findall(m.group(3))
        ]
        pages.append((float(m.group(1)), float(m.group(2)), words))
    return pages


def overlapping(words: list[Word]) -> list[tuple[Word, Word]]:
    """Pairs of words whose boxes overlap (see the module docstring for the thresholds)."""
    found = []
    ws = sorted(words, key=lambda w: w.x0)
    for i, a in enumerate(ws):
        for b in ws[i + 1 :]:
            if b.x0 >= a.x1 - OVERLAP_PT:
                break
            dx = min(a.x1, b.x1) - max(a.x0, b.x0)
            dy = min(a.y1, b.y1) - max(a.y0, b.y0)
            height = min(a.y1 - a.y0, b.y1 - b.y0)
            if dx > OVERLAP_PT and height > 0 and dy > OVERLAP_SHARE * height:
                found.append((a, b))
    return found


def allowed_box(shape: tuple[int, int], width_pt: float, height_pt: float,
                geometry: PageGeometry = PAGE) -> tuple[int, int, int, int, float]:
    """Pixel bounds (x0, x1, y0, y1) where ink may be, and pixels per millimetre.

    Horizontally the text block; vertically from the top of the header band to the bottom of
    the footer band; each widened by :data:`TOLERANCE_MM`.
    """
    h_px, w_px = shape
    mm = w_px / (width_pt / 72 * 25.4)
    tol = TOLERANCE_MM
    page_w_mm, page_h_mm = width_pt / 72 * 25.4, height_pt / 72 * 25.4
    x0 = max(0, round((geometry.margin_x_mm - tol) * mm))
    x1 = min(w_px, round((page_w_mm - geometry.margin_x_mm + tol) * mm))
    y0 = max(0, round((geometry.margin_top_mm - geometry.band_mm - tol) * mm))
    y1 = min(h_px, round((page_h_mm - geometry.margin_bottom_mm + geometry.band_mm + tol) * mm))
    return x0, x1, y0, y1, mm


def ink_outside(image: Path, width_pt: float, height_pt: float) -> list[str]:
    """Descriptions of the ink found outside :func:`allowed_box`, by margin."""
    grey = np.asarray(Image.open(image).convert("L"))
    x0, x1, y0, y1, mm = allowed_box(grey.shape, width_pt, height_pt)
    ys, xs = np.nonzero(grey < INK_LEVEL)
    regions = {
        "in the left margin": xs < x0,
        "in the right margin": xs >= x1,
        "above the header band": (ys < y0) & (xs >= x0) & (xs < x1),
        "below the footer band": (ys >= y1) & (xs >= x0) & (xs < x1),
    }
    return [
        f"{name}: {int(sel.sum())} px, x {xs[sel].min() / mm:.1f}-{xs[sel].max() / mm:.1f} mm, "
        f"y {ys[sel].min() / mm:.1f}-{ys[sel].max() / mm:.1f} mm"
        for name, sel in regions.items()
        if sel.any()
    ]


def rasterise(pdf: Path, outdir: Path, *, dpi: int = DPI) -> list[Path]:
    """Every page of ``pdf`` as ``outdir/page-NN.png``, in page order."""
    outdir.mkdir(parents=True, exist_ok=True)
    for old in outdir.glob("page-*.png"):
        old.unlink()
    subprocess.run(
        ["pdftoppm", "-r", str(dpi), "-png", str(pdf), str(outdir / "page")],
        capture_output=True,
        check=True,
    )
    return sorted(outdir.glob("page-*.png"), key=lambda p: int(p.stem.rsplit("-", 1)[1]))


def check_pdf(pdf: Path | str, image_dir: Path | str) -> list[PageReport]:
    """Run both checks on every page; the page images stay in ``image_dir``."""
    pdf, image_dir = Path(pdf), Path(image_dir)
    pages = page_words(pdf)
    images = rasterise(pdf, image_dir)
    if len(images) != len(pages):
        raise RuntimeError(f"{pdf}: {len(images)} page images but {len(pages)} pages of words")
    reports = []
    for k, ((width, height, words), image) in enumerate(zip(pages, images, strict=True), 1):
        r = PageReport(k, width, height, image)
        r.ink_outside = ink_outside(image, width, height)
        r.overlaps = overlapping(words)
        reports.append(r)
    return reports


def faults(reports: list[PageReport]) -> str:
    """All faults of all pages, one per line ("" when every page passes)."""
    return "\n".join(r.describe() for r in reports if not r.ok)


@functools.cache
def seb_results() -> Path:
    """Results of a quick run on the Self-Execution Benchmark (imported from :data:`SEB_DATA`,
    short sampler run, no report), made once per process and shared by the layout and browser
    tests: a report with SEB's shape (two binary tasks, long model names, closed models, the
    self-versus-other tables). Read-only for callers: copy before writing into it.

    ``SELFMODEL_SEB_RESULTS`` names a folder of saved SEB results to use instead (no run), e.g.
    a ``selfmodel run`` of ``selfmodel import seb`` output kept from an earlier session."""
    saved = os.environ.get("SELFMODEL_SEB_RESULTS")
    if saved:
        if not (Path(saved) / "results.json").is_file():
            raise FileNotFoundError(f"SELFMODEL_SEB_RESULTS={saved}: no results.json there")
        return Path(saved)
    if not SEB_DATA.is_dir():
        raise FileNotFoundError(f"shared Self-Execution Benchmark data not found at {SEB_DATA}")
    base = Path(tempfile.mkdtemp(prefix="selfmodel-seb-"))
    if selfmodel_cli(["import", "seb", str(SEB_DATA), "--out", str(base / "import")]) != 0:
        raise RuntimeError("selfmodel import seb failed")
    out = base / "run"
    args = ["run", str(base / "import" / "records.parquet"), "--registry",
            str(base / "import" / "registry.csv"), "--out", str(out), *QUICK, "--no-report"]
    if selfmodel_cli(args) != 0:
        raise RuntimeError("selfmodel run on the SEB import failed")
    return out


def main(argv: list[str] | None = None) -> int:
    """Check PDFs from the command line; exit 1 if a page fails."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("pdf", nargs="+", type=Path)
    p.add_argument("--out", type=Path, default=Path("tests/artifacts/pages"))
    args = p.parse_args(argv)
    bad = 0
    for pdf in args.pdf:
        reports = check_pdf(pdf, args.out / pdf.stem)
        n_bad = sum(not r.ok for r in reports)
        bad += n_bad
        print(f"{pdf}: {len(reports)} pages, {n_bad} with faults")
        if n_bad:
            print(faults(reports))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
