"""One training run per log folder: a Lightning callback holding ``trainer.log_dir``'s lock.

Two ``attentive-reader fit`` runs that resolve to the same version folder (started at the
same moment, or one naming the version of a run still going) would write checkpoints and
``config.yaml`` over each other. ``RunFolderLock`` takes the folder's lock
(``faults.writing``) in ``setup``, before Lightning writes anything there, so the second run
stops with one line naming the first one's process; the lock ends with the run.
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any

from pytorch_lightning import Callback, LightningModule, Trainer

from attentive_reader.faults import writing


class RunFolderLock(Callback):
    """Holds the lock of the run's log folder from ``setup`` to ``teardown`` (rank 0 only)."""

    def __init__(self) -> None:
        self._held: ExitStack | None = None

    def setup(self, trainer: Trainer, pl_module: LightningModule, stage: str) -> None:
        log_dir = trainer.log_dir  # a collective under DDP: every rank asks
        if self._held is not None or not trainer.is_global_zero or log_dir is None:
            return
        held = ExitStack()
        held.enter_context(writing(log_dir, stage))
        self._held = held

    def _release(self) -> None:
        if self._held is not None:
            self._held.close()
            self._held = None

    def teardown(self, trainer: Trainer, pl_module: LightningModule, stage: str) -> None:
        self._release()

    def on_exception(self, trainer: Trainer, pl_module: LightningModule, exception: Any) -> None:
        self._release()
