"""Training through the Lightning CLI, as a library call: ``run_cli(["fit", "--config", ...])``.

Any ``ClozeReader`` subclass is a model (``model.class_path``), ``ClozeDataModule`` is the
data; the data module's vocabulary size and entity count are linked into the model's init
arguments, and ``--ckpt_path`` into the data module's ``checkpoint`` (whose vocabulary it then
reads the data with). The parsed config changes afterwards in two places only, both before
anything is built and recorded in the saved config: a ``--trainer.default_root_dir`` becomes
the logger's ``save_dir``, and a resumed run's ``--model.lr`` is put back over the
checkpoint's (Lightning lays the checkpoint's hyperparameters over the config). The optimiser and its
learning-rate schedule are reader arguments (``--model.optimizer``, ``--model.lr``,
``--model.lr_schedule``, ...): the CLI has no ``--optimizer`` / ``--lr_scheduler`` blocks, so
what trained a reader is recorded once, in its hyperparameters. Checkpoints
(``checkpointing.ReaderCheckpoint``, ``--checkpoint.*``) keep the best ``val_acc`` and a
``last.ckpt`` that always holds the latest state; ``fit`` ends with one line naming the best
checkpoint; ``vocab.json`` is written beside them. Early stopping is a callback a config adds
(``trainer.callbacks``: the paper configs do), and so are the CPU speed-ups
(``attentive_reader.cpu_speedups.CpuSpeedups``: every shipped reader config lists them). At the start of a ``fit`` on several processes
or with gradient accumulation, rank 0 prints the effective batch. ``predict`` writes
``predictions.jsonl`` (``predictions_writer``). The ``fit``, ``validate``, ``test`` and
``predict`` commands and the demo call ``run_cli``.

A user's mistakes end in one ``UserError`` line (``training_errors``): ``--config`` takes a
shipped config's name or a path, each read as YAML first; the parser's errors, a bad
``--ckpt_path`` and a trainer that cannot be built (a GPU config without a GPU) are told in
one line. A resumed run applies a changed ``--model.lr`` and refuses other changed reader
options. ``--trainer.default_root_dir`` wins over a logger config's ``save_dir``.
"""

from __future__ import annotations

import warnings
from typing import Any, NoReturn

from pytorch_lightning import Trainer
from pytorch_lightning.callbacks import Callback, ProgressBar
from pytorch_lightning.cli import LightningArgumentParser, LightningCLI
from pytorch_lightning.utilities import rank_zero_only
from pytorch_lightning.utilities.exceptions import MisconfigurationException

from attentive_reader.common.errors import UserError
from attentive_reader.common.upstream import on_subcommand_parser
from attentive_reader.data.datamodule import ClozeDataModule, VocabularyWriter
from attentive_reader.models.base import ClozeReader
from attentive_reader.training.checkpointing import ReaderCheckpoint
from attentive_reader.training.errors import (
    SPECIAL_CKPT_PATHS,
    ParserMistake,
    check_ckpt_path,
    checked_configs,
    given_model_options,
    misconfiguration_line,
    parser_error_line,
    quiet_lightning,
    resumed_model_options,
)
from attentive_reader.training.predictions_writer import PredictionsWriter
from attentive_reader.training.progress import ReaderProgressBar
from attentive_reader.training.resume import ExactResume
from attentive_reader.training.run_lock import LockingTrainer
from attentive_reader.training.shipped_configs import config_option_help
from attentive_reader.training.stopping import StopCleanly
from attentive_reader.training.wall_clock import WallClock

SUBCOMMANDS = ("fit", "validate", "test", "predict")
SUBCOMMAND_USAGE = (
    "%(prog)s --config CONFIG [--config CONFIG ...] --data.path DIR [--ckpt_path CKPT] "
    "[--SECTION.OPTION VALUE ...]"
)
DEFAULT_ROOT_DIR = "runs"


def _vocab_from_ckpt_path(ckpt_path: str | None) -> str | None:
    """The data module's ``vocab`` for a ``--ckpt_path``: the checkpoint's own vocabulary."""
    if ckpt_path is None or ckpt_path in SPECIAL_CKPT_PATHS:
        return None
    return ckpt_path


