"""Learning-rate schedules of the readers: ``constant``, ``plateau`` and ``decay``.

A schedule is a reader argument (``ClozeReader(lr_schedule=..., lr_factor=..., ...)``), so it
is recorded in the checkpoint's hyperparameters beside the optimiser, as the optimiser is.

- ``constant``: the learning rate never changes (the default; Chen et al. 2016's SGD and
  Kadlec et al. 2016's Adam keep theirs).
- ``plateau``: multiply the rate by ``lr_factor`` when ``val_acc`` has not improved for more
  than ``lr_patience`` validated epochs (``torch.optim.lr_scheduler.ReduceLROnPlateau``,
  mode ``max``), never below ``min_lr``.
- ``decay``: multiply the rate by ``lr_factor`` after every epoch from epoch
  ``lr_decay_start`` on (epochs counted from 0): with factor 0.5 and start 3, epochs 0-2 run
  at ``lr``, epoch 3 at ``lr / 2``, epoch 4 at ``lr / 4``, ... never below ``min_lr``. This
  is what the Gated-Attention Reader's code does (bdhingra/ga-reader, ``train.py``: ``if epoch
  >= 2: m.anneal()`` after each epoch; ``model/GAReader.py``: ``anneal`` halves the rate).

The schedule steps once per training epoch, in the reader's ``on_train_epoch_end``: after
the epoch's validation and before the epoch's checkpoints are written, so that ``last.ckpt``
holds the rate the next epoch trains with and a resumed run continues with it. (Lightning
itself steps epoch schedules after the checkpoint callbacks have saved, so a resume from an
end-of-epoch checkpoint would lose that epoch's step: Lightning-AI/pytorch-lightning#1772.)
"""

from __future__ import annotations

from typing import Any, Literal, get_args

import torch
from torch.optim.lr_scheduler import LRScheduler, ReduceLROnPlateau

LrScheduleName = Literal["constant", "plateau", "decay"]
LR_SCHEDULES: tuple[str, ...] = get_args(LrScheduleName)
#: The metric the ``plateau`` schedule follows (higher is better).
MONITOR = "val_acc"


def check_schedule(
    schedule: str, factor: float, patience: int, min_lr: float, decay_start: int
) -> None:
    """Raise a ``ValueError`` that says what to change when an option is out of range."""
    if schedule not in LR_SCHEDULES:
        raise ValueError(f"lr_schedule must be one of {', '.join(LR_SCHEDULES)}, got {schedule!r}")
    if not 0.0 < factor < 1.0:
        raise ValueError(f"lr_factor must be in (0, 1), e.g. 0.5 to halve, got {factor}")
    for name, value in (("lr_patience", patience), ("lr_decay_start", decay_start)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
    if min_lr < 0:
        raise ValueError(f"min_lr must be >= 0, got {min_lr}")


class EpochDecay(LRScheduler):
    """``lr * factor ** max(0, epoch - start + 1)``, at least ``min_lr``: the ``decay``
    schedule (one ``step()`` per finished epoch; its state is plain numbers, so checkpoints
    holding it load with ``weights_only=True``).

    Args:
        optimizer: the optimiser whose rate it sets.
        factor: the multiplier applied after each epoch from ``start`` on, in (0, 1).
        start: the first epoch (from 0) that runs at a decayed rate.
        min_lr: the smallest rate.
    """

    def __init__(
        self, optimizer: torch.optim.Optimizer, factor: float, start: int, min_lr: float = 0.0
    ) -> None:
        self.factor = factor
        self.start = start
        self.min_lr = min_lr
        super().__init__(optimizer)

    def get_lr(self) -> list[float]:
        """The rate of epoch ``last_epoch`` for every parameter group."""
        decays = max(0, self.last_epoch - self.start + 1)
        return [max(self.min_lr, base * self.factor**decays) for base in self.base_lrs]


def build_schedule(
    optimizer: torch.optim.Optimizer,
    schedule: LrScheduleName,
    *,
    factor: float,
    patience: int,
    min_lr: float,
    decay_start: int,
) -> dict[str, Any] | None:
    """Lightning's ``lr_scheduler`` entry for ``schedule`` (``None`` for ``constant``).

    Lightning saves and restores the scheduler's state with the checkpoint; the reader steps
    it (see the module docstring), so the entry's ``interval`` only describes it.
    """
    if schedule == "constant":
        return None
    if schedule == "plateau":
        scheduler: LRScheduler = ReduceLROnPlateau(
            optimizer, mode="max", factor=factor, patience=patience, min_lr=min_lr
        )
        # strict=False: before the first validation there is no val_acc to follow yet.
        return {"scheduler": scheduler, "monitor": MONITOR, "interval": "epoch", "strict": False}
    scheduler = EpochDecay(optimizer, factor, decay_start, min_lr)
    return {"scheduler": scheduler, "interval": "epoch"}


def step_schedule(scheduler: LRScheduler, validated: bool, metrics: dict[str, Any]) -> None:
    """Step ``scheduler`` at the end of a training epoch.

    Args:
        scheduler: the reader's scheduler.
        validated: whether a validation ran during this epoch (a ``plateau`` schedule only
            steps on a fresh ``val_acc``; epochs without validation leave it as it is).
        metrics: the trainer's ``callback_metrics``.
    """
    if isinstance(scheduler, ReduceLROnPlateau):
        value = metrics.get(MONITOR)
        if validated and value is not None:
            scheduler.step(float(value))
        return
    scheduler.step()
