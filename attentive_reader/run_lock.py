"""One training run per log folder: a ``Trainer`` that holds ``trainer.log_dir``'s lock.

Two ``attentive-reader fit`` runs that resolve to the same version folder (started at the
same moment, or one naming the version of a run still going) would write checkpoints, event
files and ``config.yaml`` over each other. ``LockingTrainer`` takes the folder's lock
(``faults.writing``) when ``fit`` / ``validate`` / ``test`` / ``predict`` is called, before
Lightning creates the logger's files (a callback's ``setup`` comes too late for that), so the
second run stops with one line naming the first one's process. The lock ends with the call.

Only the launching process of rank 0 locks: the other ranks of a DDP run (started with
``LOCAL_RANK`` / ``RANK`` / ``NODE_RANK`` set) write under its lock.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pytorch_lightning import Trainer
from pytorch_lightning.utilities import rank_zero_only

from attentive_reader.common.faults import writing


def _is_rank_zero() -> bool:
    return rank_zero_only.rank == 0 and os.environ.get("NODE_RANK", "0") == "0"


class LockingTrainer(Trainer):
    """A ``Trainer`` whose entry points hold the lock of the run's log folder."""

    @contextmanager
    def _folder_lock(self, stage: str) -> Iterator[None]:
        log_dir = self.log_dir if _is_rank_zero() else None
        if log_dir is None:
            yield
            return
        with writing(log_dir, stage):
            yield

    def fit(self, *args: Any, **kwargs: Any) -> None:
        """Train the reader (Lightning's ``Trainer.fit``), holding the run folder's lock."""
        with self._folder_lock("fit"):
            return super().fit(*args, **kwargs)

    def validate(self, *args: Any, **kwargs: Any) -> Any:
        """Validate a reader (Lightning's ``Trainer.validate``), holding the folder's lock."""
        with self._folder_lock("validate"):
            return super().validate(*args, **kwargs)

    def test(self, *args: Any, **kwargs: Any) -> Any:
        """Test a reader (Lightning's ``Trainer.test``), holding the folder's lock."""
        with self._folder_lock("test"):
            return super().test(*args, **kwargs)

    def predict(self, *args: Any, **kwargs: Any) -> Any:
        """Predict with a reader (Lightning's ``Trainer.predict``), holding the folder's lock."""
        with self._folder_lock("predict"):
            return super().predict(*args, **kwargs)
