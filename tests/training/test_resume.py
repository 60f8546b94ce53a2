"""A run killed with ``kill -9`` in the middle of an epoch, after a timed ``last.ckpt``,
resumes at the next batch of that epoch and ends where a run that was never killed ends:
the same weights, the same per-step losses after the resume, the same epoch figures.

The checkpoint interval is made tiny (``--checkpoint.last_every_minutes``) so that
``last.ckpt`` is rewritten after every batch that no validation follows; the reader config
keeps its dropout (the random state must travel too) and its per-example entity permutation.
"""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from attentive_reader.cli import main as cli_main
from attentive_reader.corpus.synthetic.toy import write_toy_dataset
from tests.trainers import KILLER

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
BATCHES = 6  # 48 training questions in batches of 8
KILLED_AT = BATCHES + 3  # after the third batch of the second epoch


def _fit(data: Path, logs: str, *extra: str) -> list[str]:
    return [
        "fit",
        "--config", str(ROOT / "configs" / "attentive_reader.yaml"),
        "--data.path", str(data),
        "--data.batch_size", "8",
        "--data.num_entities", "12",
        "--model.init_args.embedding_dim", "8",
        "--model.init_args.hidden_dim", "8",
        "--model.init_args.dropout", "0.3",
        "--trainer.max_epochs", "2",
        "--trainer.log_every_n_steps", "1",
        "--trainer.enable_progress_bar", "false",
        "--trainer.enable_model_summary", "false",
        "--trainer.logger", "CSVLogger",
        "--trainer.logger.save_dir", logs,
        "--checkpoint.last_every_minutes", "1e-9",
        *extra,
    ]  # fmt: skip


def _rows(save_dir: Path) -> list[dict[str, str]]:
    (path,) = save_dir.glob("**/metrics.csv")
    with path.open() as handle:
        return list(csv.DictReader(handle))


def _losses(rows: list[dict[str, str]]) -> dict[int, float]:
    return {int(r["step"]): float(r["train_loss_step"]) for r in rows if r.get("train_loss_step")}


def _epoch_figures(rows: list[dict[str, str]], epoch: int) -> dict[str, float]:
    keys = ("train_loss_epoch", "train_acc", "val_acc", "val_loss")
    return {k: float(r[k]) for r in rows if r.get("epoch") == str(epoch) for k in keys if r.get(k)}


def _last(save_dir: Path) -> dict:
    (path,) = save_dir.glob("**/checkpoints/last.ckpt")
    return torch.load(path, weights_only=True)


def test_a_run_killed_mid_epoch_resumes_to_the_uninterrupted_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    data = write_toy_dataset(tmp_path / "toy", num_train=48, num_validation=16, num_test=8)
    assert cli_main(_fit(data, "whole")) == 0
    whole = _rows(tmp_path / "whole")

    (tmp_path / "killer.py").write_text(KILLER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    kill = ["--trainer.callbacks+=killer.KillAtStep", "--trainer.callbacks.step", str(KILLED_AT)]
    process = subprocess.run(
        [sys.executable, "-m", "attentive_reader.cli", *_fit(data, "killed", *kill)],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert process.returncode == -signal.SIGKILL, process.stderr[-3000:]
    (last,) = (tmp_path / "killed").glob("**/checkpoints/last.ckpt")
    saved = torch.load(last, weights_only=True)
    # Written after the batch before the kill: in the middle of the second epoch.
    assert (saved["epoch"], saved["global_step"]) == (1, KILLED_AT - 1)
    assert sorted(p.name for p in last.parent.iterdir() if p.name.startswith(".")) == []

    assert cli_main(_fit(data, "resumed", "--ckpt_path", str(last))) == 0
    resumed = _rows(tmp_path / "resumed")
    # The resumed run trains the rest of the second epoch only, with the same losses.
    steps = _losses(resumed)
    assert sorted(steps) == list(range(KILLED_AT - 1, 2 * BATCHES))
    assert steps == {step: loss for step, loss in _losses(whole).items() if step in steps}
    # The epoch's figures cover the whole epoch, as in the run never killed.
    assert _epoch_figures(resumed, 1) == _epoch_figures(whole, 1)
    assert set(_epoch_figures(whole, 1)) == {"train_loss_epoch", "train_acc", "val_acc", "val_loss"}
    end, expected = _last(tmp_path / "resumed"), _last(tmp_path / "whole")
    assert end["global_step"] == expected["global_step"] == 2 * BATCHES
    assert end["state_dict"].keys() == expected["state_dict"].keys()
    for name, weights in expected["state_dict"].items():
        assert torch.equal(end["state_dict"][name], weights), name
