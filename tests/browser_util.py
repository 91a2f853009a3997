"""Open an HTML file in headless Chromium, offline, and report what a reader's browser would see.

Only the standard library is used: Chromium runs twice, once with ``--dump-dom`` on a copy of the
page into which a small probe script is injected (first thing in ``<head>``), once with
``--screenshot`` on the unmodified page. The probe records console errors, uncaught exceptions,
resource-load errors, every resource fetch the page made (a self-contained page makes none:
``data:`` URIs are not fetched) and whether each ``<img>`` decoded, and writes them as JSON into
the DOM that ``--dump-dom`` prints. Network access is cut off with an unreachable proxy and a
host-resolver rule, so a page that tries to load something remote fails visibly instead of
succeeding quietly on a machine that happens to be online.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome")

_PROBE = r"""
<script>
(function () {
  var report = {console_errors: [], page_errors: [], failed_requests: []};
  function describe(el) {
    return el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") +
      (typeof el.className === "string" && el.className ? "." + el.className.split(/\s+/).join(".") : "");
  }
  function box(r) {
    return {left: r.left, right: r.right, top: r.top + window.scrollY, bottom: r.bottom + window.scrollY};
  }
  // What a reader's screen shows: the viewport, elements reaching past its sides (unless a
  // scrolling ancestor inside the viewport clips them), scroll boxes that scroll sideways,
  // and where each element with an id is (page coordinates, CSS px).
  function layout() {
    var vw = window.innerWidth, out = {viewport: [vw, window.innerHeight],
      scroll_width: document.documentElement.scrollWidth, too_wide: [], scrolls_sideways: [], ids: {}};
    var all = document.body.querySelectorAll("*");
    for (var i = 0; i < all.length; i++) {
      var el = all[i], r = el.getBoundingClientRect();
      if (el.id === "__selfmodel_probe" || (r.width === 0 && r.height === 0)) continue;
      var ox = getComputedStyle(el).overflowX;
      if (ox !== "visible" && el.scrollWidth > el.clientWidth + 1) {
        out.scrolls_sideways.push(describe(el));
      }
      if (r.right > vw + 1 || r.left < -1) {
        var clipped = false;
        for (var p = el.parentElement; p && p !== document.body; p = p.parentElement) {
          var pr = p.getBoundingClientRect();
          if (getComputedStyle(p).overflowX !== "visible" && pr.right <= vw + 1 && pr.left >= -1) {
            clipped = true; break;
          }
        }
        if (!clipped) out.too_wide.push({element: describe(el), left: r.left, right: r.right});
      }
      if (el.id && Object.keys(out.ids).length < 500) out.ids[el.id] = box(r);
    }
    out.too_wide = out.too_wide.slice(0, 50);
    return out;
  }
  window.__selfmodelProbe = report;
  var origError = console.error;
  console.error = function () {
    report.console_errors.push(Array.prototype.map.call(arguments, String).join(" "));
    return origError.apply(console, arguments);
  };
  window.addEventListener("error", function (e) {
    var t = e.target;
    if (t && t !== window && (t.src || t.href)) {
      report.failed_requests.push((t.tagName || "?") + " " + (t.src || t.href));
    } else {
      report.page_errors.push(String(e.message || e));
    }
  }, true);
  window.addEventListener("unhandledrejection", function (e) {
    report.page_errors.push("unhandled rejection: " + String(e.reason));
  });
  window.addEventListener("load", function () {
    setTimeout(function () {
      var imgs = Array.prototype.map.call(document.images, function (im) {
        return {src: (im.currentSrc || im.src || "").slice(0, 80), complete: im.complete,
                natural_width: im.naturalWidth, natural_height: im.naturalHeight};
      });
      var requests = performance.getEntriesByType("resource").map(function (r) {
        return r.name;
      });
      report.images = imgs;
      report.requests = requests;
      report.title = document.title;
      report.body_text_length = (document.body && document.body.innerText || "").length;
      report.layout = layout();
      var pre = document.createElement("pre");
      pre.id = "__selfmodel_probe";
      pre.textContent = JSON.stringify(report);
      document.body.appendChild(pre);
    }, 200);
  });
})();
</script>
"""


def find_chromium() -> str | None:
    """Path of a Chromium executable, or None."""
    for name in CHROMIUM_CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


def _chromium_cmd(chromium: str, profile: Path) -> list[str]:
    return [
        chromium,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-quic",
        "--disable-extensions",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        # no request can leave the machine: an unreachable proxy and no DNS
        "--proxy-server=http://127.0.0.1:9",
        "--proxy-bypass-list=<-loopback>",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        f"--user-data-dir={profile}",
        "--enable-logging=stderr",
        "--v=0",
    ]


def _console_lines(stderr: str) -> list[str]:
    # Chromium logs page console messages as: [..:INFO:CONSOLE(12)] "message", source: ... (12)
    return [ln for ln in stderr.splitlines() if ":CONSOLE" in ln]


def open_in_chromium(
    html_path: Path | str,
    screenshot_path: Path | str | None = None,
    *,
    window: tuple[int, int] = (1280, 2000),
    timeout: int = 60,
) -> dict[str, Any]:
    """Load ``html_path`` in headless Chromium with no network and report on it.

    ``window`` is the browser window (width, height) in CSS pixels, for the page and for the
    screenshot (which shows exactly the first screen a reader with that window sees).

    Returns
    -------
    dict
        ``console_errors``, ``page_errors``, ``failed_requests`` (lists of str), ``requests``
        (every resource URL fetched), ``images`` (one dict per ``<img>`` with
        ``natural_width``), ``all_images_decoded`` (bool), ``console`` (Chromium's console log
        lines), ``title``, ``body_text_length``, ``screenshot`` (path or None) and ``layout``:
        ``viewport`` [width, height], ``scroll_width`` of the page, ``too_wide`` (elements
        reaching past the viewport's sides, not clipped by a scroll box), ``scrolls_sideways``
        (scroll boxes whose content is wider than they are) and ``ids`` (id -> box with
        ``left``, ``right``, ``top``, ``bottom`` in page coordinates).

    Raises
    ------
    FileNotFoundError
        No Chromium executable.
    RuntimeError
        Chromium did not produce the probe result.
    """
    chromium = find_chromium()
    if chromium is None:
        raise FileNotFoundError("no chromium executable found")
    html_path = Path(html_path).resolve()
    with tempfile.TemporaryDirectory(prefix="selfmodel-chromium-") as tmp:
        tmpdir = Path(tmp)
        page = html_path.read_text(encoding="utf-8")
        m = re.search(r"<head[^>]*>", page, flags=re.IGNORECASE)
        probed = (page[: m.end()] + _PROBE + page[m.end() :]) if m else _PROBE + page
        # the copy sits beside nothing: a relative reference to a local file fails too
        probe_file = tmpdir / "page" / html_path.name
        probe_file.parent.mkdir()
        probe_file.write_text(probed, encoding="utf-8")
        env = {**os.environ, "HOME": str(tmpdir)}
        cmd = _chromium_cmd(chromium, tmpdir / "profile-dom")
        cmd += [f"--window-size={window[0]},{window[1]}", "--virtual-time-budget=5000"]
        cmd += ["--dump-dom", probe_file.as_uri()]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        found = re.search(r'<pre id="__selfmodel_probe">(.*?)</pre>', proc.stdout, flags=re.S)
        if found is None:
            raise RuntimeError(
                f"Chromium (exit {proc.returncode}) printed no probe result; stderr tail:\n"
                + "\n".join(proc.stderr.splitlines()[-20:])
            )
        report: dict[str, Any] = json.loads(html.unescape(found.group(1)))
        report["console"] = _console_lines(proc.stderr)
        report["all_images_decoded"] = all(
            im["complete"] and im["natural_width"] > 0 for im in report.get("images", [])
        )
        report["screenshot"] = None
        if screenshot_path is not None:
            shot = Path(screenshot_path).resolve()
            shot.parent.mkdir(parents=True, exist_ok=True)
            cmd = _chromium_cmd(chromium, tmpdir / "profile-shot")
            cmd += [f"--window-size={window[0]},{window[1]}", f"--screenshot={shot}"]
            cmd.append(html_path.as_uri())
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
            if proc.returncode != 0 or not shot.is_file():
                raise RuntimeError(
                    f"Chromium screenshot failed (exit {proc.returncode}):\n"
                    + "\n".join(proc.stderr.splitlines()[-20:])
                )
            report["screenshot"] = shot
    return report


def layout_problems(
    report: dict[str, Any], *, first_screen: tuple[str, ...] = (), sideways_scroll: bool = True
) -> list[str]:
    """What is wrong with a page's layout, from :func:`open_in_chromium`'s ``layout``.

    The page must not be wider than the viewport, no element may reach past its sides (unless
    a scroll box inside the viewport clips it), each element id in ``first_screen`` must lie
    wholly inside the first screen (top >= 0, bottom <= viewport height) and, with
    ``sideways_scroll=False``, no box may scroll sideways.
    """
    lay = report["layout"]
    width, height = lay["viewport"]
    problems = []
    if lay["scroll_width"] > width:
        problems.append(f"the page is {lay['scroll_width']} px wide in a {width} px viewport")
    problems += [
        f"{w['element']} reaches x {w['left']:.0f}..{w['right']:.0f} (viewport {width} px)"
        for w in lay["too_wide"]
    ]
    for name in first_screen:
        box = lay["ids"].get(name)
        if box is None:
            problems.append(f"no element with id {name!r}")
        elif box["top"] < 0 or box["bottom"] > height:
            problems.append(
                f"#{name} spans y {box['top']:.0f}..{box['bottom']:.0f}, "
                f"not inside the first screen (0..{height})"
            )
    if not sideways_scroll:
        problems += [f"{e} scrolls sideways" for e in lay["scrolls_sideways"]]
    return problems
