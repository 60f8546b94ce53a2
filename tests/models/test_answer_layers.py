"""The answer layers (``nn/answer.py``): hand-computed values, and every reader with every
layer it accepts: a training step, candidate masking, and permutation equivariance for the
tied and pointer layers."""

import math

import pytest
import torch
import torch.nn.functional as F

from attentive_reader.data.batching import ClozeBatch
from attentive_reader.models import (
    AttentiveReader,
    DeepLSTMReader,
    GatedAttentionReader,
    GaussianGlimpseReader,
    HardAttentionReader,
    ImpatientReader,
    TransformerGlimpseReader,
    UniformReader,
)
from attentive_reader.nn.answer import TiedAnswer, pointer_scores, token_entities

from .batches import ENTITY_OFFSET, make_batch, random_batch

VOCAB, ENTITIES = 60, 10
TINY = {"embedding_dim": 12, "hidden_dim": 12, "dropout": 0.0}
ALL = ("output", "tied", "pointer")
NO_POINTER = ("output", "tied")
# Every reader and the answer layers it accepts.
REGISTRY = {
    "attentive": (AttentiveReader, {}, ALL),
    "impatient": (ImpatientReader, {}, ALL),
    "uniform": (UniformReader, {}, NO_POINTER),
    "deep-lstm": (DeepLSTMReader, {}, NO_POINTER),
    "hard": (HardAttentionReader, {"num_samples": 2}, NO_POINTER),
    "gaussian": (GaussianGlimpseReader, {"num_filters": 4}, ALL),
    "transformer": (TransformerGlimpseReader, {"num_filters": 4}, ALL),
    "gaussian-flatten": (GaussianGlimpseReader, {"glimpse_readout": "flatten"}, NO_POINTER),
    "gated": (GatedAttentionReader, {}, ALL),
    "gated-concat": (GatedAttentionReader, {"gate": "concat", "num_hops": 2}, ALL),
}
CASES = [
    pytest.param(name, layer, match, id=f"{name}-{layer}{'-match' if match else ''}")
    for name, (_, _, layers) in REGISTRY.items()
    for layer in layers
    for match in (False, True)
]


def build(name: str, layer: str, query_match: bool = False):
    cls, options, _ = REGISTRY[name]
    torch.manual_seed(0)
    return cls(VOCAB, ENTITIES, answer_layer=layer, query_match=query_match, **TINY, **options)


# --- the layers' maths by hand ----------------------------------------------------------


def test_token_entities_marks_real_entity_tokens_only():
    context = torch.tensor([[3, 20, 5, 3, 0], [14, 12, 2, 1, 0]])  # 14 = @entity11: out of range
    mask = context != 0
    expected = torch.tensor([[0, -1, 2, 0, -1], [-1, 9, -1, -1, -1]])
    assert torch.equal(token_entities(context, mask, ENTITY_OFFSET, ENTITIES), expected)


def test_pointer_scores_are_the_attention_summed_per_entity():
    # Tokens: @entity1, word, @entity1, @entity0, padding-like word.
    scores = torch.tensor([[0.0, 5.0, math.log(3.0), math.log(2.0), 7.0]])
    entities = torch.tensor([[1, -1, 1, 0, -1]])
    logits = pointer_scores(scores, entities, num_entities=3)
    # exp: entity1 = 1 + 3 = 4, entity0 = 2 -> p = (2/6, 4/6) over the present entities.
    assert torch.allclose(logits[0, :2], torch.tensor([math.log(2.0), math.log(4.0)]))
    probs = torch.softmax(logits, -1)
    assert torch.allclose(probs[0, :2], torch.tensor([1 / 3, 2 / 3]), atol=1e-6)
    # An entity without a position sits 50 below the best: probability ~0 but a finite loss.
    assert logits[0, 2] == pytest.approx(math.log(4.0) - 50.0)


def test_pointer_scores_are_stable_for_large_scores():
    scores = torch.tensor([[1000.0, 1000.0, -1000.0]])
    logits = pointer_scores(scores, torch.tensor([[0, 0, 1]]), num_entities=2)
    assert torch.isfinite(logits).all()
    assert logits[0, 0] == pytest.approx(1000.0 + math.log(2.0))


def test_tied_scores_by_hand():
    layer = TiedAnswer(input_dim=2, embedding_dim=2)
    with torch.no_grad():
        layer.proj.weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 2.0]]))
        layer.proj.bias.copy_(torch.tensor([0.5, 0.0]))
    g = torch.tensor([[1.0, 1.0]])  # W g + c = (1.5, 2); scores are divided by sqrt(d = 2)
    entities = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    root = math.sqrt(2.0)
    assert torch.allclose(layer(g, entities), torch.tensor([[1.5, 2.0, 3.5]]) / root)
    read = torch.tensor([[2.0, 0.0]])  # (W g + c + read) = (3.5, 2)
    assert torch.allclose(layer(g, entities, read), torch.tensor([[3.5, 2.0, 5.5]]) / root)


# --- every reader x every layer -----------------------------------------------------------


