"""Tiny checkpoints on the toy task, shared by the evaluation, heatmap and library tests."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import pytest

from tests.trainers import quiet_trainer


class ToyRun(NamedTuple):
    """The toy dataset directory and its one-step checkpoints."""

    data: Path
    attentive: Path
    impatient: Path
    gated: Path
    hard: Path


def _fit_one_step(reader_class, datamodule, path: Path, **options) -> Path:

    reader = reader_class(
        vocab_size=datamodule.vocab_size,
        num_entities=datamodule.num_entities,
        embedding_dim=8,
        hidden_dim=8,
        **options,
    )
    trainer = quiet_trainer(
        max_steps=1,
        limit_val_batches=0,
        use_distributed_sampler=False,
    )
    trainer.fit(reader, datamodule)
    trainer.save_checkpoint(path)
    return path


@pytest.fixture(scope="session")
def toy_run(tmp_path_factory):
    """A tiny toy dataset and one-step checkpoints: Attentive, Impatient, a Gated-Attention
    Reader with three hops (two gated-attention steps) and a Hard-Attention Reader reading one
    token (k = 1, saved to evaluate greedily)."""
    import pytorch_lightning as pl

    from attentive_reader.corpus.synthetic.toy import write_toy_dataset
    from attentive_reader.data.datamodule import ClozeDataModule
    from attentive_reader.models import (
        AttentiveReader,
        GatedAttentionReader,
        HardAttentionReader,
        ImpatientReader,
    )

    root = tmp_path_factory.mktemp("toy")
    data = write_toy_dataset(root / "data", num_train=16, num_validation=4, num_test=11)
    pl.seed_everything(0, verbose=False)
    datamodule = ClozeDataModule(str(data), batch_size=8, num_entities=8)
    attentive = _fit_one_step(AttentiveReader, datamodule, root / "attentive.ckpt")
    impatient = _fit_one_step(
        ImpatientReader,
        datamodule,
        root / "impatient.ckpt",
        optimizer="rmsprop",
        lr=5e-5,
        optimizer_options={"alpha": 0.95, "momentum": 0.9},
    )
    gated = _fit_one_step(GatedAttentionReader, datamodule, root / "gated.ckpt", num_hops=3)
    hard = _fit_one_step(HardAttentionReader, datamodule, root / "hard.ckpt", k=1)
    return ToyRun(data, attentive, impatient, gated, hard)
