"""``scripts/real_news_report.py``: the validation curves of a folder of runs, resumed
versions joined, beside the baselines of the validation questions."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from tests.corpus.fixtures import cloze_example, write_dataset
from tests.trained_reader import ROOT


def _metrics(path: Path, rows: list[tuple[int, float | None, float | None]]) -> None:
    # As CSVLogger writes them: step rows with only a loss, epoch rows with val_acc.
    path.parent.mkdir(parents=True)
    lines = ["epoch,step,train_loss_epoch,train_loss_step,val_acc"]
    for epoch, loss, accuracy in rows:
        lines.append(
            f"{epoch},{epoch * 10 + 9},{loss or ''},{1.5 if loss is None else ''},{accuracy or ''}"
        )
    path.write_text("\n".join(lines) + "\n")


def _main(monkeypatch: pytest.MonkeyPatch, *args: str) -> int:
    """Run the script's ``main`` in this process; the modules it imports from scripts/ are
    dropped again, so no other test finds them imported."""
    monkeypatch.syspath_prepend(str(ROOT / "scripts"))
    path = ROOT / "scripts" / "real_news_report.py"
    spec = importlib.util.spec_from_file_location("real_news_report", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
        return module.main(list(args))
    finally:
        for name in [n for n in sys.modules if n.split(".")[0] in ("bench", "learning_curves")]:
            del sys.modules[name]


def test_resumed_versions_are_joined_and_the_best_epoch_named(tmp_path, monkeypatch, capsys):
    runs = tmp_path / "runs"
    # Run "a" stopped after epoch 2 and was resumed from last.ckpt: version_1 has epoch 3.
    _metrics(runs / "a/version_0/metrics.csv", [(0, None, None), (0, 2.0, 0.5), (1, 1.0, 0.625)])
    _metrics(runs / "a/version_1/metrics.csv", [(2, 0.5, 0.6)])
    _metrics(runs / "b/version_0/metrics.csv", [(0, 2.0, 0.25)])
    _metrics(runs / "c/version_0/metrics.csv", [(0, None, None)])  # nothing validated yet
    example = cloze_example("ex0", "s0")  # @entity0 met @entity1 in @entity2 . @entity1 smiled .
    data = write_dataset(tmp_path / "data", {"train": [example], "validation": [example]})
    out = tmp_path / "curves.json"
    assert _main(monkeypatch, str(runs), "--data", data, "--output", str(out)) == 0
    printed = capsys.readouterr().out
    # No wall time logged (runs from before train_wall_s): no minutes.
    assert "| a | 0.500 | 0.625 | 0.600 | 0.625 (epoch 2) | - | - |" in printed
    assert "| b | 0.250 |  |  | 0.250 (epoch 1) | - | - |" in printed
    assert "| c |" not in printed
    figures = json.loads(out.read_text())
    assert figures["runs"]["a"] == {
        "val_acc": [0.5, 0.625, 0.6],
        "train_loss": [2.0, 1.0, 0.5],
        "wall_s": [],
    }
    # The answer @entity0 occurs once; @entity1 twice: maximum frequency is wrong.
    assert figures["baselines"]["maximum_frequency"] == 0.0
    assert "| maximum frequency (baseline) | 0.000 |" in printed


def test_a_folder_without_validated_runs_says_so(tmp_path, monkeypatch):
    _metrics(tmp_path / "runs/c/version_0/metrics.csv", [(0, None, None)])
    with pytest.raises(SystemExit, match="no run has validated an epoch yet"):
        _main(monkeypatch, str(tmp_path / "runs"), "--data", str(tmp_path))


def test_minutes_per_epoch_and_to_the_best_from_the_logged_wall_time(tmp_path, monkeypatch, capsys):
    # Three epochs ending at 6, 18 and 24 minutes (a resume between the second and third):
    # epochs of 6, 12 and 6 minutes (median 6); the best is the second, 18 minutes in.
    runs = tmp_path / "runs"
    for version, rows in enumerate([[(0, 0.5, 360), (1, 0.7, 1080)], [(2, 0.6, 1440)]]):
        path = runs / f"a/version_{version}/metrics.csv"
        path.parent.mkdir(parents=True)
        lines = ["epoch,step,train_loss_epoch,train_wall_s,val_acc"]
        lines += [f"{e},{e * 10 + 9},{1.0},{wall},{acc}" for e, acc, wall in rows]
        path.write_text("\n".join(lines) + "\n")
    example = cloze_example("ex0", "s0")
    data = write_dataset(tmp_path / "data", {"train": [example], "validation": [example]})
    assert _main(monkeypatch, str(runs), "--data", data) == 0
    assert "| a | 0.500 | 0.700 | 0.600 | 0.700 (epoch 2) | 6.0 | 18.0 |" in capsys.readouterr().out
