"""Outputs where the docs say: the folder ``--trainer.default_root_dir`` names wins over a
trainer config's logger folder; ``predict`` writes ``predictions.jsonl``, the records of
``evaluate --predictions``."""

from __future__ import annotations

import json

import pytest

from attentive_reader.cli import main
from tests.trained_reader import TrainedReader

TINY = [
    "--data.batch_size", "8",
    "--model.init_args.embedding_dim", "8",
    "--model.init_args.hidden_dim", "8",
    "--trainer.max_steps", "1",
    "--trainer.limit_val_batches", "1",
    "--trainer.enable_progress_bar", "false",
    "--trainer.enable_model_summary", "false",
]  # fmt: skip


def test_default_root_dir_wins_over_a_trainer_configs_logger(
    trained: TrainedReader, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    argv = ["fit", "--config", "attentive_reader", "--config", "trainer/cpu_debug", *TINY]
    argv += ["--data.path", str(trained.data), "--trainer.default_root_dir", "runs/toy"]
    assert main(argv) == 0
    # trainer/cpu_debug's CSV logger names the run cpu_debug; its save_dir (runs) gives way
    assert (tmp_path / "runs" / "toy" / "cpu_debug" / "version_0" / "metrics.csv").is_file()
    assert list((tmp_path / "runs" / "toy").glob("cpu_debug/version_0/checkpoints/last.ckpt"))
    assert not (tmp_path / "runs" / "cpu_debug").exists()


def test_predict_writes_the_records_of_evaluate_predictions(trained: TrainedReader, tmp_path):
    ckpt, data = str(trained.ckpt), str(trained.data)
    argv = ["predict", "--config", "attentive_reader", "--data.path", data, "--ckpt_path", ckpt]
    argv += ["--trainer.default_root_dir", str(tmp_path / "runs")]
    assert main([*argv, "--trainer.enable_progress_bar", "false"]) == 0
    written = tmp_path / "runs" / "lightning_logs" / "version_0" / "predictions.jsonl"
    predicted = [json.loads(line) for line in written.read_text().splitlines()]
    expected_file = tmp_path / "evaluate.jsonl"
    assert (
        main(["evaluate", "--data", data, "--ckpt", ckpt, "--predictions", str(expected_file)]) == 0
    )
    expected = [json.loads(line) for line in expected_file.read_text().splitlines()]
    assert len(predicted) == len(expected) > 0
    for mine, theirs in zip(predicted, expected):
        assert mine.keys() == theirs.keys()
        for key in ("id", "story_id", "prediction", "prediction_name", "gold", "correct"):
            assert mine[key] == theirs[key], key
        for key in ("prediction_probability", "gold_probability"):
            assert mine[key] == pytest.approx(theirs[key], abs=1e-4), key


def test_resuming_applies_a_new_learning_rate_and_refuses_a_new_size(
    trained: TrainedReader, tmp_path, capfd
):
    import torch

    resume = ["fit", "--config", "attentive_reader", *TINY, "--data.path", str(trained.data)]
    resume += ["--ckpt_path", str(trained.ckpt), "--trainer.logger", "false"]
    resume += ["--trainer.default_root_dir", str(tmp_path / "runs")]
    trained_with = torch.load(trained.ckpt, weights_only=True)["hyper_parameters"]
    assert main([*resume, "--model.init_args.hidden_dim", "64"]) == 2
    err = capfd.readouterr().err.strip().splitlines()[-1]
    assert f"was trained with hidden_dim {trained_with['hidden_dim']}" in err
    assert not (tmp_path / "runs").exists()
    assert trained_with["lr"] != 0.0123
    assert main([*resume, "--model.lr", "0.0123", "--trainer.max_steps", "4"]) == 0
    resumed = torch.load(tmp_path / "runs" / "checkpoints" / "last.ckpt", weights_only=True)
    assert resumed["hyper_parameters"]["lr"] == 0.0123
    groups = [group for state in resumed["optimizer_states"] for group in state["param_groups"]]
    assert groups and all(group["lr"] == 0.0123 for group in groups)
