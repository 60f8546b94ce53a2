"""``scripts/size_curve.py``: test accuracy against training-set size from ``evaluate --out``
files, beside the baselines of the same test questions; files of other questions, or of
several checkpoints, stop it with the file named."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from tests.trained_reader import ROOT

BASELINES = {"maximum_frequency": 0.25, "exclusive_frequency": 0.3, "word_distance": 0.45}


def _evaluated(path: Path, accuracies: list[float], n: int = 200, baselines=BASELINES) -> str:
    """An ``evaluate --out`` file as the command writes it (the fields the script reads)."""

    def system(name: str, kind: str, accuracy: float) -> dict:
        overall = {"n": n, "correct": accuracy * n, "accuracy": accuracy}
        overall.update(ci_low=accuracy - 0.05, ci_high=accuracy + 0.04)
        return {"name": name, "kind": kind, "overall": overall}

    systems = [system(name, "baseline", value) for name, value in baselines.items()]
    systems += [system(f"run{i}/best.ckpt", "model", a) for i, a in enumerate(accuracies)]
    path.write_text(json.dumps({"num_examples": n, "systems": systems}))
    return str(path)


def _main(*args: str) -> int:
    path = ROOT / "scripts" / "size_curve.py"
    spec = importlib.util.spec_from_file_location("size_curve", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.main(list(args))


def test_points_are_tabled_plotted_and_written(tmp_path, capsys):
    q25 = _evaluated(tmp_path / "q25.json", [0.5])
    q50 = _evaluated(tmp_path / "q50.json", [0.55])
    full = _evaluated(tmp_path / "all.json", [0.625])
    other = _evaluated(tmp_path / "other.json", [0.6])
    plot, out = tmp_path / "size.png", tmp_path / "size.json"
    args = ["--point", "A", "1", full, "--point", "A", "0.25", q25, "--point", "A", "0.5", q50]
    args += ["--point", "B", "0.25", other, "--plot", str(plot), "--output", str(out)]
    assert _main(*args) == 0
    printed = capsys.readouterr().out
    # Sorted by share within a reader; accuracy and interval in % from the file.
    rows = [line for line in printed.splitlines() if line.startswith("| A |")]
    assert rows == [
        "| A | 25% | 50.0 | 45.0-54.0 |",
        "| A | 50% | 55.0 | 50.0-59.0 |",
        "| A | 100% | 62.5 | 57.5-66.5 |",
    ]
    assert "| B | 25% | 60.0 | 55.0-64.0 |" in printed
    assert "| word distance (baseline) | | 45.0 | |" in printed
    assert "(200 test questions)" in printed
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    figures = json.loads(out.read_text())
    assert figures["baselines"] == BASELINES and figures["test_questions"] == 200
    expected = [[0.25, 0.5, 0.45, 0.54], [0.5, 0.55, 0.5, 0.59], [1.0, 0.625, 0.575, 0.665]]
    assert figures["readers"]["A"] == [pytest.approx(point) for point in expected]


def test_other_questions_several_checkpoints_and_bad_shares_are_refused(tmp_path):
    good = _evaluated(tmp_path / "good.json", [0.5])
    fewer = _evaluated(tmp_path / "fewer.json", [0.5], n=150)
    moved = _evaluated(
        tmp_path / "moved.json", [0.5], baselines={**BASELINES, "word_distance": 0.4}
    )
    two = _evaluated(tmp_path / "two.json", [0.5, 0.6])
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    cases = [
        (["--point", "A", "0.5", good, "--point", "A", "1", fewer], f"{fewer}: its test questions differ from those of {good}"),
        (["--point", "A", "0.5", good, "--point", "B", "0.5", moved], f"{moved}: its test questions differ"),
        (["--point", "A", "0.5", two], f"{two}: holds 2 checkpoints' results"),
        (["--point", "A", "0.5", str(broken)], f"{broken}: not an `attentive-reader evaluate --out` file"),
        (["--point", "A", "0.5", str(tmp_path / "none.json")], "none.json: cannot read it"),
        (["--point", "A", "1.5", good], "the share must be a number in (0, 1]"),
        (["--point", "A", "half", good], "the share must be a number in (0, 1]"),
        (["--point", "A", "0.5", good, "--point", "A", "0.5", good], "given twice for this reader"),
    ]  # fmt: skip
    for args, message in cases:
        with pytest.raises(SystemExit) as stopped:
            _main(*args)
        assert message in str(stopped.value), (args, stopped.value)
