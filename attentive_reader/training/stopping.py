"""``StopCleanly``: Lightning's stopping options with the shipped configs' early stopping.

- A run that reaches ``--trainer.max_steps`` in the middle of an epoch validates before it
  stops (as Lightning does when early stopping or ``--trainer.max_time`` stops it), so even
  ``fit --trainer.max_steps 3`` ends with a ``val_acc``, a best checkpoint and its line.
- A run that early stopping ended stays ended when resumed: Lightning restores the
  callback's count of epochs without improvement but not its decision, and would train one
  more epoch; ``fit --ckpt_path`` of such a checkpoint trains nothing and says why.
- Early stopping waits for its metric: an ``EarlyStopping`` callback whose metric has not
  been computed (no validation has run yet, or the run has no validation) skips its check
  with one line, instead of ending the run with Lightning's error.
"""

from __future__ import annotations

import pytorch_lightning as pl
from pytorch_lightning.callbacks import Callback, EarlyStopping


class StopCleanly(Callback):
    """Validate before a ``max_steps`` stop; let early stopping wait for its metric. The
    training commands add this callback."""

    def __init__(self) -> None:
        self._waiting: list[EarlyStopping] = []
        self._told: set[int] = set()

    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        if stage != "fit":
            return
        self._waiting = [c for c in trainer.callbacks if isinstance(c, EarlyStopping)]
        for callback in self._waiting:
            callback.strict = False  # a missing metric: skip the check (said below)

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if trainer.ckpt_path and ended_by_early_stopping(trainer) is not None:
            trainer.should_stop = True  # the fit loop ends before its first step

    def on_train_batch_end(
        self,
        trainer: pl.Trainer,
        pl_module: pl.LightningModule,
        outputs: object,
        batch: object,
        batch_idx: int,
    ) -> None:
        if 0 <= trainer.max_steps <= trainer.global_step and trainer.enable_validation:
            trainer.should_stop = True  # Lightning validates after this batch, then stops

    def on_train_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._tell_waiting(trainer)

    def on_validation_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if not trainer.sanity_checking:
            self._tell_waiting(trainer)

    def _tell_waiting(self, trainer: pl.Trainer) -> None:
        for callback in self._waiting:
            if callback.monitor in trainer.callback_metrics or id(callback) in self._told:
                continue
            self._told.add(id(callback))
            if trainer.is_global_zero:
                print(
                    f"early stopping waits: {callback.monitor} has not been computed (no "
                    f"validation has run yet in epoch {trainer.current_epoch + 1}); it "
                    "counts from the first validation on",
                    flush=True,
                )


def ended_by_early_stopping(trainer: pl.Trainer) -> EarlyStopping | None:
    """The ``EarlyStopping`` callback whose (restored) count of epochs without improvement
    has reached its patience, if any: the run it checkpointed had been ended by it."""
    for callback in trainer.callbacks:  # type: ignore[attr-defined]
        if isinstance(callback, EarlyStopping) and callback.wait_count >= callback.patience > 0:
            return callback
    return None
