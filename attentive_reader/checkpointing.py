"""``ReaderCheckpoint``: the training CLI's checkpoints (the best ``val_acc`` and ``last.ckpt``).

Lightning's ``ModelCheckpoint(save_last=True)`` rewrites ``last.ckpt`` only when it saves a
top-k file, so once the monitored metric stops improving ``last.ckpt`` keeps the best
epoch's weights: a resume from it (``--ckpt_path .../last.ckpt``) loses every later epoch,
and ``answer --ckpt .../last.ckpt`` loads an older reader than the one trained. Here
``last.ckpt`` is rewritten at every point where Lightning saves checkpoints (each validation
inside an epoch, each epoch's end, the end of training) whether or not the metric improved,
so it always holds the latest state; the top-k files are Lightning's as before.

When ``fit`` ends, rank 0 prints one line: the best checkpoint's path, its epoch and score
(and the same line, marked as the best so far, when ``fit`` is interrupted with Ctrl-C).

It relies on ``ModelCheckpoint``'s internals (``_save_last_checkpoint``,
``_should_skip_saving_checkpoint``, ``_should_save_on_train_epoch_end``,
``_last_global_step_saved``); ``tests/test_checkpointing.py`` holds the behaviour.
"""

from __future__ import annotations

from typing import Any

import pytorch_lightning as pl
from pytorch_lightning.callbacks import ModelCheckpoint

from attentive_reader.common.checkpoint_file import read_checkpoint
from attentive_reader.common.errors import UserError


class ReaderCheckpoint(ModelCheckpoint):
    """Keep the best checkpoints by a metric, and a ``last.ckpt`` that is always the latest.

    The arguments are ``ModelCheckpoint``'s; the training CLI sets ``monitor: val_acc``,
    ``mode: max``, ``save_last: true`` (see ``training.py``).

    Args:
        save_last: ``True``: write ``last.ckpt`` at each validation and each epoch's end,
            whether or not the monitored metric improved, so that it holds the latest state
            (resume from it with ``--ckpt_path``); ``link``: Lightning's link to the latest
            top-k file instead; ``False``/``None``: no ``last.ckpt``.
    """

    @property
    def state_key(self) -> str:
        # ModelCheckpoint's key, so that the runs saved before this class existed resume
        # with their best score.
        return super().state_key.replace(type(self).__qualname__, ModelCheckpoint.__qualname__, 1)

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
        super().on_train_end(trainer, pl_module)
        if self._last_global_step_saved != trainer.global_step:
            self._refresh_last(trainer, self._last_global_step_saved)

    def on_fit_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if trainer.is_global_zero and not trainer.fast_dev_run:
            print(self.best_line(), flush=True)

    def on_exception(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, exception: BaseException
    ) -> None:
        super().on_exception(trainer, pl_module, exception)
        interrupted = isinstance(exception, KeyboardInterrupt)
        if interrupted and trainer.is_global_zero and not trainer.fast_dev_run:
            print(f"interrupted; {self.best_line(so_far=True)}", flush=True)

    def best_line(self, so_far: bool = False) -> str:
        """``best checkpoint: PATH (epoch E, val_acc 0.6120)``, or why there is none."""
        monitor = self.monitor or "the monitored metric"
        if not self.best_model_path or self.best_model_score is None:
            last = f"; last checkpoint: {self.last_model_path}" if self.last_model_path else ""
            return f"no best checkpoint: {monitor} was never computed{last}"
        epoch = _saved_epoch(self.best_model_path)
        where = "" if epoch is None else f"epoch {epoch}, "
        label = "best checkpoint so far" if so_far else "best checkpoint"
        score = float(self.best_model_score)
        return f"{label}: {self.best_model_path} ({where}{monitor} {score:.4f})"

    def _refresh_last(self, trainer: pl.Trainer, before: int, again: bool = False) -> None:
        """Write ``last.ckpt`` now unless this hook already did, or nothing is to be saved."""
        if not self.save_last or self.save_last == "link" or _not_saving(trainer):
            return
        saved_here = before != trainer.global_step == self._last_global_step_saved
        if saved_here or (self._last_global_step_saved == trainer.global_step and not again):
            return
        self._save_last_checkpoint(trainer, self._monitor_candidates(trainer))


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
