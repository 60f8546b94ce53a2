"""The fused GRU (``cpu_speedups/gru.py``) and the encoder that trains through it
(``cpu_speedups/encoders.py``) against torch's ``nn.GRU``: values and gradients."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from attentive_reader.cpu_speedups.encoders import FastSequenceEncoder
from attentive_reader.cpu_speedups.gru import pack_rows, packed_gru
from attentive_reader.nn.encoders import SequenceEncoder

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
    encoder = SequenceEncoder(5, 4, num_layers=2, rnn="gru").to(dtype)
    inputs, _, mask = _padded(lengths, 9, 5, dtype)
    states, final = encoder(inputs, mask)
    expected = _gradients(torch.cat([states.flatten(1), final], 1), inputs, encoder)

    _fast(encoder)
    assert encoder._fused_applies(inputs)
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


def _fast(encoder: SequenceEncoder, fused_gru: bool = True) -> FastSequenceEncoder:
    FastSequenceEncoder.swap_in(
        encoder, fused_gru=fused_gru, parallel_directions=True, bf16_fallback=True
    )
    return encoder  # type: ignore[return-value]


def test_the_fast_encoder_trains_a_cpu_gru_fused_and_evaluates_with_torchs():
    gru, lstm = _fast(SequenceEncoder(3, 2, rnn="gru")), _fast(SequenceEncoder(3, 2, rnn="lstm"))
    inputs = torch.zeros(1, 2, 3)
    assert gru._fused_applies(inputs) and not lstm._fused_applies(inputs)  # oneDNN's LSTM
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert gru._fused_applies(inputs.bfloat16())  # computed in float32 inside
    assert not gru._fused_applies(inputs.bfloat16())  # bf16 without autocast: torch's
    assert not gru._fused_applies(inputs.to("meta"))  # another device: torch's kernels
    with torch.no_grad():
        assert not gru._fused_applies(inputs)  # evaluation: torch's
    assert not _fast(SequenceEncoder(3, 2, rnn="gru"), fused_gru=False)._fused_applies(inputs)


def test_the_fused_path_under_autocast_computes_in_float32():
    torch.manual_seed(2)
    encoder = _fast(SequenceEncoder(3, 2, rnn="gru"))
    inputs, _, mask = _padded([3, 2], 3, 3, torch.float32)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        states, _ = encoder(inputs.bfloat16(), mask)
    assert states.dtype == torch.float32
    encoder.fused_gru = False
    with torch.no_grad():
        expected, _ = encoder(inputs.bfloat16().float(), mask)
    assert torch.allclose(states, expected, atol=1e-6)


@pytest.mark.parametrize("emulated", [True, False])
def test_the_fast_encoder_leaves_bf16_autocast_where_bf16_is_emulated(emulated, monkeypatch):
    """Where the CPU only emulates bf16 (oneDNN has no bf16 LSTM there) the encoder computes
    in float32; elsewhere under autocast torch's LSTM gives bf16."""
    from attentive_reader.cpu_speedups import encoders

    monkeypatch.setattr(
        encoders, "bf16_is_emulated", lambda x: emulated and torch.is_autocast_enabled("cpu")
    )
    torch.manual_seed(3)
    encoder = _fast(SequenceEncoder(3, 2, rnn="lstm"))
    inputs, _, mask = _padded([3, 2], 3, 3, torch.float32)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        states, _ = encoder(inputs, mask)
    assert states.dtype == (torch.float32 if emulated else torch.bfloat16)
    if emulated:
        plain, _ = SequenceEncoder.forward(encoder, inputs, mask)
        assert torch.equal(states, plain)
