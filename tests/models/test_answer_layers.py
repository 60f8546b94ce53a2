"""The answer layers (``nn/answer.py``): hand-computed values, what the output layer does not
promise, and the pointer layer's probabilities. Every reader with every layer it accepts (a
training step, candidate masking, the tied and pointer layers' permutation equivariance):
tests/models/test_contract.py."""

import math

import pytest
import torch

from attentive_reader.models import (
    AttentiveReader,
    ClozeReader,
    DeepLSTMReader,
    GatedAttentionReader,
    GaussianGlimpseReader,
    HardAttentionReader,
    ImpatientReader,
    UniformReader,
)
from attentive_reader.nn.answer import (
    ANSWER_LAYERS,
    AnswerContext,
    AnswerHead,
    AnswerInput,
    TiedAnswer,
    build_answer_head,
    pointer_scores,
    token_entities,
)

from .batches import ENTITY_OFFSET, make_batch, random_batch, relabel

VOCAB, ENTITIES = 60, 10
TINY = {"embedding_dim": 12, "hidden_dim": 12, "dropout": 0.0}
READERS = {
    "attentive": (AttentiveReader, {}),
    "impatient": (ImpatientReader, {}),
    "uniform": (UniformReader, {}),
    "deep-lstm": (DeepLSTMReader, {}),
    "hard": (HardAttentionReader, {"num_samples": 2}),
    "gaussian-flatten": (GaussianGlimpseReader, {"glimpse_readout": "flatten"}),
    "gated": (GatedAttentionReader, {}),
}


def build(name: str, layer: str, query_match: bool = False):
    cls, options = READERS[name]
    torch.manual_seed(0)
    return cls(
        vocab_size=VOCAB,
        num_entities=ENTITIES,
        answer_layer=layer,
        query_match=query_match,
        **TINY,
        **options,
    )


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


def test_the_tied_head_reads_the_marker_embeddings_under_the_weights():
    embedding = torch.nn.Embedding(6, 2)
    with torch.no_grad():
        embedding.weight.copy_(torch.arange(12.0).view(6, 2))
    # Tokens 3, 4, 5 are @entity0..2 (offset 3); token 1 is a word, 0 padding.
    context = AnswerContext(
        torch.tensor([[3, 1, 5, 0]]),
        torch.tensor([[1, 1, 1, 0]]).bool(),
        embedding,
        entity_offset=3,
        num_entities=3,
    )
    head = build_answer_head("tied", input_dim=2, num_entities=3, embedding_dim=2)
    weights = torch.tensor([[0.25, 0.5, 0.25, 0.0]])  # the word's 0.5 reads nothing
    expected = 0.25 * embedding.weight[3] + 0.25 * embedding.weight[5]
    assert torch.allclose(head.attended_markers(context, weights), expected.unsqueeze(0))
    two = weights.unsqueeze(1).expand(1, 2, 4)  # two readings of one example
    assert head.attended_markers(context, two).shape == (1, 2, 2)
    # score: W g + c + x against each marker, for one reading and for each of two.
    g = torch.ones(1, 2)
    one = head.score(context, AnswerInput(vector=g, weights=weights))
    assert torch.allclose(one, head(g, embedding.weight[3:6], expected.unsqueeze(0)))
    both = head.score(context, AnswerInput(vector=g.expand(2, 2), weights=two))
    assert torch.allclose(both, one.expand(2, 3))
    assert torch.equal(context.entity_embeddings(), embedding.weight[3:6])


@pytest.mark.parametrize("name", ANSWER_LAYERS)
def test_every_head_names_itself_and_asks_for_what_it_reads(name):
    head = build_answer_head(name, input_dim=4, num_entities=3, embedding_dim=2)
    assert isinstance(head, AnswerHead) and head.name == name
    assert head.reads_tokens == (name == "pointer")
    assert (sum(p.numel() for p in head.parameters()) == 0) == (name == "pointer")
    embedding = torch.nn.Embedding(6, 2)
    context = AnswerContext(
        torch.tensor([[3, 4, 1]]),
        torch.ones(1, 3, dtype=torch.bool),
        embedding,
        entity_offset=3,
        num_entities=3,
    )
    needed = "token_scores" if head.reads_tokens else "vector"
    with pytest.raises(ValueError, match=f"the {name} answer layer needs {needed}"):
        head.score(context, AnswerInput())
    given = {needed: torch.zeros(1, 3) if head.reads_tokens else torch.ones(1, 4)}
    assert head.score(context, AnswerInput(**given)).shape == (1, 3)


# --- every reader x every layer -----------------------------------------------------------


def test_the_output_layer_is_not_equivariant():
    reader = build("attentive", "output").eval()
    batch = random_batch(num_examples=6, vocab_size=VOCAB, num_entities=ENTITIES, seed=2)
    permutation = torch.roll(torch.arange(ENTITIES), 1)
    with torch.no_grad():
        before = reader(batch).logits
        rows = reader.embedding.weight[ENTITY_OFFSET : ENTITY_OFFSET + ENTITIES].clone()
        reader.embedding.weight[ENTITY_OFFSET + permutation] = rows
        after = reader(relabel(batch, permutation)).logits
    assert not torch.allclose(after[:, permutation], before, atol=1e-3)


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


@pytest.mark.parametrize("cls", list(ClozeReader.list_available().values()))
def test_every_reader_refuses_the_layers_it_does_not_list(cls):
    """``answer_layers`` is what the contract suite runs: the constructor agrees with it."""
    for layer in {"output", "tied", "pointer"} - set(cls.answer_layers):
        with pytest.raises(ValueError, match=f"cannot use answer_layer='{layer}'"):
            cls(vocab_size=VOCAB, num_entities=ENTITIES, answer_layer=layer, **TINY)


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
