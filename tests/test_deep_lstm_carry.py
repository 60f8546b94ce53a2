"""``scripts/deep_lstm_carry.py``: the cue task, and the Deep LSTM carrying a relabelled entity."""

import importlib.util
from pathlib import Path

import pytest
import torch

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "deep_lstm_carry.py"
spec = importlib.util.spec_from_file_location("deep_lstm_carry", SCRIPT)
carry = importlib.util.module_from_spec(spec)
spec.loader.exec_module(carry)


def test_the_answer_is_the_entity_after_the_cue_and_a_candidate():
    generator = torch.Generator().manual_seed(3)
    batch = carry.cue_batch(50, 12, 20, 80, generator)
    cue = carry.ENTITY_OFFSET + 20
    assert batch.context.shape == (50, 12) and bool(batch.context_mask.all())
    assert bool((batch.query == cue).any(dim=1).all())  # the query names the cue
    for i in range(50):
        row = batch.context[i].tolist()
        assert row.count(cue) == 1
        after = row[row.index(cue) + 1]
        assert after == carry.ENTITY_OFFSET + int(batch.answer[i])
        present = {t - carry.ENTITY_OFFSET for t in row if 3 <= t < 3 + 20}
        assert set(batch.candidates[i].nonzero().flatten().tolist()) == present
        assert 2 <= len(present) <= carry.ENTITIES_PER_CONTEXT


@pytest.mark.slow  # ~300 updates of a small LSTM: ~20 s on one thread
def test_the_deep_lstm_carries_a_relabelled_entity_over_a_short_context():
    """With the tied layer and the query-match bit, entity ids drawn afresh for every example
    (nothing to memorise), 300 updates take it from chance (1/6) to >= 0.9 on 8 tokens."""
    args = carry.parse_args(["--length", "8", "--steps", "300", "--forget-bias", "1.0"])
    curve = carry.carry_curve(args, report=lambda line: None)
    assert len(curve) == 3
    assert curve[0] < 0.5 and curve[-1] >= 0.9
