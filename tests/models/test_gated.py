"""The Gated-Attention Reader: the gate's maths by hand, masking, a training step.

The reader contract (every answer layer, candidate masking, permutation equivariance, ...)
runs over this reader from the registry: ``test_contract.py``.
"""

import math

import pytest
import torch
import torch.nn.functional as F

from attentive_reader.models import GatedAttentionReader
from attentive_reader.models.gated import gated_attention, placeholder_states

from .batches import random_batch, select

VOCAB, ENTITIES = 60, 10
TINY = {"embedding_dim": 12, "hidden_dim": 12, "dropout": 0.0}

# Two document tokens d_1 = (1, 0), d_2 = (0, 1); two query tokens q_1 = (1, 0), q_2 = (0, 2).
# Scores d_t . q_i: row 1 (1, 0), row 2 (0, 2).
DOCUMENT = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])
QUERY = torch.tensor([[[1.0, 0.0], [0.0, 2.0]]])
E = math.e
A1 = (E / (E + 1), 1 / (E + 1))  # alpha(1) = softmax(1, 0)
A2 = (1 / (1 + E**2), E**2 / (1 + E**2))  # alpha(2) = softmax(0, 2)
# q~_t = alpha(t, 1) q_1 + alpha(t, 2) q_2 = (alpha(t, 1), 2 alpha(t, 2))
ATTENDED = torch.tensor([[[A1[0], 2 * A1[1]], [A2[0], 2 * A2[1]]]])


def build(**options) -> GatedAttentionReader:
    torch.manual_seed(0)
    return GatedAttentionReader(vocab_size=VOCAB, num_entities=ENTITIES, **{**TINY, **options})


def ones(b: int, n: int) -> torch.Tensor:
    return torch.ones(b, n, dtype=torch.bool)


@pytest.mark.parametrize(
    ("gate", "expected"),
    [
        ("mul", [[A1[0], 0.0], [0.0, 2 * A2[1]]]),
        ("sum", [[1 + A1[0], 2 * A1[1]], [A2[0], 1 + 2 * A2[1]]]),
        ("concat", [[1.0, 0.0, A1[0], 2 * A1[1]], [0.0, 1.0, A2[0], 2 * A2[1]]]),
    ],
)
def test_gate_by_hand(gate, expected):
    gated, alpha = gated_attention(DOCUMENT, QUERY, ones(1, 2), ones(1, 2), gate)
    assert torch.allclose(alpha, torch.tensor([[A1, A2]]))
    assert torch.allclose(gated, torch.tensor([expected]))


def test_attended_query_by_hand():
    # With the sum gate, gated - d is the attended query vector itself.
    gated, _ = gated_attention(DOCUMENT, QUERY, ones(1, 2), ones(1, 2), "sum")
    assert torch.allclose(gated - DOCUMENT, ATTENDED)


@pytest.mark.parametrize("gate", ["mul", "sum", "concat"])
def test_gate_ignores_padding(gate):
    # A padded query token with a large score, and a padded document token.
    query = torch.cat([QUERY, torch.tensor([[[50.0, 50.0]]])], dim=1)  # (1, 3, 2)
    document = torch.cat([DOCUMENT, torch.zeros(1, 1, 2)], dim=1)  # (1, 3, 2)
    query_mask = torch.tensor([[True, True, False]])
    document_mask = torch.tensor([[True, True, False]])
    gated, alpha = gated_attention(document, query, document_mask, query_mask, gate)
    plain, plain_alpha = gated_attention(DOCUMENT, QUERY, ones(1, 2), ones(1, 2), gate)
    assert torch.equal(alpha[0, :, 2], torch.zeros(3))  # no weight on the padded query token
    assert torch.equal(alpha[0, 2], torch.zeros(3))  # the padded document token reads nothing
    assert torch.equal(gated[0, 2], torch.zeros(gated.shape[-1]))
    assert torch.allclose(alpha[:, :2, :2], plain_alpha)
    assert torch.allclose(gated[:, :2], plain)


