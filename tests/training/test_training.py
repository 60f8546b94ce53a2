"""The training CLI (``attentive-reader fit|validate|test|predict``), its configs, checkpoints,
resuming, bf16 and ``load_reader``."""

import csv
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

from attentive_reader.cli import main as cli_main
from attentive_reader.common.errors import UserError
from attentive_reader.corpus.synthetic.toy import write_toy_dataset
from attentive_reader.data.datamodule import ClozeDataModule
from attentive_reader.data.vocab import Vocabulary
from attentive_reader.models import AttentiveReader
from attentive_reader.models.loading import load_reader
from tests.trainers import KILLER, quiet_trainer

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = sorted(ROOT.glob("configs/**/*.yaml"))
READER_CONFIGS = [c for c in CONFIGS if c.parent == ROOT / "configs"]
BASE = ROOT / "configs" / "attentive_reader.yaml"
# Small enough for the CPU; the configs' own sizes are kept.
QUIET = ["--trainer.enable_progress_bar", "false", "--trainer.enable_model_summary", "false"]


@pytest.fixture(scope="module")
def toy(tmp_path_factory) -> str:
    directory = tmp_path_factory.mktemp("toy")
    return str(write_toy_dataset(directory, num_train=64, num_validation=32, num_test=32))


@pytest.fixture
def run_dir(tmp_path, monkeypatch) -> Path:
    # The CLI writes runs/ (and config.yaml inside it) relative to the working directory.
    monkeypatch.chdir(tmp_path)
    return tmp_path


def fit_args(toy: str, *extra: str) -> list[str]:
    return ["--data.path", toy, "--data.num_entities", "12", *QUIET, *extra]


def needs_gpu(config: Path) -> bool:
    trainer = (yaml.safe_load(config.read_text()) or {}).get("trainer") or {}
    return trainer.get("accelerator") in ("gpu", "cuda") and not torch.cuda.is_available()


def test_configs_are_found():
    names = {c.relative_to(ROOT / "configs").as_posix() for c in CONFIGS}
    assert {
        "attentive_reader.yaml",
        "impatient_reader.yaml",
        "deep_lstm_reader.yaml",
        "uniform_reader.yaml",
        "trainer/cpu_debug.yaml",
        "trainer/ddp_gpu.yaml",
        "trainer/multinode.yaml",
    } <= names


@pytest.mark.slow
@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.relative_to(ROOT).as_posix())
def test_every_shipped_config_runs(config, toy, run_dir, capsys):
    """Reader configs run alone; pieces (trainer/, logger/) run after the base reader config.
    Pieces that need GPUs are parsed (``--print_config``) where there are none."""
    configs = ["--config", str(config)]
    if config not in READER_CONFIGS:
        configs = ["--config", str(BASE), *configs]
    if needs_gpu(config):
        with pytest.raises(SystemExit) as info:
            cli_main(["fit", *configs, *fit_args(toy), "--print_config"])
        assert info.value.code == 0
        printed = yaml.safe_load(capsys.readouterr().out)
        expected = yaml.safe_load(config.read_text())["trainer"]
        assert {k: printed["trainer"][k] for k in expected} == expected
        assert printed["trainer"]["use_distributed_sampler"] is False
        return
    if config.parent.name == "logger":
        # fast_dev_run swaps loggers for a dummy: take two real steps and look for the logs.
        short = ["--trainer.max_steps", "2", "--trainer.limit_val_batches", "1"]
        assert cli_main(["fit", *configs, *fit_args(toy), *short]) == 0
        logger = yaml.safe_load(config.read_text())["trainer"]["logger"]["init_args"]
        assert any((run_dir / logger["save_dir"] / logger["name"]).rglob("*"))
        return
    args = ["fit", *configs, *fit_args(toy), "--trainer.fast_dev_run", "true"]
    assert cli_main([*args, "--trainer.accelerator", "cpu"]) == 0


def _checkpoints(run: Path) -> Path:
    (directory,) = run.glob("runs/lightning_logs/version_*/checkpoints")
    return directory