class ReaderArgumentParser(LightningArgumentParser):
    """The CLI's parser: ``ClozeDataModule``'s ``vocabulary`` (an object that
    ``from_checkpoint`` passes in hand, never a command-line value) is left out."""

    def add_class_arguments(
        self, class_type: Any, nested_key: str | None = None, *args: Any, **kwargs: Any
    ) -> list[str]:
        if isinstance(class_type, type) and issubclass(class_type, ClozeDataModule):
            kwargs["skip"] = {*(kwargs.get("skip") or ()), "vocabulary"}
        return super().add_class_arguments(class_type, nested_key, *args, **kwargs)

    def add_argument(self, *args: Any, **kwargs: Any) -> Any:
        """``--config``'s help names the shipped configs that it takes by name."""
        if "--config" in args:
            kwargs["help"] = config_option_help()
        return super().add_argument(*args, **kwargs)

    def error(self, message: str, ex: Exception | None = None) -> NoReturn:
        """A mistake in the arguments or configs: raised for ``run_cli`` to tell in one
        line, not printed after the usage (parsers that do not exit keep their error)."""
        if not self.exit_on_error:
            super().error(message, ex)
        parser = getattr(ex, "subcommand_parser", None) or self
        raise ParserMistake(message, parser.prog.replace(" [options]", ""))


