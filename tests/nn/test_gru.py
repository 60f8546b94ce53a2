"""The GRU's training path (``nn/gru.py``) against torch's ``nn.GRU``: values and gradients."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from attentive_reader.nn.encoders import SequenceEncoder
from attentive_reader.nn.gru import pack_rows, packed_gru

# float64 differs from nn.GRU by rounding only; float32 by float32 rounding over ~10 steps.
TOLERANCE = {torch.float64: 1e-12, torch.float32: 1e-5}


def _padded(lengths: list[int], n: int, d: int, dtype: torch.dtype, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    lengths_t = torch.tensor(lengths)
    mask = torch.arange(n) < lengths_t.unsqueeze(1)  # (b, n)
    inputs = torch.randn(len(lengths), n, d, generator=generator, dtype=dtype)
    inputs = torch.where(mask.unsqueeze(-1), inputs, 0.0).requires_grad_()
    return inputs, lengths_t, mask


def _gradients(output: torch.Tensor, inputs: torch.Tensor, module: nn.Module) -> list:
    weights = torch.randn(output.shape, generator=torch.Generator().manual_seed(9))
    tensors = [inputs, *module.parameters()]
    return list(torch.autograd.grad((output * weights.to(output.dtype)).sum(), tensors))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("lengths", [[9, 3, 7, 1, 0], [2, 5, 5, 4], [6], [0, 0]])
def test_the_fused_encoder_gives_torchs_values_and_gradients(lengths, dtype):
    torch.manual_seed(0)
    encoder = SequenceEncoder(5, 4, num_layers=2, rnn="gru", path="padded").to(dtype)
    inputs, _, mask = _padded(lengths, 9, 5, dtype)
    states, final = encoder(inputs, mask)
    expected = _gradients(torch.cat([states.flatten(1), final], 1), inputs, encoder)

    encoder.path = "fused"
    fused_states, fused_final = encoder(inputs, mask)
    got = _gradients(torch.cat([fused_states.flatten(1), fused_final], 1), inputs, encoder)

    tolerance = TOLERANCE[dtype]
    assert torch.allclose(fused_states, states, atol=tolerance, rtol=0)
    assert torch.allclose(fused_final, final, atol=tolerance, rtol=0)
    assert (fused_states[~mask] == 0).all()  # exactly 0 on padding
    for a, b in zip(got, expected):
        assert torch.allclose(a, b, atol=tolerance, rtol=0)


def test_several_grus_read_together_each_as_alone():
    """K = 3 GRUs, two of them reading from each sequence's end: each as one nn.GRU."""
    torch.manual_seed(1)
    cells = [nn.GRU(3, 2, batch_first=True).double() for _ in range(3)]
    reverse = (False, True, True)
    inputs, lengths, _ = _padded([4, 2, 3], 4, 3, torch.float64)
    together = packed_gru(inputs, lengths, cells, reverse)  # (b, n, 3 * 2)
    for j, (cell, back) in enumerate(zip(cells, reverse)):
        for i, length in enumerate(lengths.tolist()):
            sequence = inputs[i : i + 1, :length]
            alone = cell(sequence.flip(1) if back else sequence)[0]
            alone = alone.flip(1) if back else alone
            assert torch.allclose(together[i : i + 1, :length, 2 * j : 2 * j + 2], alone)


def test_packing_reads_the_longest_sequence_first_and_each_from_its_end():
    packing = pack_rows(torch.tensor([2, 3, 0, 1]), n=3)
    assert packing.sizes == (3, 2, 1) and packing.offsets == (0, 3, 5)
    # Step by step, longest first: sequence 1 (flat rows 3..5), then 0 (0..2), then 3 (9..).
    assert packing.forwards.tolist() == [3, 0, 9, 4, 1, 5]
    assert packing.backwards.tolist() == [5, 1, 9, 4, 0, 3]
    # The initial states are rows 0..2; step 1 continues rows 3 and 4 (step 0's first two).
    assert packing.previous.tolist() == [0, 1, 2, 3, 4, 6]


def test_auto_trains_a_cpu_gru_through_the_fused_path_and_evaluates_with_torchs():
    gru, lstm = SequenceEncoder(3, 2, rnn="gru"), SequenceEncoder(3, 2, rnn="lstm")
    inputs = torch.zeros(1, 2, 3)
    assert gru._path(inputs) == "fused" and lstm._path(inputs) == "padded"
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert gru._path(inputs.bfloat16()) == "fused"  # computed in float32 inside
    with torch.no_grad():
        assert gru._path(inputs) == "padded"
    assert SequenceEncoder(3, 2, rnn="gru", path="padded")._path(inputs) == "padded"
    with pytest.raises(ValueError, match="GRU"):
        SequenceEncoder(3, 2, rnn="lstm", path="fused")


def test_the_fused_path_under_autocast_computes_in_float32():
    torch.manual_seed(2)
    encoder = SequenceEncoder(3, 2, rnn="gru")
    inputs, _, mask = _padded([3, 2], 3, 3, torch.float32)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        states, _ = encoder(inputs.bfloat16(), mask)
    assert states.dtype == torch.float32
    encoder.path = "padded"
    with torch.no_grad():
        expected, _ = encoder(inputs.bfloat16().float(), mask)
    assert torch.allclose(states, expected, atol=1e-6)
