"""``models/ensemble.py``: the mean of the members' probabilities (hand-computed), a one-member
ensemble is its member, and the ensemble's attention and selected positions."""

from __future__ import annotations

import pytest
import torch

from attentive_reader.models import AttentiveReader, ImpatientReader
from attentive_reader.models.ensemble import Ensemble, average, mean_attention
from attentive_reader.models.predictions import BatchPrediction
from tests.models.batches import make_batch

NUM_ENTITIES = 4


def _prediction(
    probs: list[list[float]], attention=None, selected=None, read=None
) -> BatchPrediction:
    p = torch.tensor(probs)
    logits = torch.where(p > 0, p.log(), torch.finfo(p.dtype).min)
    return BatchPrediction(
        ids=[f"q{i}" for i in range(len(probs))],
        logits=logits,
        probs=p,
        prediction=p.argmax(-1),
        answer=torch.zeros(len(probs), dtype=torch.long),
        attention=attention,
        selected=selected,
        context_lengths=torch.tensor([3] * len(probs)),
        query_lengths=torch.tensor([2, 1][: len(probs)]),
        read=None if read is None else torch.tensor(read),
    )


def test_the_ensemble_answers_with_the_mean_of_the_probabilities_not_of_the_logits():
    # Member one is sure of entity 0, member two leans to entity 1: the mean picks 1
    # (0.5 * (0.9 + 0.0) = 0.45 < 0.5 * (0.1 + 0.9) = 0.5); a mean of logits would pick 0.
    one = _prediction([[0.9, 0.1, 0.0, 0.0]])
    two = _prediction([[0.0, 0.9, 0.1, 0.0]])
    both = average([one, two])
    assert torch.allclose(both.probs, torch.tensor([[0.45, 0.5, 0.05, 0.0]]))
    assert both.prediction.tolist() == [1]
    assert torch.allclose(torch.softmax(both.logits, -1), both.probs)
    assert both.logits[0, 3] == torch.finfo(torch.float32).min  # never a candidate
    assert average([one]) is one


def test_attention_is_the_members_mean_and_rows_enter_by_their_last_real_query_token():
    single = torch.tensor([[0.2, 0.3, 0.5], [1.0, 0.0, 0.0]])  # (b, n)
    rows = torch.tensor(  # (b, m, n): example 0 has 2 real query tokens, example 1 has 1
        [[[0.1, 0.1, 0.8], [0.6, 0.2, 0.2]], [[0.0, 1.0, 0.0], [9.0, 9.0, 9.0]]]
    )
    lengths = torch.tensor([2, 1])
    mixed = mean_attention([single, None, rows], lengths)
    assert torch.allclose(mixed, torch.tensor([[0.4, 0.25, 0.35], [0.5, 0.5, 0.0]]))
    assert torch.equal(mean_attention([rows, rows], lengths), rows)  # alike forms: elementwise
    assert mean_attention([None, None], lengths) is None
    selected = average(
        [
            _prediction([[0.5, 0.5, 0, 0]], selected=torch.tensor([[2]])),
            _prediction([[0.5, 0.5, 0, 0]]),
            _prediction([[0.5, 0.5, 0, 0]], selected=torch.tensor([[0, -1]])),
        ]
    ).selected
    assert selected.tolist() == [[2, 0, -1]]


def test_an_ensemble_of_readers_averages_their_predictions_and_one_member_is_the_reader():
    torch.manual_seed(0)
    options = dict(vocab_size=12, num_entities=NUM_ENTITIES, embedding_dim=6, hidden_dim=5)
    attentive, impatient = AttentiveReader(**options).eval(), ImpatientReader(**options).eval()
    batch = make_batch(
        [[3, 8, 4, 9, 5], [4, 10, 3]], [[8, 2, 9], [2, 11]], [0, 1], num_entities=NUM_ENTITIES
    )
    with torch.inference_mode():
        a, b = attentive.predict_step(batch, 0), impatient.predict_step(batch, 0)
        both = Ensemble([attentive, impatient]).predict_step(batch, 0)
        alone = Ensemble([attentive]).predict_step(batch, 0)
    assert torch.allclose(both.probs, (a.probs + b.probs) / 2)
    assert torch.equal(both.prediction, ((a.probs + b.probs) / 2).argmax(-1))
    assert (both.probs[~batch.candidates] == 0).all()
    assert both.attention.shape == a.attention.shape  # (b, n): the Impatient rows' last
    assert torch.equal(alone.probs, a.probs) and torch.equal(alone.attention, a.attention)
    with pytest.raises(ValueError, match="at least one reader"):
        Ensemble([])
    with pytest.raises(ValueError, match="one entity block"):
        Ensemble([attentive, AttentiveReader(**{**options, "num_entities": 5})])


def test_the_ensemble_reads_what_any_member_reads():
    one = _prediction([[0.5, 0.5, 0, 0]], read=[[True, False, False]])
    two = _prediction([[0.5, 0.5, 0, 0]], read=[[False, False, True]])
    both = average([one, two])
    assert both.read.tolist() == [[True, False, True]]
    assert [record.tokens_read for record in both.records()] == [2]
    assert average([one, _prediction([[0.5, 0.5, 0, 0]])]).read is None  # one does not say
