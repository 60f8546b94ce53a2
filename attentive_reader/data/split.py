"""``EncodedSplit``: one encoded split as ``EncodedExample`` s, read from its memory-mapped
columns, fitted into the entity block where needed, with the training-time entity
permutation."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Literal, get_args, overload

import numpy as np
from torch.utils.data import Dataset

from attentive_reader.data.batching import EncodedExample
from attentive_reader.data.encoded import EncodedColumns
from attentive_reader.data.entity_block import UNANSWERABLE, fit_encoded
from attentive_reader.data.vocab import Vocabulary

EntityIdPolicy = Literal["permute", "first_occurrence"]
ENTITY_ID_POLICIES: tuple[str, ...] = get_args(EntityIdPolicy)


class EncodedSplit(Dataset):
    """One split as ``EncodedExample`` s, optionally with entity ids permuted per example.

    The ids are memory-mapped columns (``EncodedColumns``, see ``data/encoded.py``): an
    example is read from the page cache when it is asked for, so the split costs each process
    almost no private memory.

    An example that numbers an entity beyond the block (another corpus read with a
    checkpoint's vocabulary) is fitted into it by ``data/entity_block.py``'s rule; one that
    fits is read as stored.

    With ``entity_ids="permute"`` the entity block is relabelled by a random permutation
    drawn from ``(seed, epoch, index)``, so a run is reproducible while every epoch sees new
    labels (the paper's "randomly permuted for each data point"). The key is either an index
    (epoch 0) or an ``(epoch, index)`` pair, as ``BucketBatchSampler`` yields.

    Args:
        columns: the encoded columns of the split.
        num_entities: size of the entity block ``e``.
        entity_offset: token id of ``@entity0``.
        entity_ids: ``permute`` (relabel entity ids per example and epoch) or
            ``first_occurrence`` (the stored ids).
        seed: base seed of the permutations.
        max_context_tokens: cut contexts to this many tokens (``truncated`` records it).
    """

    def __init__(
        self,
        columns: EncodedColumns,
        num_entities: int,
        entity_offset: int = Vocabulary.entity_offset,
        entity_ids: EntityIdPolicy = "first_occurrence",
        seed: int = 0,
        max_context_tokens: int | None = None,
    ) -> None:
        self.columns = columns
        self.num_entities = num_entities
        self.entity_offset = entity_offset
        if entity_ids not in ENTITY_ID_POLICIES:
            raise ValueError(
                f"entity_ids must be one of {', '.join(ENTITY_ID_POLICIES)}, got {entity_ids!r}"
            )
        self.entity_ids = entity_ids
        self.seed = seed
        self.max_context_tokens = max_context_tokens

    def __len__(self) -> int:
        return self.columns.rows

    @property
    def lengths(self) -> np.ndarray:
        """Context length of every example after any cut, (r,) int64."""
        lengths = self.columns.context_lengths()
        if self.max_context_tokens is None:
            return lengths
        return np.minimum(lengths, self.max_context_tokens)

    @property
    def examples(self) -> _Examples:
        """The examples as stored (never permuted), as a read-only sequence."""
        return _Examples(self)

    def example(self, index: int) -> EncodedExample:
        """Example ``index`` as the reader reads it, never permuted: as stored, or fitted
        into the entity block when it numbers an entity beyond it (``data/entity_block.py``;
        the fit sees the whole context, before any cut)."""
        if not 0 <= index < len(self):
            raise IndexError(f"example {index} of {len(self)}")
        columns = self.columns
        stored = EncodedExample(
            id=columns.example_id(index),
            context=columns.span("context", "context_offsets", index),  # (n,) read-only
            query=columns.span("query", "query_offsets", index),  # (m,)
            answer=int(columns.array("answer")[index]),
            candidates=columns.span("candidates", "candidate_offsets", index),
        )
        example, _ = fit_encoded(stored, self.num_entities, self.entity_offset)
        context = example.context
        truncated = self.max_context_tokens is not None and len(context) > self.max_context_tokens
        if truncated:
            context = context[: self.max_context_tokens]
        return dataclasses.replace(
            example,
            context=np.array(context, dtype=np.int32),  # a private copy of one example
            query=np.array(example.query, dtype=np.int32),
            candidates=np.array(example.candidates, dtype=np.int64),
            truncated=bool(truncated),
        )

    def __getitem__(self, key: int | tuple[int, int]) -> EncodedExample:
        epoch, index = key if isinstance(key, tuple) else (0, key)
        example = self.example(int(index))
        if self.entity_ids == "first_occurrence":
            return example
        rng = np.random.default_rng([self.seed, epoch, index])
        permutation = rng.permutation(self.num_entities)  # (e,) old entity k -> new entity
        return EncodedExample(
            id=example.id,
            context=self._relabel(example.context, permutation),
            query=self._relabel(example.query, permutation),
            answer=example.answer
            if example.answer == UNANSWERABLE
            else int(permutation[example.answer]),
            candidates=permutation[np.asarray(example.candidates, dtype=np.int64)],
            truncated=example.truncated,
        )

    def _relabel(self, ids: Sequence[int], permutation: np.ndarray) -> np.ndarray:
        ids = np.array(ids, dtype=np.int64)  # a copy
        offset, end = self.entity_offset, self.entity_offset + self.num_entities
        entity = (ids >= offset) & (ids < end)
        ids[entity] = offset + permutation[ids[entity] - offset]
        return ids


class _Examples(Sequence):
    """``EncodedSplit.examples``: the stored examples, read on demand."""

    def __init__(self, split: EncodedSplit) -> None:
        self._split = split

    def __len__(self) -> int:
        return len(self._split)

    @overload
    def __getitem__(self, index: int) -> EncodedExample: ...

    @overload
    def __getitem__(self, index: slice) -> list[EncodedExample]: ...

    def __getitem__(self, index: int | slice) -> EncodedExample | list[EncodedExample]:
        if isinstance(index, slice):
            return [self._split.example(i) for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        return self._split.example(index)
