"""``ReaderProgressBar``: the training commands' progress, readable on a terminal and in a log.

On a terminal it is Lightning's Rich bar (batches done of the total, time taken and left,
batches per second), with epochs counted from 1 (``Epoch 3/10`` is the third of ten). When
the output is not a terminal (``fit > log 2>&1``, a batch job), a bar would print nothing
until it ends; the same callback writes plain lines instead, flushed as they come:

- when training starts: the batches of an epoch, the epochs, where the checkpoints go;
- every ``every_minutes`` inside an epoch: the batch of the total, the running loss, the
  rate and the time left in the epoch;
- after each epoch: its training loss, ``val_acc`` (with the data's exclusive-frequency
  baseline when the dataset records one), the minutes it took, the best checkpoint so far
  and where ``last.ckpt`` is.

``--progress.style bar|lines|auto`` picks the form (``auto``: bars on a terminal),
``--progress.every_minutes`` the spacing of the lines; ``--trainer.enable_progress_bar
false`` turns both off.
"""

from __future__ import annotations

import sys
import time
from typing import Any, Literal

import pytorch_lightning as pl
from pytorch_lightning.callbacks import RichProgressBar

from attentive_reader.common.durations import duration as _duration

ProgressStyle = Literal["auto", "bar", "lines"]


