"""``fit`` with Lightning's stopping options and the shipped configs' early stopping, the
lines a log shows, resuming a finished run, and run folders left with nothing in them."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest

from attentive_reader.cli import main as cli_main
from attentive_reader.corpus.synthetic.toy import write_toy_dataset

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
PAPER = ROOT / "configs" / "attentive_reader_paper.yaml"  # lists EarlyStopping on val_acc

FAILING = """
from pytorch_lightning.callbacks import Callback

class FailAtStart(Callback):
    def on_train_start(self, trainer, module):
        raise RuntimeError("a failure before the first step")
"""


@pytest.fixture(scope="module")
def toy(tmp_path_factory) -> str:
    folder = tmp_path_factory.mktemp("toy")
    return str(write_toy_dataset(folder, num_train=48, num_validation=16, num_test=8))


def _fit(toy: str, *extra: str) -> list[str]:
    return [
        "fit",
        "--config", str(PAPER),
        "--data.path", toy,
        "--data.batch_size", "8",
        "--data.num_entities", "12",
        "--model.init_args.embedding_dim", "8",
        "--model.init_args.hidden_dim", "8",
        "--trainer.enable_model_summary", "false",
        "--trainer.logger", "CSVLogger",
        "--trainer.logger.save_dir", "runs",
        *extra,
    ]  # fmt: skip


def test_max_steps_validates_before_stopping_and_a_finished_run_says_so(
    toy, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    lines = ["--progress.style", "lines", "--progress.every_minutes", "1e-9"]
    assert cli_main(_fit(toy, "--trainer.max_steps", "3", *lines)) == 0
    out = capsys.readouterr().out
    (best,) = Path("runs").glob("lightning_logs/version_0/checkpoints/best-epoch1-step3-*.ckpt")
    last = best.parent / "last.ckpt"
    assert "training: 6 batches an epoch, epoch 1 of 10, at most 3 steps" in out
    for batch in (1, 2, 3):  # a line a batch at this spacing, epochs counted from 1
        assert re.search(rf"^epoch 1/10: batch {batch}/6, train_loss \d\.\d{{4}}, ", out, re.M)
    (epoch,) = [line for line in out.splitlines() if line.startswith("epoch 1/10 done in")]
    assert re.search(r"train_loss \d\.\d{4}, val_acc \d\.\d{4}", epoch)
    assert f"best checkpoint so far: {best} (epoch 1, val_acc" in epoch
    assert epoch.endswith(f"last checkpoint: {last}")
    assert out.splitlines()[-1].startswith(f"best checkpoint: {best} (epoch 1, val_acc ")

    # Resumed with nothing left to train: said so, the best named, no new version folder.
    assert cli_main(_fit(toy, "--trainer.max_steps", "3", "--ckpt_path", str(last))) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-2] == (
        f"nothing to train: {last} is the end of a finished run (epochs done: 0, steps: 3); "
        "to train on, resume it with a larger --trainer.max_steps (3)"
    )
    assert out[-1].startswith(f"best checkpoint: {best} (epoch 1, val_acc ")
    assert [p.name for p in (tmp_path / "runs" / "lightning_logs").iterdir()] == ["version_0"]


def test_early_stopping_waits_for_a_validation_and_max_time_leaves_no_warning(
    toy, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    no_validation = ["--trainer.limit_val_batches", "0", "--trainer.max_epochs", "1"]
    assert cli_main(_fit(toy, *no_validation, "--trainer.max_time", "00:00:10:00")) == 0
    out = capsys.readouterr().out
    assert "early stopping waits: val_acc has not been computed (no validation has run yet " in out
    (last,) = tmp_path.glob("runs/**/last.ckpt")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert cli_main(_fit(toy, "--trainer.max_epochs", "2", "--ckpt_path", str(last))) == 0
        test = ["test", "--config", str(PAPER), "--data.path", toy, "--ckpt_path", str(last)]
        assert cli_main(test) == 0
    assert not [w for w in seen if "Timer" in str(w.message)]


def test_a_fit_that_fails_before_training_leaves_no_run_folder(toy, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "failing.py").write_text(FAILING)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(RuntimeError, match="before the first step"):
        cli_main(_fit(toy, "--trainer.callbacks+=failing.FailAtStart"))
    assert not list((tmp_path / "runs" / "lightning_logs").iterdir())


def test_a_run_that_early_stopping_ended_stays_ended_when_resumed(
    toy, tmp_path, monkeypatch, capsys
):
    """Patience 1 and an improvement of a whole point asked for: early stopping ends the run
    after its second epoch. Lightning restores the callback's count but not its decision, so
    without ``StopCleanly`` the resumed run would train a third epoch."""
    monkeypatch.chdir(tmp_path)
    stopper = tmp_path / "stopper.yaml"
    stopper.write_text(
        "trainer:\n  callbacks:\n    - class_path: pytorch_lightning.callbacks.EarlyStopping\n"
        "      init_args: {monitor: val_acc, mode: max, patience: 1, min_delta: 1.0}\n"
    )
    assert cli_main(_fit(toy, "--config", str(stopper), "--trainer.max_epochs", "5")) == 0
    capsys.readouterr()
    (last,) = Path("runs").glob("lightning_logs/version_0/checkpoints/last.ckpt")
    steps = 2 * 6  # two epochs of 6 batches

    argv = _fit(
        toy, "--config", str(stopper), "--trainer.max_epochs", "5", "--ckpt_path", str(last)
    )
    assert cli_main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-2] == (
        f"nothing to train: {last} is the end of a finished run (epochs done: 2, steps: {steps}): "
        "early stopping ended it, val_acc not improving for 1 epochs (patience 1)"
    )
    assert out[-1].startswith("best checkpoint: ") and "(epoch 1, val_acc " in out[-1]
    assert [p.name for p in (tmp_path / "runs" / "lightning_logs").iterdir()] == ["version_0"]
