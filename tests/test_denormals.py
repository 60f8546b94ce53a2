"""Subnormal floats flushed to zero while a reader trains (``denormals.py``)."""

from __future__ import annotations

import pytest
import pytorch_lightning as pl
import torch
from torch import nn

from attentive_reader import denormals
from attentive_reader.errors import UserError
from tests.trainers import quiet_trainer

SUBNORMAL = 1e-39  # below float32's smallest normal number, 1.18e-38
SUPPORTED = torch.set_flush_denormal(False)  # False on CPUs without the flags


def _survivors() -> int:
    """How many of a large tensor of subnormal numbers survive a product computed by
    torch's threads (two, each taking half)."""
    return int((torch.full((1 << 18,), SUBNORMAL) * 1.0).count_nonzero())


@pytest.fixture(autouse=True)
def _two_threads_restored():
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    denormals.restore_denormals()
    torch.set_num_threads(threads)


@pytest.mark.skipif(not SUPPORTED, reason="this CPU has no flush-to-zero flags")
def test_flushing_reaches_every_thread_and_restoring_undoes_it(monkeypatch):
    monkeypatch.delenv(denormals.ENVIRONMENT, raising=False)
    assert _survivors() == 1 << 18
    setting = denormals.flush_denormals()
    assert setting.outcome in ("flushed", "calling thread") and denormals.flushed()
    if setting.outcome == "flushed":
        assert _survivors() == 0  # torch's other thread flushes too
    else:
        assert torch.tensor([SUBNORMAL]) * 1.0 == 0  # the calling thread at least
    assert denormals.restore_denormals() and not denormals.flushed()
    assert _survivors() == 1 << 18
    assert not denormals.restore_denormals()  # nothing left to restore


def test_the_environment_keeps_them_or_is_refused():
    assert denormals.flush_denormals({denormals.ENVIRONMENT: "keep"}).outcome == "kept"
    assert not denormals.flushed()
    with pytest.raises(UserError, match="'flush'"):
        denormals.flush_denormals({denormals.ENVIRONMENT: "zero"})


class _Tiny(pl.LightningModule):
    """Records, at each training step, whether subnormal floats are flushed."""

    def __init__(self) -> None:
        super().__init__()
        self.layer = nn.Linear(4, 1)
        self.flushed_during_steps: list[bool] = []

    def training_step(self, batch, batch_idx):
        self.flushed_during_steps.append(denormals.flushed())
        return self.layer(batch[0]).pow(2).mean()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self):
        data = torch.utils.data.TensorDataset(torch.randn(8, 4))
        return torch.utils.data.DataLoader(data, batch_size=4)


@pytest.mark.skipif(not SUPPORTED, reason="this CPU has no flush-to-zero flags")
def test_the_callback_flushes_through_the_training_loop_only(monkeypatch):
    monkeypatch.delenv(denormals.ENVIRONMENT, raising=False)
    callback, module = denormals.FlushDenormals(), _Tiny()
    quiet_trainer(max_epochs=1, callbacks=[callback]).fit(module)
    assert module.flushed_during_steps == [True, True]
    assert callback.setting is not None and callback.setting.outcome != "kept"
    assert not denormals.flushed()

    class Failing(_Tiny):
        def training_step(self, batch, batch_idx):
            super().training_step(batch, batch_idx)
            raise ValueError("a bad step")

    with pytest.raises(ValueError, match="a bad step"):
        quiet_trainer(max_epochs=1, callbacks=[denormals.FlushDenormals()]).fit(Failing())
    assert not denormals.flushed()


def test_the_with_block_restores_however_it_ends(monkeypatch):
    monkeypatch.delenv(denormals.ENVIRONMENT, raising=False)
    with pytest.raises(ValueError, match="a bad loop"):
        with denormals.denormals_flushed() as setting:
            assert denormals.flushed() == (setting.outcome != "unsupported")
            raise ValueError("a bad loop")
    assert not denormals.flushed()
