"""The training CLI's checkpoints and schedules: ``last.ckpt`` holds the last epoch, a resume
from it continues there with the learning-rate schedule's state, early stopping from the
paper configs, the best-checkpoint line and the effective-batch line.

The runs read a dataset whose validation questions have one candidate each: ``val_acc`` is
exactly 1.0 after every epoch, so it never improves after the first, deterministically,
while the weights keep changing."""

from __future__ import annotations

import csv
import random
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from attentive_reader.cli import main as cli_main
from attentive_reader.corpus.records import ClozeExample
from attentive_reader.corpus.synthetic.examples import write_examples
from attentive_reader.training.run import effective_batch_line, run_cli

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
QUIET = ["--trainer.enable_progress_bar", "false", "--trainer.enable_model_summary", "false"]
TINY = ["--model.init_args.embedding_dim", "8", "--model.init_args.hidden_dim", "8"]
STEPS_PER_EPOCH = 3  # 24 training questions in batches of 8


def _question(number: int, entities: int, rng: random.Random) -> ClozeExample:
    markers = [f"@entity{k}" for k in range(entities)]
    context: list[str] = []
    for marker in markers:
        context += [marker, rng.choice(["met", "saw", "left", "joined"]), "the", "club", "."]
    return ClozeExample(
        id=f"q{number}",
        story_id=f"s{number}",
        context=tuple(context),
        query=("@placeholder", "met", "the", "club"),
        answer=rng.choice(markers),
        candidates=tuple(markers),
        entities={marker: marker for marker in markers},
    )


@pytest.fixture(scope="module")
def flat(tmp_path_factory) -> str:
    """24 training questions with 3 candidates; validation and test with one candidate."""
    rng = random.Random(0)
    train = [_question(i, 3, rng) for i in range(24)]
    single = [_question(100 + i, 1, rng) for i in range(8)]
    path = tmp_path_factory.mktemp("flat") / "data"
    splits = {"train": train, "validation": single, "test": single}
    write_examples(path, splits, source="flat validation", options={})
    return str(path)


def _fit_args(data: str, config: str, logs: str, *extra: str) -> list[str]:
    return [
        "fit",
        "--config", str(ROOT / "configs" / f"{config}.yaml"),
        "--data.path", data,
        "--data.batch_size", "8",
        *TINY, *QUIET,
        "--trainer.logger", "CSVLogger",
        "--trainer.logger.save_dir", logs,
        *extra,
    ]  # fmt: skip


def _epochs(save_dir: Path) -> dict[int, dict[str, str]]:
    """Epoch -> its logged values (the train row and the validation row merged)."""
    (path,) = save_dir.glob("**/metrics.csv")
    merged: dict[int, dict[str, str]] = {}
    with path.open() as handle:
        for row in csv.DictReader(handle):
            merged.setdefault(int(row["epoch"]), {}).update({k: v for k, v in row.items() if v})
    return merged


def test_last_ckpt_holds_the_last_epoch_and_a_resume_continues_there(
    flat, tmp_path, monkeypatch, capsys
):
    """The hard-attention reader (its own training step and entropy schedule) with the
    plateau schedule: val_acc is flat from epoch 0 on, so the best checkpoint is epoch 0's
    while last.ckpt must be epoch 2's, with the schedule's state after epoch 2."""
    monkeypatch.chdir(tmp_path)
    schedule = ["--model.init_args.lr_schedule", "plateau", "--model.init_args.lr_patience", "0"]
    args = _fit_args(flat, "hard_attention_reader", "first", *schedule)
    cli = run_cli([*args, "--trainer.max_epochs", "3"])
    directory = Path(cli.trainer.checkpoint_callback.dirpath)
    last = torch.load(directory / "last.ckpt", weights_only=True)
    assert (last["epoch"], last["global_step"]) == (2, 3 * STEPS_PER_EPOCH)
    final = cli.model.state_dict()
    assert last["state_dict"].keys() == final.keys()
    assert all(torch.equal(last["state_dict"][k], v) for k, v in final.items())
    (best,) = directory.glob("best-*.ckpt")
    assert torch.load(best, weights_only=True)["global_step"] == STEPS_PER_EPOCH
    # The one line fit ends with names the best checkpoint, which exists.
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert line == f"best checkpoint: {best} (epoch 1, val_acc 1.0000)"
    assert best.name.startswith("best-epoch1-step3-")  # 1-based, as the line says
    # Halved after epoch 1 (no better than epoch 0) and after epoch 2: epoch 3's rate is saved.
    rates = [float(_epochs(tmp_path / "first")[e]["lr"]) for e in range(3)]
    assert rates == pytest.approx([1e-3, 1e-3, 5e-4])
    assert last["optimizer_states"][0]["param_groups"][0]["lr"] == pytest.approx(2.5e-4)
    record = last["provenance"]
    assert (record["epoch"], record["global_step"], record["val_acc"]) == (2, 9, 1.0)
    assert record["best_val_acc"] == 1.0 and record["data"]["exclusive_frequency"] == 1.0

    resume = _fit_args(flat, "hard_attention_reader", "resumed", *schedule)
    resume += ["--trainer.max_epochs", "4", "--ckpt_path", str(directory / "last.ckpt")]
    assert cli_main(resume) == 0
    epochs = _epochs(tmp_path / "resumed")
    assert list(epochs) == [3]  # epoch 3 only, at the rate the schedule had reached
    assert float(epochs[3]["lr"]) == pytest.approx(2.5e-4)
    (resumed,) = (tmp_path / "resumed").glob("**/last.ckpt")
    assert torch.load(resumed, weights_only=True)["global_step"] == 4 * STEPS_PER_EPOCH


