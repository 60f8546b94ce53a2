"""DDP on the CPU: two processes (gloo) train, and their synced validation accuracy equals a
single process's accuracy on the same examples."""

import csv
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from attentive_reader.cli import main as cli_main
from attentive_reader.corpus.synthetic.toy import write_toy_dataset

ROOT = Path(__file__).resolve().parents[1]
BASE = ROOT / "configs" / "attentive_reader.yaml"


def _val_acc(save_dir: Path) -> float:
    (path,) = save_dir.glob("**/metrics.csv")
    with path.open() as handle:
        values = [row["val_acc"] for row in csv.DictReader(handle) if row.get("val_acc")]
    return float(values[-1])


@pytest.mark.slow
def test_ddp_synced_val_acc_equals_single_process(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    # 64 validation examples in batches of 16: 4 batches, 2 per rank, none padded or repeated.
    toy = write_toy_dataset(tmp_path / "toy", num_train=64, num_validation=64, num_test=8)
    common = [
        "--config",
        str(BASE),
        "--data.path",
        str(toy),
        "--data.num_entities",
        "12",
        "--data.batch_size",
        "16",
        "--trainer.accelerator",
        "cpu",
        "--trainer.enable_progress_bar",
        "false",
        "--trainer.enable_model_summary",
        "false",
        "--trainer.logger",
        "CSVLogger",
    ]
    ddp = [
        "--trainer.devices",
        "2",
        "--trainer.strategy",
        "ddp",
        "--trainer.max_epochs",
        "1",
        "--trainer.num_sanity_val_steps",
        "0",
        "--trainer.logger.save_dir",
        "ddp",
    ]
    process = subprocess.run(
        [sys.executable, "-m", "attentive_reader.cli", "fit", *common, *ddp],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert process.returncode == 0, process.stderr[-3000:]
    ddp_acc = _val_acc(tmp_path / "ddp")
    (last,) = tmp_path.glob("ddp/**/checkpoints/last.ckpt")
    # The ranks shared the epoch: 64 examples = 2 ranks x 2 steps of 16 (not 4 steps each).
    assert torch.load(last, weights_only=True)["global_step"] == 2

    single = ["--trainer.devices", "1", "--trainer.logger.save_dir", "single"]
    assert cli_main(["validate", *common, *single, "--ckpt_path", str(last)]) == 0
    single_acc = _val_acc(tmp_path / "single")
    assert ddp_acc == pytest.approx(single_acc, abs=1e-6)
