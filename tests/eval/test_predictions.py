"""Typed prediction records: ``predict_step`` -> ``BatchPrediction`` -> one ``Prediction`` per
example, cut to its real lengths, the same as the example read alone (no padding)."""

from __future__ import annotations

import pytest
import torch

from attentive_reader.models import GatedAttentionReader, ImpatientReader
from attentive_reader.models.predictions import BatchPrediction, Prediction
from tests.models.batches import alone, random_batch

VOCAB, ENTITIES = 60, 10


@pytest.mark.parametrize(
    "reader_class", [GatedAttentionReader, ImpatientReader], ids=["gated", "impatient"]
)
def test_records_are_the_examples_read_alone(reader_class):
    torch.manual_seed(0)
    reader = reader_class(
        vocab_size=VOCAB, num_entities=ENTITIES, embedding_dim=8, hidden_dim=8
    ).eval()
    batch = random_batch(num_examples=6, vocab_size=VOCAB, num_entities=ENTITIES, seed=3)
    with torch.no_grad():
        prediction = reader.predict_step(batch, 0)
        records = prediction.records()
        assert isinstance(prediction, BatchPrediction) and len(prediction) == 6
        assert [r.id for r in records] == batch.ids
        for i, record in enumerate(records):
            assert isinstance(record, Prediction)
            (single,) = reader.predict_step(alone(batch, i), 0).records()
            n, m = record.context_length, record.query_length
            assert (n, m) == (single.context_length, single.query_length)
            assert record.prediction == single.prediction == int(record.probs.argmax())
            assert record.marker == f"@entity{record.prediction}"
            assert torch.allclose(record.probs, single.probs, atol=1e-5)
            # Attention cut to the real tokens: (n,) for the gated reader, (m, n) impatient.
            expected_shape = (n,) if reader_class is GatedAttentionReader else (m, n)
            assert record.attention.shape == expected_shape
            assert torch.allclose(record.attention, single.attention, atol=1e-5)
            assert torch.allclose(record.attention.sum(-1), torch.ones(()), atol=1e-5)
            if reader_class is GatedAttentionReader:  # 3 hops: 2 gated-attention steps
                assert record.hop_attention.shape == (2, n, m)
                assert torch.allclose(record.hop_attention, single.hop_attention, atol=1e-5)
                assert torch.allclose(record.hop_attention.sum(-1), torch.ones(2, n), atol=1e-5)
            else:
                assert record.hop_attention is None


def test_extras_are_carried_and_moved_to_the_cpu():
    torch.manual_seed(0)
    reader = GatedAttentionReader(
        vocab_size=VOCAB, num_entities=ENTITIES, num_hops=2, embedding_dim=8, hidden_dim=8
    )
    batch = random_batch(num_examples=3, vocab_size=VOCAB, num_entities=ENTITIES)
    with torch.no_grad():
        prediction = reader.eval().predict_step(batch, 0)
    hops = prediction.extras.hop_attention
    assert hops.device.type == "cpu" and hops.dtype == torch.float32
    assert hops.shape == (3, 1, batch.context.shape[1], batch.query.shape[1])  # (b, K-1, n, m)
    assert torch.equal(prediction.query_lengths, batch.query_mask.sum(-1))
    assert not hops.requires_grad


def test_a_record_gives_its_attention_hops_and_selections_as_plain_numbers():
    from attentive_reader.models.output import GatedExtras

    hops = torch.arange(2 * 3 * 2, dtype=torch.float32).view(2, 3, 2) / 16  # (K - 1, n, m)
    record = Prediction(
        id="x",
        prediction=1,
        answer=1,
        probs=torch.tensor([0.25, 0.75]),
        attention=torch.tensor([[0.5, 0.25, 0.25], [0.0, 0.5, 0.5]]),  # (m, n): per query token
        selected=torch.tensor([2, -1, 0, 2]),
        context_length=3,
        query_length=2,
        extras=GatedExtras(hops),
    )
    assert record.weights(2, 1) == ((0.5, 0.25),)  # cut to n = 2 tokens, m = 1 row
    assert record.selected_positions(3) == (0, 2)  # distinct, in order, empty slots left out
    assert record.selected_positions(2) == (0,)
    assert record.hops(2, 1) == (((0.0,), (0.125,)), ((0.375,), (0.5,)))
    single = Prediction("y", 0, 0, torch.ones(1), torch.tensor([0.5, 0.5]), None, 2, 1)
    assert single.weights(1, 1) == (0.5,) and single.selected_positions(2) == ()
    assert single.hops(2, 1) is None