def test_a_paper_config_halves_the_rate_then_stops_early(flat, tmp_path, monkeypatch, capsys):
    """attentive_reader_paper.yaml on a flat val_acc: halved after epoch 1, stopped after
    epoch 2 (patience 2) although max_epochs is 10; last.ckpt is epoch 2."""
    monkeypatch.chdir(tmp_path)
    assert cli_main(_fit_args(flat, "attentive_reader_paper", "paper")) == 0
    epochs = _epochs(tmp_path / "paper")
    assert list(epochs) == [0, 1, 2]
    assert [float(epochs[e]["lr"]) for e in epochs] == pytest.approx([5e-5, 5e-5, 2.5e-5])
    (last,) = tmp_path.glob("paper/**/last.ckpt")
    assert torch.load(last, weights_only=True)["epoch"] == 2
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("best checkpoint: ")


def test_fit_prints_the_effective_batch_with_accumulation(flat, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    args = _fit_args(flat, "attentive_reader", "accumulated", "--trainer.fast_dev_run", "true")
    assert cli_main([*args, "--trainer.accumulate_grad_batches", "2"]) == 0
    assert (
        "effective batch: 16 examples per optimizer step = data.batch_size 8 x 1 devices "
        "x 1 nodes x trainer.accumulate_grad_batches 2"
    ) in capsys.readouterr().out


def test_the_effective_batch_of_the_multinode_layout():
    trainer = SimpleNamespace(num_devices=8, num_nodes=2, accumulate_grad_batches=1)
    assert effective_batch_line(trainer, 32).startswith("effective batch: 512 examples")
    one = SimpleNamespace(num_devices=1, num_nodes=1, accumulate_grad_batches=1)
    assert effective_batch_line(one, 32) is None  # nothing to say on one process


def test_the_best_line_on_ctrl_c_and_without_a_validation(tmp_path, capsys):
    from attentive_reader.training.checkpointing import ReaderCheckpoint

    callback = ReaderCheckpoint(monitor="val_acc", mode="max", save_last=True)
    trainer = SimpleNamespace(is_global_zero=True, fast_dev_run=False)
    callback.last_model_path = str(tmp_path / "last.ckpt")
    callback.on_exception(trainer, None, KeyboardInterrupt())
    assert capsys.readouterr().out == (
        f"interrupted; no best checkpoint: val_acc was never computed; last checkpoint: "
        f"{tmp_path / 'last.ckpt'}\n"
    )
    best = tmp_path / "best.ckpt"
    torch.save({"epoch": 4, "global_step": 40}, best)
    callback.best_model_path, callback.best_model_score = str(best), torch.tensor(0.6125)
    callback.on_exception(trainer, None, KeyboardInterrupt())
    callback.on_exception(trainer, None, ValueError("not an interruption: no line"))
    # The file's epoch key is Lightning's 0-based count; the line counts from 1.
    expected = f"interrupted; best checkpoint so far: {best} (epoch 5, val_acc 0.6125)\n"
    assert capsys.readouterr().out == expected


def test_a_resumed_run_in_a_new_folder_keeps_the_best_of_the_run_it_resumed(tmp_path):
    """Lightning keeps only the path of a best checkpoint saved in another folder; its score
    is kept here, and the better of it and this run's best is the best."""
    from attentive_reader.training.checkpointing import ReaderCheckpoint

    earlier = tmp_path / "version_0" / "best.ckpt"
    earlier.parent.mkdir()
    torch.save({"epoch": 8, "global_step": 90}, earlier)
    callback = ReaderCheckpoint(dirpath=str(tmp_path / "version_1"), monitor="val_acc", mode="max")
    state = {"dirpath": str(earlier.parent), "best_model_path": str(earlier)}
    callback.load_state_dict({**state, "best_model_score": torch.tensor(0.4023)})
    assert callback.best_line() == f"best checkpoint: {earlier} (epoch 9, val_acc 0.4023)"
    worse = tmp_path / "version_1" / "worse.ckpt"
    callback.best_model_path, callback.best_model_score = str(worse), torch.tensor(0.39)
    assert callback.best() == (str(earlier), pytest.approx(0.4023))
    callback.best_model_score = torch.tensor(0.41)
    assert callback.best() == (str(worse), pytest.approx(0.41))
