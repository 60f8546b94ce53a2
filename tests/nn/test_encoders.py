import math

import pytest
import torch
from torch import nn

from attentive_reader.nn.encoders import SequenceEncoder, set_forget_bias


def padded(lengths, dim=3, seed=0):
    """Random inputs whose padding is filled with large garbage values (it must not matter)."""
    generator = torch.Generator().manual_seed(seed)
    n = max(lengths)
    inputs = torch.randn(len(lengths), n, dim, generator=generator)
    mask = torch.arange(n).unsqueeze(0) < torch.tensor(lengths).unsqueeze(1)
    inputs = torch.where(mask.unsqueeze(-1), inputs, torch.full_like(inputs, 100.0))
    return inputs, mask


@pytest.mark.parametrize("rnn", ["lstm", "gru"])
def test_padding_does_not_leak_and_states_are_zero(rnn):
    torch.manual_seed(0)
    encoder = SequenceEncoder(3, 4, rnn=rnn, num_layers=2)
    inputs, mask = padded([5, 2, 4])
    states, final = encoder(inputs, mask)
    assert states.shape == (3, 5, 8) and final.shape == (3, 8)
    assert torch.equal(states[1, 2:], torch.zeros(3, 8))
    assert torch.equal(states[2, 4:], torch.zeros(1, 8))
    # Each sequence encoded alone, without any padding, gives the same states and final state:
    # in particular the backward direction starts at the last real token.
    for i, length in enumerate([5, 2, 4]):
        alone_states, alone_final = encoder(inputs[i : i + 1, :length], mask[i : i + 1, :length])
        assert torch.allclose(states[i, :length], alone_states[0], atol=1e-6)
        assert torch.allclose(final[i], alone_final[0], atol=1e-6)


def test_final_is_last_forward_and_first_backward_state():
    torch.manual_seed(0)
    encoder = SequenceEncoder(3, 4)
    inputs, mask = padded([5, 2])
    states, final = encoder(inputs, mask)
    for i, length in enumerate([5, 2]):
        expected = torch.cat([states[i, length - 1, :4], states[i, 0, 4:]])
        assert torch.allclose(final[i], expected, atol=1e-6)


def test_unidirectional_final_is_last_state():
    torch.manual_seed(0)
    encoder = SequenceEncoder(3, 4, bidirectional=False)
    inputs, mask = padded([3, 1])
    states, final = encoder(inputs, mask)
    assert states.shape == (2, 3, 4) and encoder.output_dim == 4
    assert torch.allclose(final, torch.stack([states[0, 2], states[1, 0]]))


def test_empty_sequence_gives_zeros():
    encoder = SequenceEncoder(3, 4)
    inputs, mask = padded([2, 0])
    states, final = encoder(inputs, mask)
    assert torch.equal(states[1], torch.zeros(2, 8)) and torch.equal(final[1], torch.zeros(8))


def test_forget_bias_sets_the_forget_gates_and_nothing_else():
    """The summed forget bias is the value; a state then decays by sigmoid(value) a step."""
    torch.manual_seed(0)
    encoder = SequenceEncoder(3, 4, num_layers=2, bidirectional=True)
    before = {name: p.detach().clone() for name, p in encoder.named_parameters()}
    set_forget_bias(encoder, 1.0)
    for name, p in encoder.named_parameters():
        if "bias" not in name:
            assert torch.equal(p, before[name])
            continue
        forget = slice(4, 8)
        expected = 1.0 if "bias_ih" in name else 0.0
        assert torch.equal(p[forget], torch.full((4,), expected))
        rest = torch.cat([p[:4], p[8:]])
        assert torch.equal(rest, torch.cat([before[name][:4], before[name][8:]]))
    # With no weights, c(t) = sigmoid(1) c(t-1) + sigmoid(b_i) tanh(b_g): with b_i = b_g = 0
    # the cell input is 0, so put it in through b_g and compare two steps by hand.
    single = SequenceEncoder(1, 1, bidirectional=False)
    set_forget_bias(single, 1.0)
    cell = single.layers[0][0]
    with torch.no_grad():
        for p in (cell.weight_ih_l0, cell.weight_hh_l0):
            p.zero_()
        cell.bias_ih_l0.copy_(torch.tensor([0.0, 1.0, 2.0, 0.0]))  # i, f, g, o
        cell.bias_hh_l0.zero_()
    states, _ = single(torch.zeros(1, 2, 1), torch.ones(1, 2, dtype=torch.bool))
    a = 0.5 * math.tanh(2.0)  # sigmoid(0) tanh(2)
    c1, c2 = a, (1 / (1 + math.exp(-1.0))) * a + a
    expected = torch.tensor([0.5 * math.tanh(c1), 0.5 * math.tanh(c2)])
    torch.testing.assert_close(states[0, :, 0], expected)
    with pytest.raises(ValueError, match="forget gate"):
        set_forget_bias(SequenceEncoder(3, 4, rnn="gru"), 1.0)


