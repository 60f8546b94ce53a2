"""Batches of cloze examples as tensors.

CONTRACT (shared by data/, models/, eval/, viz/): ``ClozeBatch`` below. Beside it:
``EncodedExample`` and ``collate`` (examples -> ``ClozeBatch``), ``BucketBatchSampler``
(length-bucketed, distributed-aware batches of indices) and ``ResumableLoader`` (the training
loader that a checkpoint saved in the middle of an epoch resumes at its next batch).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch.utils.data import DataLoader, Sampler


@dataclass
class ClozeBatch:
    """A padded batch. Letters: ``b`` batch, ``n`` context length, ``m`` query length,
    ``e`` number of entity ids (the model's output size).

    Attributes:
        context: token ids of the anonymized context, (b, n), padded with 0.
        context_mask: True on real context tokens, (b, n) bool.
        query: token ids of the query, (b, m), padded with 0.
        query_mask: True on real query tokens, (b, m) bool.
        candidates: True for entity ids that occur in the context, (b, e) bool.
        answer: the answer's entity id (``@entity7`` -> 7 after any permutation or
            relabelling; ``entity_block.UNANSWERABLE`` when it is outside the reader's block),
            (b,) long.
        ids: the example ids, length b.
        truncated: True where the context was cut to the length cap, (b,) bool.
    """

    context: torch.Tensor
    context_mask: torch.Tensor
    query: torch.Tensor
    query_mask: torch.Tensor
    candidates: torch.Tensor
    answer: torch.Tensor
    ids: list[str]
    truncated: torch.Tensor

    def __len__(self) -> int:
        return self.context.shape[0]


@dataclass(frozen=True)
class EncodedExample:
    """One cloze example as ids, ready for ``collate``.

    Attributes:
        id: the example id.
        context: context token ids, (n,).
        query: query token ids, (m,).
        answer: the answer's entity number ``k`` (``@entity{k}``), or ``entity_block.UNANSWERABLE``.
        candidates: entity numbers of the candidates.
        truncated: whether the context was cut to a length cap.
    """

    id: str
    context: Sequence[int]
    query: Sequence[int]
    answer: int
    candidates: Sequence[int]
    truncated: bool = False


def collate(examples: Sequence[EncodedExample], num_entities: int) -> ClozeBatch:
    """Pad encoded examples into a ``ClozeBatch`` (padding id 0).

    Args:
        examples: at least one example.
        num_entities: the number of entity ids ``e`` (width of ``candidates``).
    """
    if not examples:
        raise ValueError("cannot collate an empty list of examples")
    b = len(examples)
    n = max(len(ex.context) for ex in examples)
    m = max(len(ex.query) for ex in examples)
    context = torch.zeros(b, n, dtype=torch.long)  # (b, n)
    query = torch.zeros(b, m, dtype=torch.long)  # (b, m)
    context_mask = torch.zeros(b, n, dtype=torch.bool)  # (b, n)
    query_mask = torch.zeros(b, m, dtype=torch.bool)  # (b, m)
    candidates = torch.zeros(b, num_entities, dtype=torch.bool)  # (b, e)
    for i, ex in enumerate(examples):
        context[i, : len(ex.context)] = torch.as_tensor(ex.context, dtype=torch.long)
        context_mask[i, : len(ex.context)] = True
        query[i, : len(ex.query)] = torch.as_tensor(ex.query, dtype=torch.long)
        query_mask[i, : len(ex.query)] = True
        candidates[i, torch.as_tensor(ex.candidates, dtype=torch.long)] = True
    return ClozeBatch(
        context=context,
        context_mask=context_mask,
        query=query,
        query_mask=query_mask,
        candidates=candidates,
        answer=torch.tensor([ex.answer for ex in examples], dtype=torch.long),  # (b,)
        ids=[ex.id for ex in examples],
        truncated=torch.tensor([ex.truncated for ex in examples], dtype=torch.bool),  # (b,)
    )


class BucketBatchSampler(Sampler[list[tuple[int, int]]]):
    """Length-bucketed batches of ``(epoch, index)`` keys, sharded across distributed ranks.

    One epoch: shuffle the indices (when ``shuffle``), cut them into pools of
    ``pool_size * batch_size``, sort each pool by length (so a batch holds examples of
    similar length and little padding), cut the sorted sequence into batches, shuffle the
    order of the batches, and give rank ``r`` every ``num_replicas``-th batch starting at
    ``r``. Without ``drop_last`` the examples are spread over ``num_replicas * k`` batches
    whose sizes differ by at most one (none larger than ``batch_size``), so every example is
    seen exactly once per epoch across ranks, no example is repeated to pad a rank, and every
    rank gets the same number of batches (which DDP needs). With ``drop_last`` every batch
    has exactly ``batch_size`` examples and the remainder is left out of the epoch.

    The order depends only on ``(seed, epoch)``; call ``set_epoch`` before each epoch, or pass
    ``epoch_fn`` to read the epoch when iteration starts. ``skip(epoch, batches)`` makes the
    next iteration over ``epoch`` leave out its first ``batches`` batches (a run resumed in
    the middle of an epoch goes on with the same order). Every index comes with its epoch, so
    that a dataset in a worker process can seed per-epoch randomness (``EncodedSplit``'s
    entity permutation); a dataset without any reads the index alone.

    Args:
        lengths: the length of each example (context tokens).
        batch_size: the largest batch.
        shuffle: shuffle examples and batch order (training); else batches come in length
            order.
        seed: base seed of the shuffling.
        num_replicas: the number of distributed ranks.
        rank: this process's rank.
        drop_last: only full batches (see above).
        pool_size: batches per sorting pool.
        epoch_fn: called at the start of each iteration to get the epoch (overrides
            ``set_epoch``).
    """

    def __init__(
        self,
        lengths: Sequence[int],
        batch_size: int,
        shuffle: bool = True,
        seed: int = 0,
        num_replicas: int = 1,
        rank: int = 0,
        drop_last: bool = False,
        pool_size: int = 50,
        epoch_fn: Callable[[], int] | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        if pool_size < 1:
            raise ValueError(f"pool_size must be at least 1, got {pool_size}")
        if num_replicas < 1 or not 0 <= rank < num_replicas:
            raise ValueError(f"need 0 <= rank < num_replicas, got rank {rank} of {num_replicas}")
        if len(lengths) < num_replicas:
            raise ValueError(
                f"{len(lengths)} examples cannot be shared by {num_replicas} ranks; "
                "use fewer devices or more examples"
            )
        if drop_last and len(lengths) < num_replicas * batch_size:
            raise ValueError(
                f"drop_last with {len(lengths)} examples leaves no full batch of {batch_size} "
                f"per rank ({num_replicas} ranks); lower the batch size"
            )
        self.lengths = np.asarray(lengths, dtype=np.int64)
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.seed = seed
        self.num_replicas = num_replicas
        self.rank = rank
        self.drop_last = drop_last
        self.pool_size = pool_size
        self.epoch_fn = epoch_fn
        self.epoch = 0
        self.iterated_epoch: int | None = None  # the epoch of the latest iteration
        self.skipped = 0  # the batches it left out at its start
        self._skip: tuple[int, int] | None = None  # (epoch, batches) for the next iteration
        total = len(self.lengths)
        if drop_last:
            self.batches_per_rank = total // (num_replicas * batch_size)
        else:
            self.batches_per_rank = math.ceil(total / (num_replicas * batch_size))

    def set_epoch(self, epoch: int) -> None:
        """Set the epoch that seeds the next iteration's order."""
        self.epoch = epoch

    def __len__(self) -> int:
        return self.batches_per_rank

    def batches(self, epoch: int) -> list[np.ndarray]:
        """All ranks' batches of ``epoch``, in order (rank ``r`` takes ``[r::num_replicas]``)."""
        rng = np.random.default_rng([self.seed, epoch])
        total = len(self.lengths)
        order = rng.permutation(total) if self.shuffle else np.arange(total)
        pool = self.pool_size * self.batch_size
        pools = [order[i : i + pool] for i in range(0, total, pool)]
        # A stable sort keeps the (shuffled) order among equal lengths.
        order = np.concatenate([p[np.argsort(self.lengths[p], kind="stable")] for p in pools])
        num_batches = self.batches_per_rank * self.num_replicas
        if self.drop_last:
            order = order[: num_batches * self.batch_size]
        batches = np.array_split(order, num_batches)
        if self.shuffle:
            batches = [batches[i] for i in rng.permutation(num_batches)]
        return batches

    def skip(self, epoch: int, batches: int) -> None:
        """Leave out the first ``batches`` of this rank's batches the next time ``epoch`` is
        iterated (once; an iteration over another epoch forgets it)."""
        if batches < 0:
            raise ValueError(f"cannot skip {batches} batches")
        self._skip = (epoch, batches)

    def __iter__(self) -> Iterator[list[tuple[int, int]]]:
        epoch = self.epoch_fn() if self.epoch_fn is not None else self.epoch
        skip, self._skip = self._skip, None
        start = skip[1] if skip is not None and skip[0] == epoch else 0
        self.iterated_epoch, self.skipped = epoch, start
        for batch in self.batches(epoch)[self.rank :: self.num_replicas][start:]:
            yield [(epoch, int(i)) for i in batch]


class ResumableLoader(DataLoader):
    """A ``DataLoader`` over a ``BucketBatchSampler`` whose state is the epoch it is in and the
    number of batches it has handed out in it.

    Lightning stores that state in every checkpoint (a loader with ``state_dict`` and
    ``load_state_dict`` is one it resumes), and a loader given it back leaves out those
    batches of that epoch: since the sampler's order depends on the seed and the epoch only,
    a run resumed from a checkpoint saved in the middle of an epoch reads the rest of the
    epoch in the order the interrupted run would have. (Lightning asks for one batch at a
    time from a loader whose length it knows, so the count is of the batches trained on;
    worker processes read ahead from the sampler, never from this count.)
    """

    batch_sampler: BucketBatchSampler

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        if not isinstance(self.batch_sampler, BucketBatchSampler):
            raise TypeError("ResumableLoader needs a BucketBatchSampler as its batch_sampler")
        self.handed_out = 0

    def __iter__(self) -> Iterator:  # type: ignore[override]
        self.handed_out = self.batch_sampler.skipped = 0
        return _Counted(super().__iter__(), self)

    def state_dict(self) -> dict[str, int | None]:
        """``{"epoch": E, "batches": N}``: the first N batches of epoch E are done (handed
        out in this iteration, or left out as done before a resume)."""
        sampler = self.batch_sampler
        return {"epoch": sampler.iterated_epoch, "batches": sampler.skipped + self.handed_out}

    def load_state_dict(self, state: dict[str, int | None]) -> None:
        """Resume: the next iteration over the saved epoch starts after its saved batches."""
        epoch, batches = state.get("epoch"), state.get("batches")
        if epoch is not None and batches:
            self.batch_sampler.skip(int(epoch), int(batches))


class _Counted:
    """The loader's iterator, counting the batches it hands out."""

    def __init__(self, batches: Iterator, loader: ResumableLoader) -> None:
        self._batches = batches
        self._loader = loader

    def __iter__(self) -> _Counted:
        return self

    def __next__(self) -> object:
        batch = next(self._batches)
        self._loader.handed_out += 1
        return batch

    def __len__(self) -> int:
        return len(self._batches)  # type: ignore[arg-type]
