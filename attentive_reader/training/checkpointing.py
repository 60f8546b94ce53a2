"""``ReaderCheckpoint``: the training CLI's checkpoints (the best ``val_acc`` and ``last.ckpt``).

Lightning's ``ModelCheckpoint(save_last=True)`` rewrites ``last.ckpt`` only when it saves a
top-k file, so once the monitored metric stops improving ``last.ckpt`` keeps the best
epoch's weights: a resume from it (``--ckpt_path .../last.ckpt``) loses every later epoch,
and ``answer --ckpt .../last.ckpt`` loads an older reader than the one trained. Here
``last.ckpt`` is rewritten at every point where Lightning saves checkpoints (each validation
inside an epoch, each epoch's end, the end of training) whether or not the metric improved,
so it always holds the latest state; the top-k files are Lightning's as before.

``last.ckpt`` is also rewritten every ``last_every_minutes`` of training (default 10), after
a batch that no validation follows, so that a killed run loses minutes, not an epoch: a run
resumed from it goes on at the next batch of the same epoch (``data.batching.ResumableLoader``
and ``training.resume.ExactResume`` make it train as the interrupted run would have). Every
checkpoint is written beside its name and then renamed over it, so a run killed while saving
keeps the previous file whole.

Epochs are counted from 1 wherever a person reads them: ``{epoch}`` in a checkpoint's name
is the epoch it was saved in, 1-based (``best-epoch3-...``: the third epoch), as in the
lines ``fit`` prints; the checkpoint's own ``epoch`` key and the loggers' ``epoch`` column
stay Lightning's 0-based count.

When ``fit`` ends, rank 0 prints one line: the best checkpoint's path, its epoch and score
(and the same line, marked as the best so far, when ``fit`` is interrupted with Ctrl-C). A
run resumed from another run's checkpoint writes a folder of its own; the best checkpoint of
the run it resumed still counts. Resuming a run that has nothing left to train says so and
names its best checkpoint.

It relies on ``ModelCheckpoint``'s internals (``_save_last_checkpoint``,
``_should_skip_saving_checkpoint``, ``_should_save_on_train_epoch_end``,
``_last_global_step_saved``); ``tests/test_checkpointing.py`` holds the behaviour.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytorch_lightning as pl
from pytorch_lightning.callbacks import ModelCheckpoint

from attentive_reader.common.checkpoint_file import read_checkpoint
from attentive_reader.common.errors import UserError
from attentive_reader.common.fileio import replacing
from attentive_reader.training.stopping import ended_by_early_stopping


class ReaderCheckpoint(ModelCheckpoint):
    """Keep the best checkpoints by a metric, and a ``last.ckpt`` that is always the latest.

    The arguments are ``ModelCheckpoint``'s; the training CLI sets ``monitor: val_acc``,
    ``mode: max``, ``save_last: true`` (see ``training.py``).

    Args:
        save_last: ``True``: write ``last.ckpt`` at each validation and each epoch's end,
            whether or not the monitored metric improved, so that it holds the latest state
            (resume from it with ``--ckpt_path``); ``link``: Lightning's link to the latest
            top-k file instead; ``False``/``None``: no ``last.ckpt``.
        last_every_minutes: also rewrite ``last.ckpt`` after this many minutes of training
            since it was last written (``None``: only where Lightning saves; a fraction
            of a minute is allowed).
        **kwargs: ``ModelCheckpoint``'s other arguments.
    """

    def __init__(
        self,
        *args: Any,
        save_last: bool | str | None = None,
        last_every_minutes: float | None = 10.0,
        **kwargs: Any,
    ) -> None:
        if last_every_minutes is not None and not last_every_minutes > 0:
            raise ValueError(
                f"checkpoint.last_every_minutes must be a positive number of minutes or null "
                f"(never), got {last_every_minutes!r}"
            )
        super().__init__(*args, save_last=save_last, **kwargs)  # type: ignore[arg-type]
        self.last_every_minutes = last_every_minutes
        self._last_written = time.monotonic()
        self._steps_at_start: int | None = None
        # The best checkpoint of the run this one resumed, when it lies in another folder
        # (Lightning then keeps its path but not its score): (path, score).
        self._earlier_best: tuple[str, float] | None = None

    @property
    def state_key(self) -> str:
        # ModelCheckpoint's key, so that the runs saved before this class existed resume
        # with their best score.
        return super().state_key.replace(type(self).__qualname__, ModelCheckpoint.__qualname__, 1)

    def format_checkpoint_name(
        self, metrics: dict[str, Any], filename: str | None = None, **kwargs: Any
    ) -> str:
        """Lightning's, with ``{epoch}`` counted from 1."""
        if "epoch" in metrics:
            metrics = {**metrics, "epoch": metrics["epoch"] + 1}
        return super().format_checkpoint_name(metrics, filename, **kwargs)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        dirpath = state_dict.get("dirpath", self.dirpath)
        super().load_state_dict(state_dict)
        score = state_dict.get("best_model_score")
        if dirpath != self.dirpath and self.best_model_path and score is not None:
            self._earlier_best = (self.best_model_path, float(score))

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        super().on_train_start(trainer, pl_module)
        self._steps_at_start = trainer.global_step
        self._last_written = time.monotonic()

    def on_train_batch_end(
        self,
        trainer: pl.Trainer,
        pl_module: pl.LightningModule,
        outputs: Any,
        batch: Any,
        batch_idx: int,
    ) -> None:
        super().on_train_batch_end(trainer, pl_module, outputs, batch, batch_idx)
        if self.last_every_minutes is None or not self.save_last or self.save_last == "link":
            return
        if _not_saving(trainer) or not _between_batches(trainer, batch_idx):
            return
        due = time.monotonic() - self._last_written >= 60 * self.last_every_minutes
        if trainer.world_size > 1:  # every rank saves, or none: rank 0's clock decides
            due = trainer.strategy.broadcast(due, src=0)
        if not due:
            return
        self._save_last_checkpoint(trainer, self._monitor_candidates(trainer))

    def _save_checkpoint(self, trainer: pl.Trainer, filepath: str) -> None:
        """Lightning's save, written beside ``filepath`` and renamed over it (local files,
        ``fileio.replacing``): a run killed while saving keeps the previous checkpoint whole."""
        if "://" in str(filepath) or not trainer.is_global_zero:
            super()._save_checkpoint(trainer, filepath)  # other ranks write nothing
        else:
            with replacing(Path(filepath)) as partial:
                super()._save_checkpoint(trainer, str(partial))
            self._last_checkpoint_saved = filepath
        if os.path.basename(filepath).startswith(self.CHECKPOINT_NAME_LAST or "last"):
            self._last_written = time.monotonic()

    def on_validation_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        before = self._last_global_step_saved
        super().on_validation_end(trainer, pl_module)
        if not self._should_save_on_train_epoch_end(trainer):
            self._refresh_last(trainer, before)

    def on_train_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        before = self._last_global_step_saved
        super().on_train_epoch_end(trainer, pl_module)
        # Also after a save at this epoch's last validation: the reader has stepped its
        # learning-rate schedule since (models/schedules.py), and a resume from a checkpoint
        # of the epoch's end starts the next epoch with what it holds.
        self._refresh_last(trainer, before, again=True)

    def on_train_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if self.nothing_trained(trainer):
            return  # a resumed finished run: the checkpoint it resumed is its last
        super().on_train_end(trainer, pl_module)
        if self._last_global_step_saved != trainer.global_step:
            self._refresh_last(trainer, self._last_global_step_saved)

    def nothing_trained(self, trainer: pl.Trainer) -> bool:
        """Whether this ``fit`` took no training step (e.g. it resumed a finished run, and
        Lightning then skips training altogether)."""
        return self._steps_at_start is None or trainer.global_step == self._steps_at_start

    def on_fit_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if not trainer.is_global_zero or trainer.fast_dev_run:
            return
        if trainer.ckpt_path and self.nothing_trained(trainer):
            print(_finished_line(trainer), flush=True)
        print(self.best_line(), flush=True)

    def on_exception(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, exception: BaseException
    ) -> None:
        super().on_exception(trainer, pl_module, exception)
        interrupted = isinstance(exception, KeyboardInterrupt)
        if interrupted and trainer.is_global_zero and not trainer.fast_dev_run:
            print(f"interrupted; {self.best_line(so_far=True)}", flush=True)

    def best(self) -> tuple[str, float] | None:
        """``(path, score)`` of the best checkpoint so far, this run's or that of the run it
        resumed; ``None`` before the monitored metric was computed."""
        candidates = [] if self._earlier_best is None else [self._earlier_best]
        if self.best_model_path and self.best_model_score is not None:
            candidates.append((self.best_model_path, float(self.best_model_score)))
        if not candidates:
            return None
        pick = min if self.mode == "min" else max
        return pick(reversed(candidates), key=lambda candidate: candidate[1])

    def best_line(self, so_far: bool = False) -> str:
        """``best checkpoint: PATH (epoch E, val_acc A)`` (E counted from 1), or why there is
        none."""
        monitor = self.monitor or "the monitored metric"
        best = self.best()
        if best is None:
            last = f"; last checkpoint: {self.last_model_path}" if self.last_model_path else ""
            return f"no best checkpoint: {monitor} was never computed{last}"
        path, score = best
        epoch = _saved_epoch(path)
        where = "" if epoch is None else f"epoch {epoch + 1}, "
        label = "best checkpoint so far" if so_far else "best checkpoint"
        return f"{label}: {path} ({where}{monitor} {score:.4f})"

    def _refresh_last(self, trainer: pl.Trainer, before: int, again: bool = False) -> None:
        """Write ``last.ckpt`` now unless this hook already did, or nothing is to be saved."""
        if not self.save_last or self.save_last == "link" or _not_saving(trainer):
            return
        saved_here = before != trainer.global_step == self._last_global_step_saved
        if saved_here or (self._last_global_step_saved == trainer.global_step and not again):
            return
        self._save_last_checkpoint(trainer, self._monitor_candidates(trainer))