def test_encoder_validates_arguments():
    with pytest.raises(ValueError, match="rnn must be"):
        SequenceEncoder(3, 4, rnn="transformer")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="dropout"):
        SequenceEncoder(3, 4, dropout=1.5)


def packed_reference(encoder: SequenceEncoder, rnn: str, inputs, mask):
    """The same weights in one torch (bi)directional RNN over a PackedSequence."""
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

    layers = len(encoder.layers)
    cell = nn.LSTM if rnn == "lstm" else nn.GRU
    reference = cell(
        inputs.shape[-1],
        encoder.hidden_dim,
        num_layers=layers,
        batch_first=True,
        bidirectional=encoder.bidirectional,
    )
    with torch.no_grad():
        for k, directions in enumerate(encoder.layers):
            for direction, module in zip(("", "_reverse"), directions):
                for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                    getattr(reference, f"{name}_l{k}{direction}").copy_(
                        getattr(module, f"{name}_l0")
                    )
    lengths = mask.sum(dim=1)
    packed = pack_padded_sequence(inputs, lengths, batch_first=True, enforce_sorted=False)
    out, hidden = reference(packed)
    states, _ = pad_packed_sequence(out, batch_first=True, total_length=inputs.shape[1])
    hidden = hidden[0] if rnn == "lstm" else hidden
    final = torch.cat([hidden[-2], hidden[-1]], -1) if encoder.bidirectional else hidden[-1]
    return states, final, reference


@pytest.mark.parametrize(
    "rnn,layers,bidirectional", [("lstm", 2, True), ("gru", 2, True), ("lstm", 2, False)]
)
def test_matches_torch_packed_rnn_values_and_gradients(rnn, layers, bidirectional):
    torch.manual_seed(0)
    encoder = SequenceEncoder(3, 4, rnn=rnn, num_layers=layers, bidirectional=bidirectional)
    inputs, mask = padded([6, 1, 4, 6], seed=1)
    weights = torch.randn(4, 6, encoder.output_dim)  # a loss that weighs every state
    states, final = encoder(inputs, mask)
    ref_states, ref_final, reference = packed_reference(encoder, rnn, inputs, mask)
    assert torch.allclose(states, ref_states, atol=1e-6)
    assert torch.allclose(final, ref_final, atol=1e-6)
    ((states * weights).sum() + final.sum()).backward()
    ((ref_states * weights).sum() + ref_final.sum()).backward()
    for k, directions in enumerate(encoder.layers):
        for direction, module in zip(("", "_reverse"), directions):
            for name in ("weight_ih", "weight_hh", "bias_hh"):
                expected = getattr(reference, f"{name}_l{k}{direction}").grad
                assert torch.allclose(getattr(module, f"{name}_l0").grad, expected, atol=1e-5)


def test_same_seed_gives_the_weights_of_a_bidirectional_lstm():
    torch.manual_seed(3)
    encoder = SequenceEncoder(3, 4, num_layers=2)
    torch.manual_seed(3)
    lstm = nn.LSTM(3, 4, num_layers=2, bidirectional=True)
    assert torch.equal(encoder.layers[1][1].weight_hh_l0, lstm.weight_hh_l1_reverse)
    assert torch.equal(encoder.layers[0][0].bias_ih_l0, lstm.bias_ih_l0)


def test_dropout_between_layers_only_in_training():
    torch.manual_seed(0)
    encoder = SequenceEncoder(3, 4, num_layers=2, dropout=0.5)
    inputs, mask = padded([5, 3])
    encoder.eval()
    first, _ = encoder(inputs, mask)
    again, _ = encoder(inputs, mask)
    assert torch.equal(first, again)
    encoder.train()
    noisy, _ = encoder(inputs, mask)
    assert not torch.allclose(noisy, first)
    assert torch.equal(noisy[1, 3:], torch.zeros(2, 8))
