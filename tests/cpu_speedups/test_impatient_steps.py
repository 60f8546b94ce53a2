"""The Impatient Reader's fused additive steps (``cpu_speedups/impatient_steps.py``) against
the plain recurrence (``nn/impatient.py``), the paper's equations step by step through
autograd."""

from __future__ import annotations

import pytest
import torch
from torch.nn import functional as F

from attentive_reader.cpu_speedups import impatient_steps
from attentive_reader.cpu_speedups.impatient_steps import AdditiveSteps, FusedImpatientSteps
from attentive_reader.models import ImpatientReader
from attentive_reader.nn.impatient import ImpatientSteps
from tests.models.batches import alone, random_batch

pytestmark = pytest.mark.usefixtures("one_thread")


def _reader(answer_layer: str, seed: int = 0, fused: bool = True) -> ImpatientReader:
    """A float64 reader, its steps fused (as ``CpuSpeedups`` swaps them in) or plain."""
    torch.manual_seed(seed)
    reader = ImpatientReader(
        vocab_size=60, num_entities=10, embedding_dim=8, hidden_dim=6, answer_layer=answer_layer
    )
    if fused:
        FusedImpatientSteps.swap_in(reader.steps, fused=True, bf16_fallback=True)
    return reader.double()


def _batch():
    """Queries of 3-7 tokens padded to 7, contexts of 8-20 padded to 20, and one example whose
    query is all padding (its steps all leave r(0) unchanged)."""
    batch = random_batch(num_examples=6, vocab_size=60, num_entities=10, seed=3)
    batch.query_mask[5] = False
    batch.query[5] = 0
    assert (~batch.query_mask).any() and (~batch.context_mask).any()
    return batch


def _loss_and_grads(reader: ImpatientReader, batch, fused: bool):
    """Fused: the reader with the fused steps; else the plain recurrence. No dropout, so
    both read the same."""
    if not fused:
        reader.steps.__class__ = ImpatientSteps
    reader.eval()
    reader.zero_grad()
    out = reader(batch)
    weights = torch.randn(out.attention.shape, generator=torch.Generator().manual_seed(1))
    # Every output carries gradient: the answer and the attention rows of every step.
    loss = F.cross_entropy(out.logits, batch.answer) + (out.attention * weights.double()).sum()
    loss.backward()
    grads = {name: p.grad.clone() for name, p in reader.named_parameters() if p.grad is not None}
    return out, grads


@pytest.mark.parametrize("answer_layer", ["tied", "output", "pointer"])
def test_fused_steps_give_the_step_by_step_values_and_gradients(answer_layer):
    reader, batch = _reader(answer_layer), _batch()
    expected, expected_grads = _loss_and_grads(reader, batch, fused=False)
    got, grads = _loss_and_grads(_reader(answer_layer), batch, fused=True)

    assert torch.allclose(got.logits, expected.logits, atol=1e-10)
    assert torch.allclose(got.attention, expected.attention, atol=1e-12)
    assert (got.attention[5] == 0).all()  # the all-padding query has no attention rows
    assert set(grads) == set(expected_grads)
    for name, grad in expected_grads.items():
        assert torch.allclose(grads[name], grad, atol=1e-10), name
    # The parameters the steps own do get gradient through the hand-written backward.
    for name in ("scorer.key_proj.weight", "scorer.query_proj.weight", "scorer.vector.weight",
                 "recurrent_proj.weight", "initial_read"):  # fmt: skip
        assert grads[name].abs().sum() > 0, name


def _steps_inputs(reader: ImpatientReader, batch, dtype: torch.dtype):
    """Document and query states (b, n|m, 2h) as leaves to differentiate, 0 on padding (as the
    encoders give them), in ``dtype``."""
    generator = torch.Generator().manual_seed(4)
    y_d = torch.randn(*batch.context.shape, 12, generator=generator, dtype=torch.float64)
    y_q = torch.randn(*batch.query.shape, 12, generator=generator, dtype=torch.float64)
    y_d = (y_d * batch.context_mask.unsqueeze(-1)).to(dtype).requires_grad_()
    y_q = (y_q * batch.query_mask.unsqueeze(-1)).to(dtype).requires_grad_()
    return y_d, y_q


def _steps_and_grads(reader: ImpatientReader, batch, y_d, y_q, fused: bool):
    """``r(|q|)``, ``s`` and the scores of the real steps, by one path, and the gradients of a
    loss that reads all three with respect to the states and every parameter of the steps."""
    masks = batch.context_mask, batch.query_mask
    parameters = dict(
        scorer=reader.scorer, recurrent=reader.recurrent_proj, initial=reader.initial_read
    )
    if fused:
        r, attention, scores = impatient_steps.additive_steps(y_d, y_q, *masks, **parameters)
    else:
        steps = ImpatientSteps()(y_d, y_q, *masks, **parameters)
        r, attention, scores = steps.r, steps.attention, steps.scores
    scores = scores * batch.query_mask.unsqueeze(-1)  # padded steps' scores are nobody's
    generator = torch.Generator().manual_seed(5)
    loss = sum(
        (value.double() * torch.randn(value.shape, generator=generator, dtype=torch.float64)).sum()
        for value in (r, attention, scores)
    )
    parameters = [reader.initial_read, reader.recurrent_proj.weight, *reader.scorer.parameters()]
    grads = torch.autograd.grad(loss, [y_d, y_q, *parameters])
    return [value.double() for value in (r, attention, scores)], [g.double() for g in grads]


