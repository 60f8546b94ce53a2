"""The wall time a training run has spent, logged at the end of every epoch.

``train_wall_s`` is the time spent in ``fit``'s epochs (training and validation) since the run
began, across resumes: the count travels in the checkpoint, so a run resumed from its
``last.ckpt`` goes on from the time its checkpoint holds (the work done after that checkpoint,
which the resumed run repeats, is not counted twice). With the CSV logger it is a column of
``metrics.csv`` beside ``val_acc``, which is how ``attentive-reader curves`` gives the time
per epoch and the time to the best validation accuracy.
"""

from __future__ import annotations

import time
from typing import Any

import pytorch_lightning as pl
from pytorch_lightning.callbacks import Callback

METRIC = "train_wall_s"


class WallClock(Callback):
    """Log ``train_wall_s``, the run's wall time so far, when each training epoch ends. The
    training commands add this callback."""

    def __init__(self) -> None:
        self.counted = 0.0  # seconds of earlier epochs (and of the run this one resumes)
        self.since: float | None = None  # when the current epoch began

    def elapsed(self) -> float:
        """Seconds so far, the running epoch included."""
        running = 0.0 if self.since is None else time.monotonic() - self.since
        return self.counted + running

    def on_train_epoch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self.since = time.monotonic()

    def on_train_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        # Validation has run by now (Lightning validates before this hook), so an epoch's
        # figure includes it; the checkpoint saved after validation holds elapsed() at that time.
        pl_module.log(METRIC, self.elapsed(), on_epoch=True, rank_zero_only=True)
        self.counted = self.elapsed()
        self.since = None

    def state_dict(self) -> dict[str, Any]:
        return {"elapsed": self.elapsed()}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.counted = float(state_dict.get("elapsed", 0.0))
        self.since = None