@on_subcommand_parser
class ReaderCLI(LightningCLI):
    """The Lightning CLI with the links and callbacks the readers need."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("parser_class", ReaderArgumentParser)
        # A usage line that fits a screen (the parser's own lists every option).
        kwargs.setdefault(
            "parser_kwargs", {name: {"usage": SUBCOMMAND_USAGE} for name in SUBCOMMANDS}
        )
        super().__init__(*args, **kwargs)

    def add_arguments_to_parser(self, parser: LightningArgumentParser) -> None:
        parser.link_arguments(
            "data.vocab_size", "model.init_args.vocab_size", apply_on="instantiate"
        )
        parser.link_arguments(
            "data.num_entities", "model.init_args.num_entities", apply_on="instantiate"
        )
        parser.add_lightning_class_args(ReaderCheckpoint, "checkpoint")
        parser.add_lightning_class_args(ReaderProgressBar, "progress")
        parser.set_defaults(
            {
                "checkpoint.monitor": "val_acc",
                "checkpoint.mode": "max",
                "checkpoint.save_last": True,
                # {epoch} counts from 1 (ReaderCheckpoint); {step}: optimizer steps done
                "checkpoint.filename": "best-epoch{epoch}-step{step}-{val_acc:.4f}",
                "checkpoint.auto_insert_metric_name": False,
            }
        )

    def configure_subcommand_parser(self, parser: LightningArgumentParser, subcommand: str) -> None:
        """Evaluating or resuming a checkpoint reads the data with the checkpoint's
        vocabulary: a link from --ckpt_path, which exists only once the subcommand's
        arguments do (``upstream.on_subcommand_parser``)."""
        parser.link_arguments(
            "ckpt_path", "data.checkpoint", compute_fn=_vocab_from_ckpt_path, apply_on="parse"
        )

    def parse_arguments(self, parser: LightningArgumentParser, args: Any) -> None:
        """Parse, then refuse a ``--ckpt_path`` that is not a readable checkpoint before
        Lightning reads its hyperparameters (and the data module its vocabulary)."""
        super().parse_arguments(parser, args)
        subcommand = self.config.get("subcommand")
        self.given_model_options: dict[str, Any] = {}
        if subcommand:
            check_ckpt_path(self.config[subcommand].get("ckpt_path"))
            # Lightning then lays the checkpoint's hyperparameters over the config: what the
            # command line set is kept here for before_instantiate_classes to compare.
            self.given_model_options = given_model_options(args, self.config[subcommand])

    def before_fit(self) -> None:
        line = effective_batch_line(self.trainer, getattr(self.datamodule, "batch_size", None))
        if line is not None and rank_zero_only.rank == 0:
            print(line, flush=True)

    def before_instantiate_classes(self) -> None:
        config = self.config[self.subcommand] if self.subcommand else self.config
        _root_dir_wins(config.trainer)
        if config.get("ckpt_path") not in (None, *SPECIAL_CKPT_PATHS):
            resumed_model_options(config, self.given_model_options)

    def _instantiate_trainer(self, config: dict[str, Any], callbacks: list[Callback]) -> Trainer:
        # The progress bar (--progress.*) is a callback the CLI adds; Lightning refuses one
        # when the bar is off.
        if config.get("enable_progress_bar") is False:
            callbacks = [c for c in callbacks if not isinstance(c, ProgressBar)]
        return super()._instantiate_trainer(config, callbacks)


def _root_dir_wins(trainer: Any) -> None:
    """A ``--trainer.default_root_dir`` other than the default is where the run's logger
    writes too: a logger config's ``save_dir`` (``runs`` in ``trainer/cpu_debug``) would put
    its logs and checkpoints elsewhere. The saved config records the folder used."""
    root = trainer.get("default_root_dir")
    if not root or root == DEFAULT_ROOT_DIR:
        return
    loggers = trainer.get("logger")
    for logger in loggers if isinstance(loggers, list) else [loggers]:
        init_args = getattr(logger, "init_args", None)
        if init_args is not None and init_args.get("save_dir") is not None:
            init_args.save_dir = root


def effective_batch_line(trainer: Any, batch_size: int | None) -> str | None:
    """``effective batch: 256 examples per optimizer step = ...`` when ``fit`` runs on several
    processes or accumulates gradients (``None`` otherwise, or without a batch size).

    ``data.batch_size`` is per process: each optimizer step averages the gradients of
    ``batch_size x devices x nodes x accumulate_grad_batches`` examples.
    """
    devices, nodes = int(trainer.num_devices), int(trainer.num_nodes)
    accumulate = int(trainer.accumulate_grad_batches)
    if batch_size is None or devices * nodes * accumulate == 1:
        return None
    total = batch_size * devices * nodes * accumulate
    return (
        f"effective batch: {total} examples per optimizer step = data.batch_size {batch_size} "
        f"x {devices} devices x {nodes} nodes x trainer.accumulate_grad_batches {accumulate}"
    )


def run_cli(argv: list[str]) -> ReaderCLI:
    """Run the Lightning CLI on ``argv`` (``argv[0]`` is the subcommand) and return it.

    The returned CLI holds the trainer, model and data module (the demo reads the best
    checkpoint and tests through them).
    """
    if not argv or argv[0] not in SUBCOMMANDS:
        raise UserError(f"the first argument must be one of {', '.join(SUBCOMMANDS)}")
    for arg in argv:
        if arg.split("=", 1)[0].split(".", 1)[0] in ("--optimizer", "--lr_scheduler"):
            raise UserError(
                f"{arg}: the optimiser is a reader argument here, recorded in the checkpoint: "
                "use --model.optimizer sgd|adam|rmsprop, --model.lr, --model.weight_decay and "
                "--model.optimizer_options '{momentum: 0.9}' (a config's model.init_args)"
            )
    argv = checked_configs(argv)
    try:
        with quiet_lightning(), warnings.catch_warnings():
            # The console entry passes sys.argv[1:] as ``args``; Lightning warns about both.
            warnings.filterwarnings("ignore", message="LightningCLI's args parameter")
            return _reader_cli(argv)
    except ParserMistake as mistake:
        raise UserError(parser_error_line(mistake.message, mistake.prog, argv)) from None
    except MisconfigurationException as error:
        raise UserError(misconfiguration_line(error, argv)) from None


def _reader_cli(argv: list[str]) -> ReaderCLI:
    return ReaderCLI(
        ClozeReader,
        ClozeDataModule,
        subclass_mode_model=True,
        trainer_class=LockingTrainer,  # one run per log folder (run_lock.py)
        # One way to set the optimiser: the reader's own arguments (recorded in checkpoints).
        auto_configure_optimizers=False,
        args=argv,
        trainer_defaults={
            "default_root_dir": "runs",
            # The data module shards batches across ranks itself (BucketBatchSampler).
            "use_distributed_sampler": False,
            # The run's wall time logged at each epoch's end (wall_clock.py); predict's
            # answers in predictions.jsonl; a checkpoint saved inside an epoch resumed exactly
            # (resume.py); max_steps and early stopping without a crash (stopping.py). The
            # progress bar and the checkpoints are options (--progress.*, --checkpoint.*).
            # The CPU speed-ups are a callback the configs list (cpu_speedups.CpuSpeedups),
            # so a run's saved config says whether they were on.
            "callbacks": [
                VocabularyWriter(),
                WallClock(),
                PredictionsWriter(),
                ExactResume(),
                StopCleanly(),
            ],
        },
        # The resolved config is saved into the run's log directory (never ./config.yaml).
        save_config_kwargs={"overwrite": True},
    )
