"""Where a data module's vocabulary comes from: counted over the train split, or read from a
``vocab.json`` (with the preprocessing identity in the ``pipeline.json`` beside it) or from a
checkpoint's data module state."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import datasets
import pyarrow.compute as pc

from attentive_reader.common.checkpoint_file import read_checkpoint
from attentive_reader.common.errors import UserError
from attentive_reader.data.vocab import Vocabulary

VOCAB_FILE = "vocab.json"
PIPELINE_FILE = "pipeline.json"  # the preprocessing identity, beside vocab.json
DATAMODULE_STATE = "ClozeDataModule"  # the key of the data module's state in a checkpoint


def token_counts(train: datasets.Dataset) -> Counter[str]:
    """How often each token occurs in the contexts and queries of ``train`` (Arrow kernels)."""
    counts: Counter[str] = Counter()
    for table in train.select_columns(["context", "query"]).with_format("arrow").iter(50_000):
        for column in ("context", "query"):
            tokens = pc.list_flatten(table.column(column))
            if len(tokens):
                found = pc.value_counts(tokens)  # struct<values, counts>
                counts.update(
                    dict(
                        zip(
                            found.field("values").to_pylist(),
                            found.field("counts").to_pylist(),
                        )
                    )
                )
    return counts


def read_vocabulary(path: Path) -> tuple[Vocabulary, dict | None]:
    """A vocabulary from a ``vocab.json`` or from a checkpoint's data module state, and the
    preprocessing identity of the data it was made from (a ``vocab.json``'s from the
    ``pipeline.json`` beside it; ``None`` when none is recorded)."""
    if not path.is_file():
        raise UserError(f"vocabulary file not found: {path}")
    if path.suffix == ".json":
        try:
            vocab = Vocabulary.load(path)
        except (json.JSONDecodeError, KeyError, ValueError) as err:
            raise UserError(
                f"{path} is not a vocabulary written by attentive-reader: {err}"
            ) from None
        return vocab, _pipeline_beside(path)
    state = checkpoint_state(read_checkpoint(path), path)
    return Vocabulary.from_dict(state["vocab"]), state.get("pipeline")


def _pipeline_beside(vocab_file: Path) -> dict | None:
    """The preprocessing identity in the ``pipeline.json`` beside a ``vocab.json`` (``None``
    when there is none or it cannot be read: it only decides a warning)."""
    try:
        recorded = json.loads(vocab_file.with_name(PIPELINE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return recorded if isinstance(recorded, dict) else None


def datamodule_state(checkpoint: dict) -> dict | None:
    """A loaded checkpoint's ``ClozeDataModule`` state (its ``vocab`` and ``pipeline``), or
    ``None`` when it holds none."""
    # Lightning stores a data module's state under its class name.
    states = [checkpoint.get(DATAMODULE_STATE), *checkpoint.values()]
    for state in states:
        if isinstance(state, dict) and isinstance(state.get("vocab"), dict):
            return state
    return None


def checkpoint_state(checkpoint: dict, path: Path) -> dict:
    """``datamodule_state`` of a checkpoint that must hold one (``path`` for the message).

    Raises:
        UserError: the checkpoint was not trained with ``ClozeDataModule``.
    """
    state = datamodule_state(checkpoint)
    if state is None:
        raise UserError(
            f"{path} holds no vocabulary (it was not trained with ClozeDataModule); pass the "
            f"{VOCAB_FILE} of its run as --data.vocab"
        )
    return state
