"""``ExactResume``: what a checkpoint saved in the middle of an epoch needs besides the
weights, the optimiser, the schedule and the loader's place, so that the resumed run trains
and logs as the interrupted one would have.

- The global random states (torch, CUDA, NumPy, Python: dropout draws from them), restored
  when the resumed run starts training. The data loaders draw their seeds from generators of
  their own (``ClozeDataModule``), so nothing between the save and the next batch moves them.
- The epoch's running training figures: Lightning keeps the sums behind an epoch's logged
  means (``train_loss_epoch``) and the states of the torchmetrics it logs (``train_acc``) in
  memory only. They are stored, and added back once the resumed run has logged its first
  batch of that epoch, so the epoch's figures cover the whole epoch, not the part after the
  resume.

Nothing is restored when the run resumes at the start of an epoch (a checkpoint of an
epoch's end) or elsewhere than where the checkpoint was saved. It relies on Lightning's
``_ResultCollection`` (``trainer.fit_loop.epoch_loop._results``) and its ``_ResultMetric``
sums; ``tests/training/test_resume.py`` holds the behaviour (a run killed with ``kill -9``
in the middle of an epoch resumes to an uninterrupted run's weights and figures).
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytorch_lightning as pl
import torch
from pytorch_lightning.callbacks import Callback
from pytorch_lightning.trainer.states import TrainerFn
from torchmetrics import Metric


class ExactResume(Callback):
    """Store the random states and the epoch's running training figures in checkpoints, and
    put them back when a run resumes in the middle of an epoch. The training commands add
    this callback."""

    def __init__(self) -> None:
        self._trainer: pl.Trainer | None = None
        self._saved: dict[str, Any] | None = None  # loaded from a checkpoint, not yet applied
        self._sums: dict[str, dict[str, torch.Tensor]] | None = None  # to add after a batch

    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        self._trainer = trainer

    def state_dict(self) -> dict[str, Any]:
        trainer = self._trainer
        if trainer is None or trainer.state.fn != TrainerFn.FITTING:
            return {}
        loop = trainer.fit_loop.epoch_loop
        return {
            "epoch": trainer.current_epoch,
            "batches": loop.batch_progress.current.processed,
            "random": _random_states(),
            "sums": _running_sums(loop._results),
            "metrics": _metric_states(loop._results, trainer.lightning_module),
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._saved = state_dict or None

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if self._saved is not None and "random" in self._saved:
            _set_random_states(self._saved["random"])

    def on_train_batch_start(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, batch: Any, batch_idx: int
    ) -> None:
        saved, self._saved = self._saved, None
        if saved is None or (saved.get("epoch"), saved.get("batches")) != (
            trainer.current_epoch,
            batch_idx,
        ):
            return
        if not batch_idx:
            return
        for name, states in saved.get("metrics", {}).items():
            metric = pl_module.get_submodule(name)
            for key, value in states["state"].items():
                setattr(metric, key, value.to(pl_module.device))
            metric._update_count = states["updates"]
        self._sums = saved.get("sums") or None

    def on_train_batch_end(
        self,
        trainer: pl.Trainer,
        pl_module: pl.LightningModule,
        outputs: Any,
        batch: Any,
        batch_idx: int,
    ) -> None:
        sums, self._sums = self._sums, None
        if sums is None:
            return
        results = trainer.fit_loop.epoch_loop._results
        for key, saved in sums.items():
            logged = results.get(key)
            if logged is None or not logged.is_tensor:
                continue
            value = saved["value"].to(logged.value.device)
            if logged.meta.is_mean_reduction:
                # saved + this batch: the order of the uninterrupted run's sum
                logged.value = value + logged.value
                logged.cumulated_batch_size = (
                    saved["batch_size"].to(logged.value.device) + logged.cumulated_batch_size
                )
            elif logged.meta.is_sum_reduction:
                logged.value = value + logged.value
            elif logged.meta.is_max_reduction or logged.meta.is_min_reduction:
                logged.value = logged.meta.reduce_fx(value, logged.value)


def _random_states() -> dict[str, Any]:
    """The global random states, as tensors and numbers (a checkpoint loads with
    ``weights_only``)."""
    kind, keys, position, has_gauss, gauss = np.random.get_state()
    version, state, python_gauss = random.getstate()
    states: dict[str, Any] = {
        "torch": torch.get_rng_state(),
        "numpy": [kind, torch.from_numpy(keys.astype(np.int64)), position, has_gauss, gauss],
        "python": [version, torch.tensor(state, dtype=torch.int64), python_gauss],
    }
    if torch.cuda.is_available():
        states["cuda"] = torch.cuda.get_rng_state_all()
    return states


def _set_random_states(states: dict[str, Any]) -> None:
    torch.set_rng_state(states["torch"])
    kind, keys, position, has_gauss, gauss = states["numpy"]
    np.random.set_state((kind, keys.numpy().astype(np.uint32), position, has_gauss, gauss))
    version, state, python_gauss = states["python"]
    random.setstate((version, tuple(int(k) for k in state.tolist()), python_gauss))
    cuda = states.get("cuda")
    if cuda and torch.cuda.is_available() and len(cuda) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all(cuda)


def _running_sums(results: Any) -> dict[str, dict[str, torch.Tensor]]:
    """The sums behind each epoch-level training figure logged as a tensor."""
    sums = {}
    for key, logged in results.items():
        if not logged.is_tensor or not logged.meta.on_epoch:
            continue
        entry = {"value": logged.value.detach().cpu().clone()}
        if logged.meta.is_mean_reduction:
            entry["batch_size"] = logged.cumulated_batch_size.detach().cpu().clone()
        sums[key] = entry
    return sums


def _metric_states(results: Any, module: pl.LightningModule) -> dict[str, dict[str, Any]]:
    """The states of the torchmetrics logged in training, by their name in the module."""
    names = {id(child): name for name, child in module.named_modules()}
    states = {}
    for logged in results.values():
        metric = logged.value
        if logged.is_tensor or not isinstance(metric, Metric) or id(metric) not in names:
            continue
        state = metric.metric_state
        if all(isinstance(value, torch.Tensor) for value in state.values()):
            states[names[id(metric)]] = {
                "state": {key: value.detach().cpu().clone() for key, value in state.items()},
                "updates": metric._update_count,
            }
    return states
