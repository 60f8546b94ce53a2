import numpy as np
import pytest
import torch

from attentive_reader.data.batching import BucketBatchSampler, EncodedExample, collate


def test_collate_pads_and_marks_candidates():
    examples = [
        EncodedExample("a", context=[3, 7, 4], query=[3, 2], answer=1, candidates=[0, 1]),
        EncodedExample("b", context=[5], query=[9, 2, 8], answer=2, candidates=[2], truncated=True),
    ]
    batch = collate(examples, num_entities=4)
    assert batch.context.tolist() == [[3, 7, 4], [5, 0, 0]]
    assert batch.context_mask.tolist() == [[True, True, True], [True, False, False]]
    assert batch.query.tolist() == [[3, 2, 0], [9, 2, 8]]
    assert batch.query_mask.tolist() == [[True, True, False], [True, True, True]]
    assert batch.candidates.tolist() == [[True, True, False, False], [False, False, True, False]]
    assert batch.answer.tolist() == [1, 2]
    assert batch.truncated.tolist() == [False, True]
    assert batch.ids == ["a", "b"] and len(batch) == 2
    assert batch.context.dtype == torch.long and batch.candidates.dtype == torch.bool


def _indices(batches):
    """The sampler's batches as lists of indices (the epoch of each key dropped)."""
    return [[index for _, index in batch] for batch in batches]


def _flatten(batches):
    return sorted(index for batch in batches for _, index in batch)


@pytest.mark.parametrize("num_replicas", [1, 2, 3])
@pytest.mark.parametrize("total", [1 * 3, 37, 100])
def test_every_example_once_per_epoch_across_ranks(num_replicas, total):
    lengths = np.random.default_rng(0).integers(1, 50, size=total)
    samplers = [
        BucketBatchSampler(lengths, batch_size=8, seed=1, num_replicas=num_replicas, rank=r)
        for r in range(num_replicas)
    ]
    for sampler in samplers:
        sampler.set_epoch(4)
    per_rank = [list(sampler) for sampler in samplers]
    assert _flatten(b for rank in per_rank for b in rank) == list(range(total))
    # Same number of batches on every rank (DDP needs it), none over batch_size, none empty.
    assert len({len(rank) for rank in per_rank}) == 1
    assert len(per_rank[0]) == len(samplers[0])
    assert all(0 < len(b) <= 8 for rank in per_rank for b in rank)


def test_batches_are_length_sorted_within_pools_and_order_is_seeded():
    lengths = np.random.default_rng(0).integers(1, 1000, size=400)
    sampler = BucketBatchSampler(lengths, batch_size=10, pool_size=4, seed=3)
    epoch0 = _indices(sampler)
    # Inside a pool of 40 examples the batches do not overlap in length.
    spans = [(lengths[b].min(), lengths[b].max()) for b in epoch0]
    assert sum(hi - lo for lo, hi in spans) < 0.5 * sum(
        lengths[b].max() - lengths[b].min() for b in np.array_split(np.arange(400), 40)
    )
    assert epoch0 == _indices(BucketBatchSampler(lengths, batch_size=10, pool_size=4, seed=3))
    sampler.set_epoch(1)
    assert _indices(sampler) != epoch0
    assert _flatten(list(sampler)) == list(range(400))


def test_eval_order_is_fixed_and_sorted():
    lengths = [5, 1, 4, 2, 3]
    sampler = BucketBatchSampler(lengths, batch_size=2, shuffle=False)
    # Sorted by length: 1 (i1), 2 (i3), 3 (i4), 4 (i2), 5 (i0); sizes as even as possible.
    assert list(sampler) == [[(0, 1), (0, 3)], [(0, 4), (0, 2)], [(0, 0)]]
    sampler.set_epoch(7)
    assert _indices(sampler) == _indices(BucketBatchSampler(lengths, batch_size=2, shuffle=False))


def test_drop_last_gives_full_batches_only():
    sampler = BucketBatchSampler(list(range(23)), batch_size=5, drop_last=True, num_replicas=2)
    batches = list(sampler)
    assert len(batches) == 2 and all(len(b) == 5 for b in batches)


def test_every_index_carries_its_epoch_and_epoch_fn_wins():
    sampler = BucketBatchSampler([1, 2, 3], batch_size=3, epoch_fn=lambda: 5)
    sampler.set_epoch(2)
    assert sorted(next(iter(sampler))) == [(5, 0), (5, 1), (5, 2)]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"batch_size": 0}, "batch_size"),
        ({"num_replicas": 2, "rank": 2}, "rank"),
        ({"num_replicas": 4}, "cannot be shared"),
        ({"drop_last": True, "batch_size": 4}, "no full batch"),
    ],
)
def test_bad_arguments(kwargs, message):
    arguments = {"lengths": [1, 2, 3], "batch_size": 2, **kwargs}
    with pytest.raises(ValueError, match=message):
        BucketBatchSampler(**arguments)


class Keys(torch.utils.data.Dataset):
    """A dataset whose items are the sampler's ``(epoch, index)`` keys."""

    def __getitem__(self, key):
        return key

    def __len__(self) -> int:
        return 12


def test_a_resumable_loader_restored_from_its_state_goes_on_with_the_same_batches():
    from attentive_reader.data.batching import ResumableLoader

    epoch = {"now": 2}
    lengths = [5, 3, 9, 1, 7, 2, 8, 4, 6, 10, 12, 11]

    def loader() -> ResumableLoader:
        sampler = BucketBatchSampler(
            lengths, batch_size=2, seed=3, pool_size=2, epoch_fn=lambda: epoch["now"]
        )
        return ResumableLoader(Keys(), batch_sampler=sampler, collate_fn=list)

    whole = [[i for _, i in batch] for batch in loader()]
    first = loader()
    batches = iter(first)
    done = [[i for _, i in next(batches)] for _ in range(4)]
    state = first.state_dict()
    assert state == {"epoch": 2, "batches": 4} and done == whole[:4]

    again = loader()
    again.load_state_dict(state)
    rest = [[i for _, i in batch] for batch in again]
    assert done + rest == whole
    assert again.state_dict() == {"epoch": 2, "batches": 6}
    # The skip was for epoch 2 only, once: the next epoch is whole and new.
    epoch["now"] = 3
    assert len(list(again)) == 6 and again.state_dict() == {"epoch": 3, "batches": 6}
    resumed_elsewhere = loader()
    resumed_elsewhere.load_state_dict({"epoch": 1, "batches": 4})
    assert len(list(resumed_elsewhere)) == 6
