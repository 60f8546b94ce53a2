"""``attentive-reader demo`` end to end on a small corpus (the full-size run is in the README)."""

import csv
import json

import pytest

from attentive_reader.cli import main as cli_main
from attentive_reader.common.errors import UserError
from attentive_reader.demo import DemoOptions, reader_config, run_demo
from attentive_reader.training.shipped_configs import shipped_readers


@pytest.mark.slow
def test_small_demo_runs_end_to_end(tmp_path, monkeypatch, capfd, caplog, recwarn):
    monkeypatch.chdir(tmp_path)  # nothing may be written outside out_dir
    out = tmp_path / "demo"
    options = DemoOptions(
        out_dir=str(out), stories=80, epochs=1, heatmaps=2, num_proc=1, spacy_model="ruler"
    )
    summary = run_demo(options)

    assert summary["complete"] is True
    assert json.loads((out / "demo.json").read_text()) == summary
    assert set(summary["examples"]) == {"train", "validation", "test"}
    # The demo trains on the compact stories.
    assert json.loads((out / "corpus" / "synthetic.json").read_text())["shape"] == "compact"
    assert summary["examples"]["test"] > 0
    assert 0.0 <= summary["test_acc"] <= 1.0
    # The report holds the reader beside the paper's three baselines.
    kinds = sorted(s["kind"] for s in summary["systems"].values())
    assert kinds == ["baseline", "baseline", "baseline", "model"]
    model = next(s for s in summary["systems"].values() if s["kind"] == "model")
    assert model["count"] == summary["examples"]["test"]
    # Lightning's test accuracy and the report's exact accuracy agree on one device.
    assert model["accuracy"] == pytest.approx(summary["test_acc"], abs=1e-6)
    assert (out / "report.json").is_file()
    assert (out / "heatmaps" / "index.html").is_file()
    assert len(list((out / "heatmaps").glob("*.html"))) == 3  # two pages + the index
    assert summary["checkpoint"].startswith(str(out))
    # No warning from Lightning's or torch's insides (recwarn shows every warning, those
    # pytest hides included), in training or in the test step, and no Lightning tip.
    shown = [str(w.message) for w in recwarn] + [r.getMessage() for r in caplog.records]
    for noise in ("LeafSpec", "smaller than the logging interval", "Tip"):
        assert not [line for line in shown if noise in line], noise
    # The metrics are written, and `curves` draws the run's validation curve from them.
    assert summary["metrics"] == str(out / "train" / "version_0" / "metrics.csv")
    capfd.readouterr()
    assert cli_main(["curves", str(out / "train"), "--output", str(out / "curve.png")]) == 0
    assert (out / "curve.png").stat().st_size > 0
    with open(summary["metrics"], encoding="utf-8") as file:
        (validated,) = [row for row in csv.DictReader(file) if row["val_acc"]]  # one epoch
    assert f"| train | {float(validated['val_acc']):.3f} |" in capfd.readouterr().out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo"]

    # Running again into the same directory replaces the earlier demo.
    again = run_demo(options)
    assert again["examples"] == summary["examples"]


def test_demo_refuses_a_directory_that_is_not_a_demo(tmp_path, capsys):
    (tmp_path / "mine.txt").write_text("keep me")
    assert cli_main(["demo", "--out-dir", str(tmp_path), "--stories", "60"]) == 2
    assert "not the output of an earlier demo" in capsys.readouterr().err
    assert (tmp_path / "mine.txt").read_text() == "keep me"


def test_demo_options_are_checked(tmp_path):
    with pytest.raises(UserError, match="--epochs must be a positive integer"):
        DemoOptions(epochs=0)
    with pytest.raises(UserError, match="unknown reader 'nope'"):
        reader_config("nope")
    assert {"attentive_reader", "impatient_reader", "uniform_reader"} <= set(shipped_readers())