def _finished_line(trainer: pl.Trainer) -> str:
    """What a ``fit`` that resumed a finished run says instead of training."""
    done = trainer.current_epoch
    stopped = ended_by_early_stopping(trainer)
    if stopped is not None:
        return (
            f"nothing to train: {trainer.ckpt_path} is the end of a finished run (epochs done: "
            f"{done}, steps: {trainer.global_step}): early stopping ended it, {stopped.monitor} "
            f"not improving for {stopped.wait_count} epochs (patience {stopped.patience})"
        )
    limits = []
    if trainer.max_epochs is not None and trainer.max_epochs >= 0 and done >= trainer.max_epochs:
        limits.append(f"--trainer.max_epochs ({trainer.max_epochs})")
    if trainer.max_steps is not None and 0 <= trainer.max_steps <= trainer.global_step:
        limits.append(f"--trainer.max_steps ({trainer.max_steps})")
    stop = " or ".join(limits) or "a stopping option (early stopping, --trainer.max_time)"
    return (
        f"nothing to train: {trainer.ckpt_path} is the end of a finished run (epochs done: "
        f"{done}, steps: {trainer.global_step}); to train on, resume it with a larger {stop}"
    )


def _between_batches(trainer: pl.Trainer, batch_idx: int) -> bool:
    """Whether a checkpoint saved after this batch resumes exactly: not the epoch's last
    batch nor one that a validation follows (Lightning saves there itself), and not in the
    middle of accumulating gradients."""
    if (batch_idx + 1) % max(int(trainer.accumulate_grad_batches), 1):
        return False
    if batch_idx + 1 >= trainer.num_training_batches:
        return False
    loop = trainer.fit_loop.epoch_loop
    fetcher = getattr(trainer.fit_loop, "_data_fetcher", None)
    return fetcher is not None and not loop._should_check_val_fx(fetcher)


def _not_saving(trainer: pl.Trainer) -> bool:
    """Lightning saves nothing with ``fast_dev_run``, outside ``fit`` or in the sanity check."""
    from pytorch_lightning.trainer.states import TrainerFn

    return (
        bool(trainer.fast_dev_run)
        or trainer.state.fn != TrainerFn.FITTING
        or trainer.sanity_checking
        or trainer.global_step == 0
    )


def _saved_epoch(path: str) -> int | None:
    """The epoch a local checkpoint file records (read lazily: only that key)."""
    try:
        checkpoint: dict[str, Any] = read_checkpoint(path, "cpu", mmap=True)
    except UserError:  # a remote path, or a file gone: the line goes without the epoch
        return None
    epoch = checkpoint.get("epoch")
    return int(epoch) if isinstance(epoch, int) else None
