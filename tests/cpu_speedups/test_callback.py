"""``CpuSpeedups``: the fast parts swapped in on a CPU run only, with the plain parts' names,
values and gradients, and swapped back at the end."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from attentive_reader.cpu_speedups import CpuSpeedups
from attentive_reader.cpu_speedups.dropout import FastDropout
from attentive_reader.cpu_speedups.encoders import FastSequenceEncoder
from attentive_reader.cpu_speedups.impatient_steps import FusedImpatientSteps
from attentive_reader.models import (
    AttentiveReader,
    DeepLSTMReader,
    GatedAttentionReader,
    ImpatientReader,
)
from attentive_reader.nn.encoders import SequenceEncoder
from attentive_reader.nn.impatient import ImpatientSteps
from tests.models.batches import random_batch

pytestmark = pytest.mark.usefixtures("one_thread")

VOCAB, ENTITIES = 40, 8
SIZES = {"vocab_size": VOCAB, "num_entities": ENTITIES, "embedding_dim": 8, "hidden_dim": 6}


def _trainer(device: str) -> SimpleNamespace:
    """What the callback reads of a trainer: its strategy's root device."""
    return SimpleNamespace(strategy=SimpleNamespace(root_device=torch.device(device)))


def _classes(module: nn.Module) -> dict[str, type]:
    return {name: type(part) for name, part in module.named_modules()}


READERS = {
    "gru": lambda **o: AttentiveReader(**SIZES, rnn="gru", num_layers=2, **o),
    "impatient": lambda **o: ImpatientReader(**SIZES, **o),
    "gated": lambda **o: GatedAttentionReader(**SIZES, **o),
    "deep-lstm": lambda **o: DeepLSTMReader(**SIZES, **o),
}


def test_a_cpu_run_swaps_every_plain_part_and_teardown_swaps_them_back():
    reader = ImpatientReader(**SIZES, rnn="gru", num_layers=2, dropout=0.2)
    before = _classes(reader)
    keys = list(reader.state_dict())
    callback = CpuSpeedups()
    callback.setup(_trainer("cpu"), reader, "fit")
    assert type(reader.encoders.document) is FastSequenceEncoder
    assert type(reader.encoders.query) is FastSequenceEncoder
    assert type(reader.encoders.dropout) is FastDropout
    assert type(reader.encoders.document.dropout) is FastDropout  # between the layers
    assert type(reader.steps) is FusedImpatientSteps
    assert list(reader.state_dict()) == keys  # checkpoints keep their names
    callback.teardown(_trainer("cpu"), reader, "fit")
    assert _classes(reader) == before
    assert not hasattr(reader.steps, "workspace")  # what the swap added is gone


@pytest.mark.parametrize("device", ["cuda", "mps", "meta"])
def test_another_device_is_left_untouched(device):
    reader = ImpatientReader(**SIZES, rnn="gru")
    before = _classes(reader)
    callback = CpuSpeedups()
    callback.setup(_trainer(device), reader, "fit")
    assert _classes(reader) == before and callback.swaps == []
    callback.on_train_start(_trainer(device), reader)
    assert not callback._training_settings  # nor malloc, nor the floating-point flags


def test_switches_off_leave_their_parts_plain_and_subclasses_are_never_touched():
    class MyEncoder(SequenceEncoder):
        pass

    reader = ImpatientReader(**SIZES)
    reader.encoders.query = MyEncoder(8, 3)
    callback = CpuSpeedups(gru=False, impatient_steps=False, dropout=False, bf16_fallback=False)
    callback.setup(_trainer("cpu"), reader, "fit")
    assert callback.swaps == []
    assert type(reader.encoders.document) is SequenceEncoder
    assert type(reader.steps) is ImpatientSteps and type(reader.encoders.dropout) is nn.Dropout
    CpuSpeedups().setup(_trainer("cpu"), reader, "fit")
    assert type(reader.encoders.query) is MyEncoder


def test_a_bad_choice_of_directions_says_what_to_use():
    with pytest.raises(ValueError, match="'parallel' or 'serial'"):
        CpuSpeedups(gru_directions="both")  # type: ignore[arg-type]