@pytest.mark.slow
def test_fit_writes_checkpoints_vocab_and_config_and_load_reader_round_trips(toy, run_dir):
    args = ["fit", "--config", str(BASE), *fit_args(toy), "--trainer.max_epochs", "2"]
    assert cli_main(args) == 0
    checkpoints = _checkpoints(run_dir)
    best = list(checkpoints.glob("best-*.ckpt"))
    assert (checkpoints / "last.ckpt").is_file() and len(best) == 1
    assert (checkpoints.parent / "config.yaml").is_file()
    assert not (run_dir / "config.yaml").exists()
    # The optimiser is recorded once, as reader arguments: in config.yaml and the checkpoint.
    config = yaml.safe_load((checkpoints.parent / "config.yaml").read_text())
    assert "optimizer" not in config and "lr_scheduler" not in config
    assert {k: config["model"]["init_args"][k] for k in ("optimizer", "lr")} == {
        "optimizer": "adam",
        "lr": 0.001,
    }
    stored = torch.load(best[0], weights_only=True)["hyper_parameters"]
    assert (stored["optimizer"], stored["lr"], stored["answer_layer"]) == ("adam", 0.001, "pointer")

    # The vocabulary: in the checkpoint and beside it, equal to the data's.
    vocab = Vocabulary.load(checkpoints / "vocab.json")
    assert vocab == ClozeDataModule(toy, num_entities=12).vocab
    data = ClozeDataModule.from_checkpoint(checkpoints / "last.ckpt")
    assert data.vocab == vocab and data.num_entities == 12 and str(data.path) == toy

    # load_reader: the right class, the stored weights, the same predictions.
    reader = load_reader(best[0])
    assert type(reader) is AttentiveReader and not reader.training
    state = torch.load(best[0], weights_only=True)["state_dict"]
    assert all(torch.equal(reader.state_dict()[k], v) for k, v in state.items())
    data.setup("validate")
    batch = next(iter(data.val_dataloader()))
    again = load_reader(best[0])
    torch.testing.assert_close(reader(batch).logits, again(batch).logits)

    # validate with --ckpt_path uses the checkpoint's vocabulary and reproduces its val_acc.
    score = float(best[0].stem.rsplit("-", 1)[1])
    logs = ["--trainer.logger", "CSVLogger", "--trainer.logger.save_dir", "val"]
    argv = ["validate", "--config", str(BASE), "--data.path", toy, *QUIET, *logs]
    assert cli_main([*argv, "--ckpt_path", str(best[0])]) == 0
    rows = _metrics(run_dir / "val")
    assert float(rows[-1]["val_acc"]) == pytest.approx(score, abs=1e-4)
    # test and predict run from the checkpoint too.
    for subcommand in ("test", "predict"):
        argv = [subcommand, "--config", str(BASE), "--data.path", toy, *QUIET]
        assert cli_main([*argv, "--ckpt_path", str(best[0])]) == 0


def _metrics(save_dir: Path) -> list[dict]:
    (path,) = save_dir.glob("**/metrics.csv")
    with path.open() as handle:
        return list(csv.DictReader(handle))


def test_fit_logs_its_wall_time_at_each_epoch_and_a_resume_goes_on_from_it(toy, run_dir):
    logs = ["--trainer.logger", "CSVLogger", "--trainer.logger.save_dir"]
    common = ["fit", "--config", str(BASE), *fit_args(toy)]
    assert cli_main([*common, "--trainer.max_epochs", "2", *logs, "first"]) == 0
    first = [float(r["train_wall_s"]) for r in _metrics(run_dir / "first") if r["train_wall_s"]]
    assert len(first) == 2 and 0 < first[0] < first[1]
    (last,) = (run_dir / "first").glob("**/last.ckpt")
    callbacks = torch.load(last, weights_only=True)["callbacks"]
    (state,) = [v for k, v in callbacks.items() if k.startswith("WallClock")]
    assert state["elapsed"] >= first[1]
    resume = ["--trainer.max_epochs", "3", "--ckpt_path", str(last), *logs, "resumed"]
    assert cli_main([*common, *resume]) == 0
    (third,) = [
        float(r["train_wall_s"]) for r in _metrics(run_dir / "resumed") if r["train_wall_s"]
    ]
    assert third > state["elapsed"]