@pytest.mark.parametrize(("name", "layer", "match"), CASES)
def test_training_step_and_candidate_masking(name, layer, match):
    reader = build(name, layer, match).train()
    batch = random_batch(num_examples=6, vocab_size=VOCAB, num_entities=ENTITIES, seed=1)
    loss = reader.training_step(batch, 0) if name == "hard" else _loss(reader, batch)
    assert torch.isfinite(loss)
    loss.backward()
    used = [p for p in reader.parameters() if p.grad is not None]
    assert used and all(torch.isfinite(p.grad).all() for p in used)
    reader.eval()
    with torch.no_grad():
        logits = reader(batch).logits
    probs = torch.softmax(logits.float(), -1)
    assert torch.equal(probs[~batch.candidates], torch.zeros(int((~batch.candidates).sum())))
    assert torch.allclose(probs.sum(-1), torch.ones(len(batch)))


def _loss(reader, batch: ClozeBatch) -> torch.Tensor:
    return F.cross_entropy(reader(batch).logits.float(), batch.answer)


@pytest.mark.parametrize(
    ("name", "layer", "match"),
    [case for case in CASES if case.values[1] in ("tied", "pointer")],
)
def test_relabelling_entities_permutes_the_answer(name, layer, match):
    """Relabel the entity ids of a batch by a permutation and move the entity embeddings with
    them: every vector the reader computes is unchanged, so the tied and pointer layers give
    the same logits, permuted."""
    reader = build(name, layer, match).eval()
    batch = random_batch(num_examples=6, vocab_size=VOCAB, num_entities=ENTITIES, seed=2)
    permutation = torch.randperm(ENTITIES, generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        before = reader(batch).logits
        rows = reader.embedding.weight[ENTITY_OFFSET : ENTITY_OFFSET + ENTITIES].clone()
        reader.embedding.weight[ENTITY_OFFSET + permutation] = rows
        after = reader(_relabel(batch, permutation)).logits
    assert torch.allclose(after[:, permutation], before, atol=1e-5)


def test_the_output_layer_is_not_equivariant():
    reader = build("attentive", "output").eval()
    batch = random_batch(num_examples=6, vocab_size=VOCAB, num_entities=ENTITIES, seed=2)
    permutation = torch.roll(torch.arange(ENTITIES), 1)
    with torch.no_grad():
        before = reader(batch).logits
        rows = reader.embedding.weight[ENTITY_OFFSET : ENTITY_OFFSET + ENTITIES].clone()
        reader.embedding.weight[ENTITY_OFFSET + permutation] = rows
        after = reader(_relabel(batch, permutation)).logits
    assert not torch.allclose(after[:, permutation], before, atol=1e-3)


def _relabel(batch: ClozeBatch, permutation: torch.Tensor) -> ClozeBatch:
    def ids(tokens: torch.Tensor) -> torch.Tensor:
        k = tokens - ENTITY_OFFSET
        entity = (k >= 0) & (k < ENTITIES)
        return torch.where(entity, ENTITY_OFFSET + permutation[k.clamp(0, ENTITIES - 1)], tokens)

    candidates = torch.zeros_like(batch.candidates)
    candidates[:, permutation] = batch.candidates
    return ClozeBatch(
        context=ids(batch.context),
        context_mask=batch.context_mask,
        query=ids(batch.query),
        query_mask=batch.query_mask,
        candidates=candidates,
        answer=permutation[batch.answer],
        ids=batch.ids,
        truncated=batch.truncated,
    )


@pytest.mark.parametrize("name", ["attentive", "impatient", "gated"])
def test_pointer_probabilities_are_the_attention_over_candidate_positions(name):
    # Context: @entity0 w @entity1 @entity0; query: @placeholder w.
    batch = make_batch([[3, 20, 4, 3]], [[2, 20]], answers=[0], num_entities=ENTITIES)
    reader = build(name, "pointer").eval()
    with torch.no_grad():
        output = reader(batch)
    s = output.attention[0] if name != "impatient" else output.attention[0, -1]  # (n,)
    entity_mass = s[0] + s[2] + s[3]
    probs = torch.softmax(output.logits[0], -1)
    assert probs[0] == pytest.approx(float((s[0] + s[3]) / entity_mass), abs=1e-5)
    assert probs[1] == pytest.approx(float(s[2] / entity_mass), abs=1e-5)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("uniform", "UniformReader cannot use answer_layer='pointer'"),
        ("deep-lstm", "DeepLSTMReader cannot use answer_layer='pointer'"),
        ("hard", "HardAttentionReader cannot use answer_layer='pointer'"),
        ("gaussian-flatten", "glimpse_readout='flatten'"),
    ],
)
def test_readers_without_token_attention_refuse_the_pointer_layer(name, message):
    with pytest.raises(ValueError, match=message):
        build(name, "pointer")


def test_unknown_answer_layer():
    with pytest.raises(ValueError, match="answer_layer must be one of output, tied, pointer"):
        build("attentive", "softmax")


def test_query_match_bit_marks_shared_tokens():
    from attentive_reader.nn.features import query_match

    context = torch.tensor([[3, 20, 4, 0]])
    query = torch.tensor([[2, 4, 20, 0, 0]])
    in_query, in_context = query_match(context, context != 0, query, query != 0)
    assert in_query.tolist() == [[False, True, True, False]]
    assert in_context.tolist() == [[False, True, True, False, False]]
