"""Run a reader over a split in stored order, one process, every example exactly once.

Lightning's ``test`` loop under DDP pads the last batches of a distributed sampler and
averages per-process figures; a report needs each example once. This loop is the plain
alternative evaluation (``eval.evaluate``) and heatmaps (``viz.checkpoint_heatmaps``) share.
``load_checkpoint`` reads a checkpoint file once for its hash, its reader and its data module.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import torch
from pytorch_lightning.utilities import move_data_to_device
from torch.utils.data import DataLoader, Subset

from attentive_reader.common.checkpoint_file import check_checkpoint_file, read_checkpoint
from attentive_reader.common.checks import check_positive
from attentive_reader.common.errors import UserError
from attentive_reader.corpus.records import Split
from attentive_reader.data.batching import ClozeBatch, collate
from attentive_reader.data.datamodule import ClozeDataModule
from attentive_reader.data.vocab_sources import datamodule_state
from attentive_reader.models.base import ClozeReader
from attentive_reader.models.ensemble import Ensemble
from attentive_reader.models.loading import reader_from_checkpoint
from attentive_reader.models.predictions import BatchPrediction

DeviceName = Literal["auto", "cpu", "cuda"]


def resolve_device(device: DeviceName | str) -> torch.device:
    """``"auto"`` -> the first GPU when there is one, else the CPU.

    Raises:
        UserError: if ``"cuda"`` is asked for on a machine without a GPU.
    """
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if str(device).startswith("cuda") and not torch.cuda.is_available():
        raise UserError(
            f"--device {device}: no CUDA device is available; drop --device {device} (the "
            "default, auto, takes a GPU when there is one and the CPU here)"
        )
    return torch.device(device)


@dataclass(frozen=True)
class LoadedCheckpoint:
    """A checkpoint read once: its hash, its reader and its data module over a dataset.

    Attributes:
        path: the checkpoint file.
        sha256: the SHA-256 hex digest of the file's bytes.
        reader: the reader, in eval mode, on the device it was loaded to.
        datamodule: the checkpoint's data module (its vocabulary and options) over the
            dataset directory it was loaded with.
        pipeline: the preprocessing identity of the reader's training data, as the
            checkpoint records it (``None``: not recorded); ``datamodule.pipeline`` is the
            evaluated dataset's.
    """

    path: Path
    sha256: str
    reader: ClozeReader
    datamodule: ClozeDataModule
    pipeline: dict | None = None


def load_checkpoint(
    ckpt: str | Path, data: str | Path, device: torch.device | str = "cpu"
) -> LoadedCheckpoint:
    """Read a checkpoint file once; hash it and build its reader and data module over ``data``.

    The data module keeps the checkpoint's vocabulary and options (e.g. the context cap it
    was trained with); only the dataset directory is replaced. The file is loaded with
    ``checkpoint_file.read_checkpoint`` (``weights_only=True``): no code in it is run.

    Raises:
        UserError: if the file is missing or not a reader checkpoint, or its reader and
            vocabulary disagree.
    """
    path = check_checkpoint_file(ckpt)
    content = path.read_bytes()  # read once: hashed and loaded
    checkpoint = read_checkpoint(path, device, content=content)
    reader = reader_from_checkpoint(checkpoint, path, map_location=device)
    datamodule = ClozeDataModule.from_checkpoint(path, checkpoint=checkpoint, path=str(data))
    if datamodule.num_entities != reader.num_entities:
        raise UserError(
            f"{path}: the reader has {reader.num_entities} entity ids but its stored "
            f"vocabulary has {datamodule.num_entities}; the checkpoint is inconsistent"
        )
    state = datamodule_state(checkpoint) or {}
    return LoadedCheckpoint(
        path, hashlib.sha256(content).hexdigest(), reader, datamodule, state.get("pipeline")
    )


def load_for_split(
    ckpt: str | Path, data: str | Path, device: torch.device
) -> tuple[ClozeReader, ClozeDataModule]:
    """A checkpoint's reader (eval mode, on ``device``) and its data module over ``data``
    (``load_checkpoint`` without the hash)."""
    loaded = load_checkpoint(ckpt, data, device)
    return loaded.reader, loaded.datamodule


def iterate_predictions(
    reader: ClozeReader | Ensemble,
    datamodule: ClozeDataModule,
    split: Split,
    *,
    indices: Sequence[int] | None = None,
    batch_size: int = 64,
    device: torch.device | None = None,
) -> Iterator[tuple[ClozeBatch, BatchPrediction]]:
    """``(batch, reader.predict_step(batch))`` over ``split`` in stored order.

    Args:
        reader: the reader (or an ensemble of readers), in eval mode.
        datamodule: gives the encoded split (its vocabulary; examples that number entities
            beyond the block fitted into it, ``data/entity_block.py``; never permuted).
        split: the split to read.
        indices: only these rows of the split, in this order (default: all).
        batch_size: examples per forward pass.
        device: where to run (default: where the reader's parameters are).
    """
    check_positive(batch_size=batch_size)
    examples = datamodule.dataset(split).examples  # never permuted, also for train
    source = examples if indices is None else Subset(examples, list(indices))  # type: ignore[arg-type]
    loader = DataLoader(
        source,
        batch_size=batch_size,
        shuffle=False,
        collate_fn=functools.partial(collate, num_entities=datamodule.num_entities),
    )
    if device is None:
        device = next(reader.parameters()).device
    reader.eval()
    with torch.inference_mode():
        for batch_idx, batch in enumerate(loader):
            batch = move_data_to_device(batch, device)
            yield batch, reader.predict_step(batch, batch_idx)