def _loss_and_grads(reader: nn.Module, batch) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    reader.zero_grad()
    out = reader(batch)
    loss = F.cross_entropy(out.logits, batch.answer)
    if out.attention is not None:  # every step's attention carries gradient too
        weights = torch.randn(out.attention.shape, generator=torch.Generator().manual_seed(1))
        loss = loss + (out.attention * weights.to(out.attention.dtype)).sum()
    loss.backward()
    grads = {name: p.grad.clone() for name, p in reader.named_parameters() if p.grad is not None}
    return loss.detach(), grads


@pytest.mark.parametrize("name", sorted(READERS))
def test_the_swap_gives_the_plain_loss_and_gradients(name):
    """Training mode with dropout 0 (masks are drawn differently), gradients on: the fused
    GRU, the fused Impatient steps and the fast dropout all run, to float64 rounding."""
    torch.manual_seed(0)
    plain = READERS[name](dropout=0.0).double().train()
    batch = random_batch(num_examples=5, vocab_size=VOCAB, num_entities=ENTITIES, seed=4)
    expected_loss, expected = _loss_and_grads(plain, batch)
    callback = CpuSpeedups()
    callback.setup(_trainer("cpu"), plain, "fit")
    assert callback.swaps  # something was swapped in
    loss, grads = _loss_and_grads(plain, batch)
    torch.testing.assert_close(loss, expected_loss, rtol=1e-10, atol=1e-10)
    assert grads.keys() == expected.keys()
    for key, grad in expected.items():
        torch.testing.assert_close(grads[key], grad, rtol=1e-8, atol=1e-10, msg=key)


def test_the_swapped_parts_are_the_ones_that_ran(monkeypatch):
    """The comparison above would pass were the fast paths never taken: count them."""
    from attentive_reader.cpu_speedups import encoders, impatient_steps

    ran = {"gru": 0, "steps": 0}
    packed, steps = encoders.packed_gru, impatient_steps.additive_steps

    def counted_gru(*args):
        ran["gru"] += 1
        return packed(*args)

    def counted_steps(*args, **kwargs):
        ran["steps"] += 1
        return steps(*args, **kwargs)

    monkeypatch.setattr(encoders, "packed_gru", counted_gru)
    monkeypatch.setattr(impatient_steps, "additive_steps", counted_steps)
    reader = ImpatientReader(**SIZES, rnn="gru").train()
    CpuSpeedups().setup(_trainer("cpu"), reader, "fit")
    batch = random_batch(num_examples=5, vocab_size=VOCAB, num_entities=ENTITIES, seed=4)
    _loss_and_grads(reader, batch)
    assert ran["gru"] == 2 and ran["steps"] >= 1  # both encoders (one layer); the steps
    counts = dict(ran)
    with torch.no_grad():
        reader(batch)  # evaluation: the plain paths
    assert ran == counts


def test_the_swapped_dropout_keeps_one_minus_p_and_evaluation_reads_as_plain():
    torch.manual_seed(0)
    reader = AttentiveReader(**SIZES, dropout=0.3)
    batch = random_batch(num_examples=5, vocab_size=VOCAB, num_entities=ENTITIES, seed=4)
    reader.eval()
    with torch.no_grad():
        expected = reader(batch).logits
    CpuSpeedups().setup(_trainer("cpu"), reader, "fit")
    with torch.no_grad():
        assert torch.equal(reader(batch).logits, expected)  # no dropout in evaluation
    dropout = reader.encoders.dropout.train()
    assert type(dropout) is FastDropout
    kept = (dropout(torch.ones(200_000)) != 0).float().mean().item()
    assert abs(kept - 0.7) < 5 * (0.3 * 0.7 / 200_000) ** 0.5  # five standard deviations


def test_a_checkpoint_saved_with_the_swap_loads_in_a_plain_reader_and_back():
    torch.manual_seed(0)
    fast = ImpatientReader(**SIZES, rnn="gru")
    CpuSpeedups().setup(_trainer("cpu"), fast, "fit")
    torch.manual_seed(1)
    plain = ImpatientReader(**SIZES, rnn="gru")
    plain.load_state_dict(fast.state_dict())  # strict
    for key, value in fast.state_dict().items():
        assert torch.equal(plain.state_dict()[key], value), key
    fast.load_state_dict(plain.state_dict())
