"""Float32 where the CPU only emulates bf16 (``cpu_speedups/precision.py``): when it applies,
and the Impatient steps leaving autocast there (the encoders: ``test_gru.py``)."""

from __future__ import annotations

import pytest
import torch

from attentive_reader.cpu_speedups import impatient_steps
from attentive_reader.cpu_speedups.impatient_steps import FusedImpatientSteps
from attentive_reader.cpu_speedups.precision import bf16_is_emulated
from attentive_reader.models import ImpatientReader
from attentive_reader.nn.impatient import ImpatientSteps
from tests.models.batches import random_batch


def test_bf16_is_emulated_only_under_cpu_bf16_autocast():
    x = torch.zeros(2)
    assert not bf16_is_emulated(x)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert bf16_is_emulated(x) == (not torch.ops.mkldnn._is_mkldnn_bf16_supported())
    with torch.autocast("cpu", dtype=torch.float16):
        assert not bf16_is_emulated(x)


@pytest.mark.parametrize("emulated", [True, False])
def test_impatient_steps_run_in_float32_where_bf16_is_emulated(emulated, monkeypatch):
    """Their attention is float32 there and equals the plain steps' float32 reading of the
    same states; elsewhere the steps stay under autocast (bf16)."""
    monkeypatch.setattr(
        impatient_steps,
        "bf16_is_emulated",
        lambda tensor: emulated and torch.is_autocast_enabled("cpu"),
    )
    torch.manual_seed(0)
    reader = ImpatientReader(vocab_size=40, num_entities=8, embedding_dim=8, hidden_dim=6).eval()
    FusedImpatientSteps.swap_in(reader.steps, fused=True, bf16_fallback=True)
    batch = random_batch(num_examples=3, vocab_size=40, num_entities=8, seed=6)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        attention = reader(batch).attention
        encoded = reader.encode(batch)
    assert attention.dtype == (torch.float32 if emulated else torch.bfloat16)
    if emulated:
        with torch.no_grad():
            expected = ImpatientSteps()(
                encoded.document.float(), encoded.query.float(),
                batch.context_mask, batch.query_mask,
                scorer=reader.scorer, recurrent=reader.recurrent_proj,
                initial=reader.initial_read,
            ).attention  # fmt: skip
        assert torch.equal(attention, expected)
