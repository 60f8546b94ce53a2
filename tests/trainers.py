"""One quiet CPU trainer for the tests that build their own ``pl.Trainer``, a tiny module
that records a probe at each training step, and a callback file that SIGKILLs a training
subprocess (``KILLER``)."""

from __future__ import annotations

from collections.abc import Callable

import pytorch_lightning as pl
import torch
from torch import nn

QUIET = {
    "accelerator": "cpu",
    "devices": 1,
    "logger": False,
    "enable_checkpointing": False,
    "enable_progress_bar": False,
    "enable_model_summary": False,
    "deterministic": True,
}


def quiet_trainer(**overrides) -> pl.Trainer:
    """A ``pl.Trainer`` on one CPU with no logger, checkpoint callback, progress bar or model
    summary, deterministic; ``overrides`` are further ``pl.Trainer`` arguments (or replace
    those of ``QUIET``)."""
    return pl.Trainer(**{**QUIET, **overrides})


class ProbeModule(pl.LightningModule):
    """Two training steps of a linear layer on random data; ``seen`` holds what ``probe()``
    returned at each step (e.g. whether a callback's setting is on inside the loop).
    ``fail=True`` raises ``ValueError("a bad step")`` after probing."""

    def __init__(self, probe: Callable[[], object], fail: bool = False) -> None:
        super().__init__()
        self.layer = nn.Linear(4, 1)
        self.probe, self.fail = probe, fail
        self.seen: list[object] = []

    def training_step(self, batch, batch_idx):
        self.seen.append(self.probe())
        if self.fail:
            raise ValueError("a bad step")
        return self.layer(batch[0]).pow(2).mean()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self):
        data = torch.utils.data.TensorDataset(torch.randn(8, 4))
        return torch.utils.data.DataLoader(data, batch_size=4)


# A callback file for a training subprocess that dies like a crash (no cleanup at all).
KILLER = '''
import os, signal
from pytorch_lightning.callbacks import Callback

class KillAtStep(Callback):
    """SIGKILL this process once ``step`` optimizer steps are done (a crash: no cleanup)."""

    def __init__(self, step: int):
        self.step = step

    def on_train_batch_end(self, trainer, *args):
        if trainer.global_step >= self.step:
            os.kill(os.getpid(), signal.SIGKILL)
'''