class ReaderProgressBar(RichProgressBar):
    """Rich's bars on a terminal, plain lines in a log (module docstring).

    Args:
        style: ``bar``, ``lines``, or ``auto`` (bars when standard output is a terminal).
        every_minutes: in lines, the minutes between two lines inside an epoch.
        **kwargs: ``RichProgressBar``'s arguments (``refresh_rate``, ``leave``, ...).
    """

    def __init__(
        self, style: ProgressStyle = "auto", every_minutes: float = 5.0, **kwargs: Any
    ) -> None:
        if style not in ("auto", "bar", "lines"):
            raise ValueError(f"progress.style must be auto, bar or lines, got {style!r}")
        if not every_minutes > 0:
            raise ValueError(f"progress.every_minutes must be positive, got {every_minutes!r}")
        super().__init__(**kwargs)
        self.style = style
        self.every_minutes = every_minutes
        self.lines = False
        self._epoch_started = 0.0
        self._first_batch: int | None = None  # this process's first batch of the epoch
        self._last_line = 0.0
        self._pending: tuple[int, float] | None = None  # (epoch, seconds): its line to print

    # --- which form ------------------------------------------------------------------------

    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        super().setup(trainer, pl_module, stage)
        self.lines = self.style == "lines" or (self.style == "auto" and not _on_terminal())
        if self.lines:
            self.disable()  # the Rich part draws nothing

    def _get_train_description(self, current_epoch: int) -> str:
        description = f"Epoch {current_epoch + 1}"
        if self.trainer.max_epochs is not None and self.trainer.max_epochs > 0:
            description += f"/{self.trainer.max_epochs}"
        if len(self.validation_description) > len(description):
            description = f"{description:{len(self.validation_description)}}"
        return description

    # --- lines -----------------------------------------------------------------------------

    def _say(self, trainer: pl.Trainer, line: str) -> None:
        if self.lines and trainer.is_global_zero:
            print(line, flush=True)

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        super().on_train_start(trainer, pl_module)
        # A run resumed in the middle of an epoch starts there, without an epoch start.
        self._epoch_started = self._last_line = time.monotonic()
        self._first_batch = None
        if not self.lines:
            return
        epochs = f" of {trainer.max_epochs}" if (trainer.max_epochs or 0) > 0 else ""
        steps = f", at most {trainer.max_steps} steps" if trainer.max_steps >= 0 else ""
        where = _checkpoint_folder(trainer)
        resumed = f"; resumed from {trainer.ckpt_path}" if trainer.ckpt_path else ""
        done = trainer.fit_loop.epoch_loop.batch_progress.current.processed
        if trainer.ckpt_path and 0 < done < self.total_train_batches:
            resumed += f" after batch {done}"
        self._say(
            trainer,
            f"training: {self.total_train_batches} batches an epoch, epoch "
            f"{trainer.current_epoch + 1}{epochs}{steps}; checkpoints in {where}{resumed}",
        )

    def on_train_epoch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        super().on_train_epoch_start(trainer, pl_module)
        self._flush(trainer)
        self._epoch_started = self._last_line = time.monotonic()
        self._first_batch = None

    def on_train_batch_end(
        self,
        trainer: pl.Trainer,
        pl_module: pl.LightningModule,
        outputs: Any,
        batch: Any,
        batch_idx: int,
    ) -> None:
        super().on_train_batch_end(trainer, pl_module, outputs, batch, batch_idx)
        if not self.lines:
            return
        if self._first_batch is None:
            self._first_batch = batch_idx
        now = time.monotonic()
        if now - self._last_line < 60 * self.every_minutes:
            return
        self._last_line = now
        done, total = batch_idx + 1, self.total_train_batches
        rate = (done - self._first_batch) / max(now - self._epoch_started, 1e-9)
        left = f", {_duration((total - done) / rate)} left in the epoch" if rate > 0 else ""
        loss = _number(trainer.callback_metrics.get("train_loss_step"))
        self._say(
            trainer,
            f"epoch {trainer.current_epoch + 1}{self._of_epochs(trainer)}: batch {done}/{total}, "
            f"train_loss {loss}, {rate:.2f} batches/s{left}",
        )

    def on_train_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        super().on_train_epoch_end(trainer, pl_module)
        if self.lines:
            # Printed once the epoch's checkpoints are written (the next epoch's start, or the
            # end of training): they come after this hook.
            self._pending = (trainer.current_epoch, time.monotonic() - self._epoch_started)

    def on_train_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._flush(trainer)
        super().on_train_end(trainer, pl_module)

    def on_exception(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, exception: BaseException
    ) -> None:
        self._flush(trainer)
        super().on_exception(trainer, pl_module, exception)

    def _of_epochs(self, trainer: pl.Trainer) -> str:
        return f"/{trainer.max_epochs}" if (trainer.max_epochs or 0) > 0 else ""

    def _flush(self, trainer: pl.Trainer) -> None:
        pending, self._pending = self._pending, None
        if pending is None:
            return
        epoch, seconds = pending
        metrics = trainer.callback_metrics
        figures = f"train_loss {_number(metrics.get('train_loss_epoch'))}"
        if "val_acc" in metrics:
            figures += f", val_acc {_number(metrics['val_acc'])}{_baseline(trainer)}"
        parts = [figures]
        checkpoint = trainer.checkpoint_callback
        best = getattr(checkpoint, "best_line", None)
        if best is not None:
            parts.append(best(so_far=True))
        last = getattr(checkpoint, "last_model_path", "")
        if last:
            parts.append(f"last checkpoint: {last}")
        self._say(
            trainer,
            f"epoch {epoch + 1}{self._of_epochs(trainer)} done in {_duration(seconds)}: "
            + "; ".join(parts),
        )


def _on_terminal() -> bool:
    return sys.stdout.isatty()


def _number(value: Any) -> str:
    return "n/a" if value is None else f"{float(value):.4f}"


def _baseline(trainer: pl.Trainer) -> str:
    """`` (exclusive-frequency baseline 0.3100)`` when the data module knows it."""
    provenance = getattr(getattr(trainer, "datamodule", None), "provenance", None)
    if provenance is None:
        return ""
    baseline = provenance().get("exclusive_frequency")
    return "" if baseline is None else f" (exclusive-frequency baseline {baseline:.4f})"


def _checkpoint_folder(trainer: pl.Trainer) -> str:
    checkpoint = trainer.checkpoint_callback
    return str(getattr(checkpoint, "dirpath", None) or trainer.default_root_dir)
