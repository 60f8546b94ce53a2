"""``scripts/benchmark_loader.py``: collated batches per second from a generated corpus, with
and without loader workers, against a GPU's need; run at tiny sizes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import torch

from tests.trained_reader import ROOT


def test_the_loader_benchmark_prints_a_row_per_worker_count_and_writes_json(tmp_path):
    out = tmp_path / "loader.json"
    options = ["--examples", "200", "--batch-size", "8", "--batches", "5", "--warm-up", "2"]
    options += ["--rounds", "2", "--workers", "0", "1", "--output", str(out)]
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "benchmark_loader.py"), *options],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert re.search(r"^target: 3,169 examples/s", run.stdout, re.M)  # 380,298 in 120 s
    rows = re.findall(r"^\| (\d) \| ([\d,]+) \| ([\d.]+) \| ([\d.]+) \|", run.stdout, re.M)
    assert [row[0] for row in rows] == ["0", "1"]
    figures = json.loads(out.read_text())
    assert set(figures["rounds"]) == {"0", "1"}
    for rounds in figures["rounds"].values():
        assert len(rounds) == 2
        for one in rounds:
            assert one["examples_per_second"] > 0 and one["mb_per_second"] > 0
            assert one["pinned"] == torch.cuda.is_available()  # pinned only for a GPU
    assert figures["pinned"] == torch.cuda.is_available()
    # The "x target" column is examples/s over the target.
    for _, rate, _, times in rows:
        assert abs(float(rate.replace(",", "")) / 3169 - float(times)) < 0.01