@pytest.mark.slow
def test_killed_fit_resumes_from_the_saved_step(toy, run_dir):
    (run_dir / "killer.py").write_text(KILLER)
    common = [
        "--config",
        str(BASE),
        *fit_args(toy),
        "--data.batch_size",
        "8",
        # Validate (one batch) every 2 steps; each validation saves last.ckpt.
        "--trainer.val_check_interval",
        "2",
        "--trainer.limit_val_batches",
        "1",
    ]
    env = {**os.environ, "PYTHONPATH": f"{run_dir}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    kill = ["--trainer.callbacks+=killer.KillAtStep", "--trainer.callbacks.step", "5"]
    process = subprocess.run(
        [sys.executable, "-m", "attentive_reader.cli", "fit", *common, *kill],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert process.returncode == -signal.SIGKILL, process.stderr[-3000:]
    last = _checkpoints(run_dir) / "last.ckpt"
    assert torch.load(last, weights_only=True)["global_step"] == 4

    logs = ["--trainer.logger", "CSVLogger", "--trainer.logger.save_dir", "resumed"]
    resume = ["--trainer.max_steps", "9", "--trainer.log_every_n_steps", "1", *logs]
    assert cli_main(["fit", *common, *resume, "--ckpt_path", str(last)]) == 0
    rows = _metrics(run_dir / "resumed")
    trained = {int(row["step"]) for row in rows if row.get("train_loss_step")}
    # The resumed run trains steps 5..9 only (logged at 0-based steps 4..8), not 1..9.
    assert trained == {4, 5, 6, 7, 8}


@pytest.mark.slow
def test_bf16_mixed_precision_runs_on_cpu(toy, run_dir):
    args = ["fit", "--config", str(BASE), *fit_args(toy), "--trainer.fast_dev_run", "true"]
    assert cli_main([*args, "--trainer.precision", "bf16-mixed"]) == 0

    # The layers really run in bf16, and the loss stays finite.
    data = ClozeDataModule(toy, num_entities=12)
    reader = AttentiveReader(
        vocab_size=data.vocab_size, num_entities=data.num_entities, embedding_dim=16, hidden_dim=16
    )
    dtypes = []
    reader.answer.register_forward_hook(lambda module, inputs, out: dtypes.append(out.dtype))
    trainer = quiet_trainer(
        precision="bf16-mixed",
        fast_dev_run=True,
        use_distributed_sampler=False,
    )
    trainer.fit(reader, data)
    assert dtypes and set(dtypes) == {torch.bfloat16}
    assert torch.isfinite(trainer.callback_metrics["train_loss_step"])


def test_a_shipped_config_runs_fit_with_the_cpu_speedups_and_saves_them_in_its_config(
    toy, run_dir, monkeypatch
):
    """The config lists ``CpuSpeedups``: the run's saved config says so, its training loop
    keeps freed memory and flushes subnormal floats, its reader trains with the fast parts,
    and all is given back when ``fit`` ends."""
    from attentive_reader.cpu_speedups import CpuSpeedups, allocator, denormals
    from attentive_reader.cpu_speedups.dropout import FastDropout
    from attentive_reader.training.run import run_cli

    seen: list[tuple[bool, bool, type]] = []
    monkeypatch.setattr(
        AttentiveReader,
        "on_train_batch_start",
        lambda self, batch, batch_idx: seen.append(
            (allocator.kept(), denormals.flushed(), type(self.encoders.dropout))
        ),
    )
    cli = run_cli(["fit", "--config", str(BASE), *fit_args(toy), "--trainer.max_steps", "1"])
    assert len([c for c in cli.trainer.callbacks if isinstance(c, CpuSpeedups)]) == 1
    flushes = torch.set_flush_denormal(False)  # whether this CPU has the flags
    assert seen == [(allocator.GLIBC_SUPPORTED, flushes, FastDropout)]
    assert not allocator.kept() and not denormals.flushed()  # given back when fit ended
    assert type(cli.model.encoders.dropout) is torch.nn.Dropout  # swapped back at teardown
    (saved,) = run_dir.glob("runs/lightning_logs/version_*/config.yaml")
    callbacks = yaml.safe_load(saved.read_text())["trainer"]["callbacks"]
    assert [c["class_path"] for c in callbacks] == ["attentive_reader.cpu_speedups.CpuSpeedups"]


def test_unknown_subcommand_and_missing_data_are_clear_errors(run_dir, capsys):
    with pytest.raises(UserError, match="first argument"):
        from attentive_reader.commands.train import main

        main(["train"])
    assert cli_main(["fit", "--config", str(BASE), "--data.path", "nowhere"]) == 2
    assert "not a processed dataset directory" in capsys.readouterr().err


@pytest.mark.slow
def test_a_second_fit_on_a_run_folder_in_use_stops_before_writing(
    toy, run_dir, lock_holder, capsys
):
    version = run_dir / "runs" / "lightning_logs" / "version_0"
    first = lock_holder(version, "fit")  # a run started a moment earlier in the same folder
    args = ["fit", "--config", str(BASE), *fit_args(toy), "--trainer.max_steps", "1"]
    assert cli_main(args) == 2
    err = capsys.readouterr().err
    assert f"version_0 is in use by process {first.pid} (attentive-reader fit)" in err
    assert "Traceback" not in err and not version.exists()
    first.kill()
    first.wait()
    assert cli_main(args) == 0 and (version / "config.yaml").is_file()


def test_the_cli_optimizer_block_is_refused_with_the_reader_arguments_named(toy, run_dir, capsys):
    argv = ["fit", "--config", str(BASE), *fit_args(toy), "--optimizer", "torch.optim.Adam"]
    assert cli_main(argv) == 2
    error = capsys.readouterr().err
    assert "--optimizer: the optimiser is a reader argument" in error
    assert "--model.optimizer sgd|adam|rmsprop" in error and "Traceback" not in error
    assert not (run_dir / "runs").exists()


# Later papers' systems as published (docs/reproduce.md): no hand-made feature; Chen et al.
# relabel entities by first occurrence in each document.
PUBLISHED = {"chen_reader": "first_occurrence", "as_reader": "permute"}


def test_every_shipped_reader_config_permutes_entity_ids_and_the_demo_keeps_it():
    """Issue 11: the default configs learn under the paper's permutation; no piece turns it
    off, and no config fixes the entity-id count (the default block covers real news)."""
    for config in CONFIGS:
        data = (yaml.safe_load(config.read_text()) or {}).get("data") or {}
        assert "num_entities" not in data and "permute_entities" not in data, config
        policy = PUBLISHED.get(config.stem, "permute")
        if config in READER_CONFIGS:
            assert data["entity_ids"] == policy, config
        else:
            assert data.get("entity_ids", "permute") == policy, config
    for config in READER_CONFIGS:
        model = yaml.safe_load(config.read_text())["model"]["init_args"]
        paper = config.stem.endswith("_paper")
        assert (model["answer_layer"] == "output") == paper, config
        faithful = paper or config.stem in PUBLISHED
        assert bool(model.get("query_match", False)) != faithful, config


def test_every_real_news_config_has_its_reader_early_stopping_and_its_own_logs():
    """configs/real_news/NAME.yaml: a whole reader config that stops on val_acc and logs
    under runs/real_news/NAME, one for each system of the real-news table."""
    folder = ROOT / "configs" / "real_news"
    names = {c.stem for c in folder.glob("*.yaml")}
    assert {"attentive_reader", "attentive_reader_paper", "chen_reader", "as_reader"} <= names
    for config in sorted(folder.glob("*.yaml")):
        settings = yaml.safe_load(config.read_text())
        assert settings["model"]["class_path"].startswith("attentive_reader.models."), config
        stopping, speedups = settings["trainer"]["callbacks"]
        assert stopping["init_args"]["monitor"] == "val_acc", config
        assert speedups["class_path"] == "attentive_reader.cpu_speedups.CpuSpeedups", config
        logger = settings["trainer"]["logger"]["init_args"]
        assert (logger["save_dir"], logger["name"]) == ("runs/real_news", config.stem), config


def test_every_large_batch_config_is_its_real_news_config_at_batch_256_with_the_rate_scaled():
    """configs/large_batch/NAME.yaml: configs/real_news/NAME.yaml with batch 256, the rate
    scaled by sqrt(256 / batch), more epochs and patience, and its own logs; nothing else."""
    folder = ROOT / "configs" / "large_batch"
    names = sorted(c.stem for c in folder.glob("*.yaml"))
    assert names == ["attentive_reader", "gated_attention_reader"]
    for name in names:
        large = yaml.safe_load((folder / f"{name}.yaml").read_text())
        small = yaml.safe_load((ROOT / "configs" / "real_news" / f"{name}.yaml").read_text())
        assert large["data"].pop("batch_size") == 256
        scale = (256 / small["data"].pop("batch_size")) ** 0.5
        assert large["data"] == small["data"], name
        lr = large["model"]["init_args"].pop("lr")
        assert lr == pytest.approx(small["model"]["init_args"].pop("lr") * scale, rel=0.005), name
        assert large["model"] == small["model"], name
        trainer, before = large["trainer"], small["trainer"]
        assert trainer.pop("max_epochs") > before.pop("max_epochs")
        (stopping, _), (stopped, _) = trainer["callbacks"], before["callbacks"]
        assert stopping["init_args"].pop("patience") > stopped["init_args"].pop("patience")
        assert trainer.pop("logger")["init_args"] == {"save_dir": "runs/large_batch", "name": name}
        before.pop("logger")
        assert trainer == before, name
        assert large["checkpoint"] == small["checkpoint"], name
