"""One training run per log folder: a ``Trainer`` that holds ``trainer.log_dir``'s lock.

Two ``attentive-reader fit`` runs that resolve to the same version folder (started at the
same moment, or one naming the version of a run still going) would write checkpoints, event
files and ``config.yaml`` over each other. ``LockingTrainer`` takes the folder's lock
(``faults.writing``) when ``fit`` / ``validate`` / ``test`` / ``predict`` is called, before
Lightning creates the logger's files (a callback's ``setup`` comes too late for that), so the
second run stops with one line naming the first one's process. The lock ends with the call.

Only the launching process of rank 0 locks: the other ranks of a DDP run (started with
``LOCAL_RANK`` / ``RANK`` / ``NODE_RANK`` set) write under its lock.

A ``fit`` that leaves nothing in its version folder (it failed before a checkpoint or a
logged metric, or it resumed a finished run and trained no step) removes the folder, so that
``runs/`` holds runs, not the settings of runs that never were.
"""

from __future__ import annotations

import os
import shutil
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
        """Train the reader (Lightning's ``Trainer.fit``), holding the run folder's lock; a
        version folder left with nothing in it is removed."""
        # Asked before fit: under DDP the folder's name is broadcast, which cannot happen
        # once the ranks are gone.
        log_dir = self.log_dir if _is_rank_zero() and self.loggers else None
        try:
            with self._folder_lock("fit"):
                return super().fit(*args, **kwargs)
        finally:
            self._drop_empty_run_folder(log_dir)

    def _drop_empty_run_folder(self, log_dir: str | None) -> None:
        if log_dir is None or not os.path.isdir(log_dir):
            return
        checkpoint = self.checkpoint_callback
        idle = bool(getattr(checkpoint, "nothing_trained", lambda trainer: False)(self))
        folders = [log_dir, getattr(checkpoint, "dirpath", None)]
        if any(folder and _holds_results(folder, idle) for folder in folders):
            return
        shutil.rmtree(log_dir, ignore_errors=True)

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


# What every run writes when it starts, before it has trained anything.
_SETTINGS = {"config.yaml", "hparams.yaml", "vocab.json", "pipeline.json"}


def _holds_results(folder: str, idle: bool) -> bool:
    """Whether ``folder`` holds a checkpoint or logged metrics (a header-only
    ``metrics.csv`` is none; an idle run's event files are its settings only)."""
    for root, _, files in os.walk(folder):
        for name in files:
            path = os.path.join(root, name)
            if name in _SETTINGS or (idle and name.startswith("events.out.tfevents")):
                continue
            if name == "metrics.csv" and _lines(path) <= 1:
                continue
            return True
    return False


def _lines(path: str) -> int:
    with open(path, encoding="utf-8", errors="replace") as handle:
        return sum(1 for line in handle if line.strip())
