"""The HTML report in a real browser (Debian's chromium, headless): it
loads without console errors and every plot is drawn. Skipped where
chromium is missing (`apt-get install chromium` to run it)."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")


def test_the_report_renders_in_headless_chromium(tmp_path):
    from PIL import Image

    out = tmp_path / "r"
    run = subprocess.run(["netbraid", "run", "examples/tcp_and_cbr.toml", "--reps", "2", "--set", "measure.interval=1s",
                          "--out", str(out), "-q"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert subprocess.run(["netbraid", "report", str(out)], capture_output=True, timeout=120).returncode == 0
    page = out / "report" / "report.html"
    shot = tmp_path / "shot.png"
    common = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1200,5000",
              "--enable-logging=stderr", "--v=0"]
    shown = subprocess.run([*common, f"--screenshot={shot}", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert shot.exists(), shown.stderr[-2000:]
    # the page's own console: chromium logs it as CONSOLE(...) lines
    console = [line for line in shown.stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]
    assert console == [], console
    dom = subprocess.run([*common, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120).stdout
    captions = re.findall(r"<figcaption>([^<]*)</figcaption>", dom)
    # the goodput CDF, goodput and cwnd over time, the queue lengths: each captioned by its plot's title
    assert any("distribution of per-flow goodput over 2 runs" in c for c in captions), captions
    assert any("goodput (Mb/s) over time (seed 1)" in c for c in captions), captions
    assert any("queue length over time" in c for c in captions), captions
    assert "What was run" in dom and "examples/tcp_and_cbr.toml" in dom and "Per link direction" in dom
    # every plot was decoded and drawn: a plot's rows have dark pixels (its
    # axes' spines) 500 px or more apart; text and tables (light borders)
    # give few such rows, a broken image none
    import numpy as np

    with Image.open(shot) as im:
        dark = np.asarray(im.convert("L")) < 160
    spans = [(np.flatnonzero(r)[-1] - np.flatnonzero(r)[0]) if r.any() else 0 for r in dark]
    wide = sum(1 for w in spans if w >= 500)
    assert wide > 250 * len(captions), (wide, len(captions))
