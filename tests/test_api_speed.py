"""``scripts/answer_speed.py`` runs and prints its figures (tiny sizes)."""

from __future__ import annotations

import re

import pytest

from tests.trained_reader import run_script

pytestmark = pytest.mark.slow


def test_answer_speed_prints_latency_and_throughput(trained):
    options = ["--tokens", "40", "--articles", "2", "--repeats", "2", "--batch", "4"]
    run = run_script(trained, "answer_speed.py", *options)
    assert run.returncode == 0, run.stderr[-2000:]
    out = run.stdout
    assert re.search(r"^CPU: .+ \(torch threads: 1\)$", out, re.MULTILINE)
    assert re.search(
        r"^one question, 40-token article, after loading \(2 articles x 2\): median [\d.]+ s "
        r"wall, 90th percentile [\d.]+ s; median [\d.]+ CPU s",
        out,
        re.MULTILINE,
    )
    assert re.search(r"^batch of 4 \(32 per forward pass\): median [\d.]+ questions/s", out, re.M)