# Largest difference allowed between the paths, relative to the largest magnitude of each value
# or gradient. float32 (eps 1.2e-7): the paths round differently (sigmoid form, blocked sums);
# seen 3e-7. bf16 (eps 7.8e-3): every product rounds to 8 bits, so each path lies a few eps
# from the exact values, and they differ by as much; seen 1.7e-2.
TOLERANCE = {torch.float32: 3e-6, torch.bfloat16: 6e-2}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
def test_fused_steps_and_the_recurrence_agree_in_float32_and_bfloat16(dtype):
    """Values and gradients on small random states with padding of context and query (and a
    query that is all padding), within ``TOLERANCE`` of the larger magnitude; both paths also
    lie that close to the float64 recurrence."""
    reader, batch = _reader("tied").to(dtype), _batch()
    y_d, y_q = _steps_inputs(reader, batch, dtype)
    # The exact reference: the same rounded parameters and states, in float64.
    y64 = [y.detach().double().requires_grad_() for y in (y_d, y_q)]
    exact, exact_grads = _steps_and_grads(reader.double(), batch, *y64, fused=False)
    reader = reader.to(dtype)
    fused, fused_grads = _steps_and_grads(reader, batch, y_d, y_q, fused=True)
    loop, loop_grads = _steps_and_grads(reader, batch, y_d, y_q, fused=False)
    for got, expected, reference in zip(
        fused + fused_grads, loop + loop_grads, exact + exact_grads
    ):
        scale = reference.abs().max()
        assert scale > 0
        assert (got - expected).abs().max() <= TOLERANCE[dtype] * scale
        assert (got - reference).abs().max() <= TOLERANCE[dtype] * scale
        assert (expected - reference).abs().max() <= TOLERANCE[dtype] * scale


def test_evaluation_autocast_other_scorers_and_cuda_take_the_recurrence():
    """The fused steps are the fast path only in training on the CPU with the additive
    scorer, in float32/float64 outside autocast (on a GPU their cache-sized blocks become
    thousands of small kernels: docs/scale.md)."""
    reader, batch = _reader("tied"), _batch()
    steps, additive = reader.steps, reader.scorer
    y_d, _ = _steps_inputs(reader, batch, torch.float64)
    assert steps.applies(additive, y_d)  # training
    assert steps.applies(additive, y_d.float())
    with torch.no_grad():
        assert not steps.applies(additive, y_d)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert not steps.applies(additive, y_d)
    assert not steps.applies(additive, y_d.detach())
    assert not steps.applies(additive, y_d.bfloat16())
    assert not steps.applies(additive, y_d.to("meta"))  # another device
    dot = ImpatientReader(
        vocab_size=60, num_entities=10, embedding_dim=8, hidden_dim=6, scorer="dot"
    )
    assert not steps.applies(dot.scorer, y_d)  # only the additive scorer has the fused form
    steps.fused = False
    assert not steps.applies(additive, y_d)  # the switch
    reader.eval()
    with torch.no_grad():
        assert reader(batch).logits.isfinite().all()


def test_a_second_backward_through_the_fused_steps_gives_the_same_gradients():
    reader, batch = _reader("tied"), _batch()
    loss = reader(batch).logits.logsumexp(-1).sum()
    loss.backward(retain_graph=True)  # the saved activations are read, never overwritten
    first = {name: p.grad.clone() for name, p in reader.named_parameters() if p.grad is not None}
    reader.zero_grad()
    loss.backward()
    for name, p in reader.named_parameters():
        if name in first:
            assert torch.allclose(p.grad, first[name], atol=1e-12), name


@pytest.mark.parametrize("block", [1000, 100])
def test_the_steps_blocks_give_the_same_values(block, monkeypatch):
    """Several rows to a block (1000 floats: 4 rows of 20 tokens x 12), and pieces of a row
    (100 floats: 8 tokens)."""
    reader, batch = _reader("tied"), _batch()
    expected, expected_grads = _loss_and_grads(reader, batch, fused=True)
    monkeypatch.setattr(impatient_steps, "BLOCK", block)
    got, grads = _loss_and_grads(_reader("tied"), batch, fused=True)
    assert torch.allclose(got.logits, expected.logits, atol=1e-12)
    for name, grad in expected_grads.items():
        assert torch.allclose(grads[name], grad, atol=1e-12), name


