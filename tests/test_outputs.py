"""Outputs where the docs say: the folder ``--trainer.default_root_dir`` names wins over a
trainer config's logger folder."""

from __future__ import annotations

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