def test_placeholder_state_or_the_final_state():
    states = torch.arange(12.0).view(2, 3, 2)  # (b=2, m=3, c=2)
    final = torch.tensor([[-1.0, -1.0], [-2.0, -2.0]])
    query = torch.tensor([[7, 2, 8], [7, 8, 0]])  # the second query has no @placeholder (2)
    chosen = placeholder_states(states, final, query, query != 0)
    assert torch.equal(chosen, torch.tensor([[2.0, 3.0], [-2.0, -2.0]]))


@pytest.mark.parametrize("gate", ["mul", "sum", "concat"])
@pytest.mark.parametrize("layer", ["pointer", "tied"])
def test_padded_batch_gives_the_unpadded_results(gate, layer):
    reader = build(gate=gate, answer_layer=layer, query_match=True).eval()
    batch = random_batch(num_examples=5, vocab_size=VOCAB, num_entities=ENTITIES, seed=3)
    with torch.no_grad():
        output = reader(batch)
        for i in range(len(batch)):
            alone = reader(select(batch, [i]))
            n, m = alone.attention.shape[1], alone.extras.hop_attention.shape[-1]
            assert torch.allclose(output.logits[i], alone.logits[0], atol=1e-5)
            assert torch.allclose(output.attention[i, :n], alone.attention[0], atol=1e-6)
            hops = output.extras.hop_attention[i, :, :n, :m]
            assert torch.allclose(hops, alone.extras.hop_attention[0], atol=1e-6)
    # Padding gets exactly 0 attention, in the document and in every hop's query attention.
    assert torch.equal(
        output.attention[~batch.context_mask], torch.zeros(int((~batch.context_mask).sum()))
    )
    hops = output.extras.hop_attention  # (b, K - 1, n, m)
    assert hops.shape == (len(batch), 2, batch.context.shape[1], batch.query.shape[1])
    assert (hops.masked_select(~batch.query_mask[:, None, None, :]) == 0).all()
    assert (hops.masked_select(~batch.context_mask[:, None, :, None]) == 0).all()
    real = batch.context_mask[:, None, :] & torch.ones_like(hops[..., 0], dtype=torch.bool)
    assert torch.allclose(hops.sum(-1)[real], torch.ones(int(real.sum())))


def test_one_hop_has_no_gated_attention():
    reader = build(num_hops=1).eval()
    batch = random_batch(num_examples=3, vocab_size=VOCAB, num_entities=ENTITIES, seed=1)
    with torch.no_grad():
        hops = reader(batch).extras.hop_attention
    assert hops.shape == (3, 0, batch.context.shape[1], batch.query.shape[1])


def test_training_steps_reduce_the_loss_and_reach_every_hop():
    reader = build(query_match=True, lr=0.01).train()
    batch = random_batch(num_examples=8, vocab_size=VOCAB, num_entities=ENTITIES, seed=5)
    optimizer = reader.configure_optimizers()
    losses = []
    for step in range(40):
        optimizer.zero_grad()
        loss = F.cross_entropy(reader(batch).logits.float(), batch.answer)
        loss.backward()
        if step == 0:
            for name, parameter in reader.named_parameters():
                assert parameter.grad is not None, name
                assert torch.isfinite(parameter.grad).all(), name
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]
    with torch.no_grad():
        loss = F.cross_entropy(reader.eval()(batch).logits.float(), batch.answer)
    assert torch.isfinite(loss)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"num_hops": 0}, "num_hops must be a positive integer"),
        ({"gate": "max"}, "gate must be one of mul, sum, concat"),
        ({"dropout": 1.0}, r"dropout must be in \[0, 1\)"),
        ({"answer_layer": "softmax"}, "answer_layer must be one of"),
    ],
)
def test_bad_arguments(options, message):
    with pytest.raises(ValueError, match=message):
        build(**options)