def test_fused_steps_by_hand_one_token_one_step():
    """b = 1, n = 2, m = 1, d = a = 1: r(1) = s^T y_d + tanh(W_rr r0), scores by hand."""
    keys = torch.tensor([[[0.2], [-0.4]]], dtype=torch.float64, requires_grad=True)  # P
    states = torch.tensor([[[1.0], [3.0]]], dtype=torch.float64, requires_grad=True)  # y_d
    queries = torch.tensor([[[0.5]]], dtype=torch.float64)
    initial = torch.tensor([[0.1]], dtype=torch.float64)
    query_weight = torch.tensor([[1.0, 2.0]], dtype=torch.float64)  # u = 1 * 0.1 + 2 * 0.5 = 1.1
    vector, shift = torch.tensor([2.0], dtype=torch.float64), torch.tensor(1.0, dtype=torch.float64)
    recurrent = torch.tensor([[0.5]], dtype=torch.float64)
    read, weights, scores = AdditiveSteps.apply(
        keys, states, queries, initial, query_weight, vector, shift, recurrent,
        torch.ones(1, 2, dtype=torch.bool), (1,),
    )  # fmt: skip
    z = 2 * torch.sigmoid(torch.tensor([1.3, 0.7], dtype=torch.float64)) - 1  # = tanh(z / 2)
    assert torch.allclose(scores[0, 0], z)
    s = torch.softmax(z, 0)
    assert torch.allclose(weights[0, 0], s)
    assert torch.allclose(read[0, 0], s[0] * 1.0 + s[1] * 3.0 + torch.tanh(torch.tensor(0.05)))
    read.sum().backward()
    # d r / d y_d = s; d r / d P(t) = sum_t' y_d(t') ds(t')/dz(t) * dz(t)/dP(t).
    assert torch.allclose(states.grad[0, :, 0], s)
    jac = torch.diag(s) - torch.outer(s, s)  # ds / dz
    dz_dp = (
        2 * torch.sigmoid(torch.tensor([1.3, 0.7])) * (1 - torch.sigmoid(torch.tensor([1.3, 0.7])))
    )
    expected = (torch.tensor([1.0, 3.0], dtype=torch.float64) @ jac) * dz_dp.double()
    assert torch.allclose(keys.grad[0, :, 0], expected)


def test_a_query_with_padding_between_its_tokens_takes_the_recurrence():
    reader, batch = _reader("tied").eval(), _batch()
    encoded = reader.encode(batch)
    parameters = dict(
        scorer=reader.scorer, recurrent=reader.recurrent_proj, initial=reader.initial_read
    )
    states = encoded.document, encoded.query, batch.context_mask
    assert impatient_steps.additive_steps(*states, batch.query_mask, **parameters) is not None
    batch.query_mask[0, 1] = False  # a hole: the steps are not a prefix of the query
    assert impatient_steps.additive_steps(*states, batch.query_mask, **parameters) is None
    expected, _ = _loss_and_grads(_reader("tied"), batch, fused=False)
    assert torch.allclose(reader(batch).logits, expected.logits, atol=1e-10)


def test_the_fused_steps_answer_each_example_in_the_given_order():
    """They read the examples longest query first; each row comes back to its own place."""
    reader, batch = _reader("tied").eval(), _batch()
    lengths = batch.query_mask.sum(1)
    assert not (lengths[:-1] >= lengths[1:]).all()  # not in that order already
    out = reader(batch)
    for i in range(len(batch)):  # each example alone gives its own row
        single = reader(alone(batch, i, min_query=1))
        assert torch.allclose(out.logits[i], single.logits[0], atol=1e-10)
        m, n = single.attention.shape[1:]
        assert torch.allclose(out.attention[i, :m, :n], single.attention[0], atol=1e-12)
        assert (out.attention[i, :, n:] == 0).all()  # the context padding it was read with


def test_the_workspace_is_reused_after_a_backward_and_never_shared_by_two_live_graphs():
    batch = _batch()
    expected, expected_grads = _loss_and_grads(_reader("tied"), batch, fused=False)
    reader = _reader("tied").eval()  # no dropout: every forward reads the same
    workspace = reader.steps.workspace

    def loss_of(out):
        weights = torch.randn(out.attention.shape, generator=torch.Generator().manual_seed(1))
        return F.cross_entropy(out.logits, batch.answer) + (out.attention * weights.double()).sum()

    # Two forwards before either backward: the second may not overwrite the first's activations.
    first = loss_of(reader(batch))
    held = workspace._buffer.data_ptr()
    second = loss_of(reader(batch))
    assert workspace._buffer.data_ptr() == held  # the second got a fresh tensor
    for loss in (second, first):
        reader.zero_grad()
        loss.backward()
        for name, grad in expected_grads.items():
            assert torch.allclose(reader.get_parameter(name).grad, grad, atol=1e-10), name
    del first, second
    # Both graphs are gone: the next forward takes the same buffer again.
    reader(batch).logits.sum().backward()
    assert workspace._buffer.data_ptr() == held
    reader.train()
    reader.eval()
    assert workspace._buffer is None  # evaluation keeps no activations
