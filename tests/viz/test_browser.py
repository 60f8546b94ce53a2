"""Open a generated heatmap page in headless Chromium and take a screenshot."""

import shutil
import subprocess

import pytest

from attentive_reader.viz.files import file_stem, write_heatmaps
from tests.viz.pages import make_example

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not on PATH")
def test_page_renders_in_headless_chromium(tmp_path):
    ex = make_example()
    write_heatmaps([ex], tmp_path / "out", png=False)
    page = (tmp_path / "out" / f"{file_stem(ex.id)}.html").resolve()
    shot = tmp_path / "shot.png"
    result = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}",
            f"--screenshot={shot}",
            "--window-size=1200,900",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shot.is_file(), f"no screenshot (exit {result.returncode}):\n{result.stderr[-2000:]}"
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 10_000  # a rendered page, not an empty canvas
