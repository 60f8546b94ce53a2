"""``scripts/benchmark.py --quick`` runs end to end and produces its table and JSON."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "benchmark.py"


@pytest.mark.slow
def test_quick_benchmark_prints_its_tables_and_writes_json(tmp_path: Path) -> None:
    output = tmp_path / "benchmark.json"
    run = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--threads", "1", "--rounds", "1"]
        + ["--output", str(output)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    for title in ("Training throughput", "Document BiLSTM", "Evaluation of a 160-example"):
        assert title in run.stdout
    result = json.loads(output.read_text())
    assert result["mode"] == "quick" and result["threads"] == 1
    reference = result["train"]["Reference (plain loop), fp32"]
    assert reference["ratio_vs_reference"] == 1.0
    for row in result["train"].values():
        assert row["median_examples_per_second"] > 0 and row["peak_rss_mib"] > 0
    assert set(result["encoder"]["results"]) == {"torch PackedSequence", "SequenceEncoder (padded)"}
    assert result["eval"]["examples"] == 160
