"""The reader contract, over every reader of the toolkit (``TOOLKIT``) with
every answer layer it accepts: output shapes and masking, padding invariance, permutation
equivariance of the tied and pointer layers, a training step with finite gradients, zero
probability off the candidates, hyperparameters and a checkpoint round trip.

A new reader class of ``attentive_reader`` is registered when ``attentive_reader.models``
imports it; this suite then fails until ``VARIANTS`` below says how to build it small. Reader-specific behaviour is tested
in the reader's own file (``test_readers.py``, ``test_glimpse_readers.py``, ``test_hard.py``,
``test_gated.py``).
"""

from __future__ import annotations

import inspect
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F

from attentive_reader.data.batching import ClozeBatch
from attentive_reader.models import ClozeReader, ReaderOutput
from attentive_reader.models.loading import load_reader

from .batches import ENTITY_OFFSET, random_batch, relabel, select

pytestmark = pytest.mark.usefixtures("one_thread")
# The registry also lists readers defined elsewhere (tests/models/test_user_reader.py).
TOOLKIT = {
    name: cls
    for name, cls in ClozeReader.list_available().items()
    if cls.__module__.startswith("attentive_reader.")
}
VOCAB, ENTITIES = 40, 8
TINY = {"vocab_size": VOCAB, "num_entities": ENTITIES, "embedding_dim": 8, "dropout": 0.0}
# How to build each registered reader small, and the variants whose contract differs (a
# glimpse read-out without token weights, a gate that doubles the state size, ...).
VARIANTS: dict[str, list[dict[str, Any]]] = {
    "AttentiveReader": [{"hidden_dim": 6, "scorer": "additive", "readout": "paper"}],
    "DeepLSTMReader": [
        {"hidden_dim": 6},
        {"hidden_dim": 6, "order": "query_first", "forget_bias": 1.0},
    ],
    "GatedAttentionReader": [{"hidden_dim": 6, "num_hops": 2, "gate": "concat"}],
    "GaussianGlimpseReader": [
        {"hidden_dim": 6, "num_filters": 3, "num_glimpses": 2},
        {"hidden_dim": 6, "num_filters": 3, "glimpse_readout": "flatten", "intensity": True},
    ],
    "HardAttentionReader": [{"hidden_dim": 6, "num_samples": 2, "policy_supervision": 1.0}],
    "ImpatientReader": [{"hidden_dim": 6}],
    "TransformerGlimpseReader": [
        {"hidden_dim": 6, "num_filters": 3, "scorer": "dot"},
        {
            "hidden_dim": 6,
            "num_filters": 3,
            "num_glimpses": 2,
            "coarse_chunk": 2,
            "retina_widths": [3, 5],
            "locator_supervision": 1.0,
        },
    ],
    "UniformReader": [{"hidden_dim": 6}],
}


@dataclass(frozen=True)
class Case:
    """One reader class, one variant of its options, one answer layer."""

    name: str
    options: dict[str, Any]
    layer: str

    @property
    def cls(self) -> type[ClozeReader]:
        return TOOLKIT[self.name]

    def build(self) -> ClozeReader:
        torch.manual_seed(0)
        # query_match on in every other case: both embedding paths are covered.
        query_match = (len(self.name) + len(self.layer)) % 2 == 0
        return self.cls(
            **TINY, **self.options, answer_layer=self.layer, query_match=query_match
        ).eval()


def _cases() -> list[Any]:
    cases = []
    for name, cls in TOOLKIT.items():
        for index, options in enumerate(VARIANTS.get(name, [])):
            layers = cls.answer_layers
            if options.get("glimpse_readout") == "flatten":  # no weights over tokens
                layers = tuple(layer for layer in layers if layer != "pointer")
            for layer in layers:
                case = Case(name, options, layer)
                cases.append(pytest.param(case, id=f"{name}-{index}-{layer}"))
    return cases


CASES = _cases()
EQUIVARIANT = [case for case in CASES if case.values[0].layer in ("tied", "pointer")]


def test_every_registered_reader_is_covered():
    available = TOOLKIT
    assert set(VARIANTS) == set(available)
    assert len(available) == 8  # every reader class of attentive_reader.models
    for cls in available.values():
        assert set(cls.answer_layers) <= {"output", "tied", "pointer"}


def _batch(seed: int, num_examples: int = 5) -> ClozeBatch:
    return random_batch(
        num_examples=num_examples, vocab_size=VOCAB, num_entities=ENTITIES, seed=seed
    )


def _pad(batch: ClozeBatch, context: int, query: int) -> ClozeBatch:
    """The same batch with ``context`` / ``query`` more padding positions."""
    return replace(
        batch,
        context=F.pad(batch.context, (0, context)),
        context_mask=F.pad(batch.context_mask, (0, context)),
        query=F.pad(batch.query, (0, query)),
        query_mask=F.pad(batch.query_mask, (0, query)),
    )


@pytest.mark.parametrize("case", CASES)
def test_output_shapes_masking_and_candidates(case: Case):
    reader = case.build()
    batch = _batch(seed=1)
    b, n = batch.context.shape
    with torch.no_grad():
        if case.layer == "output":  # push every entity that is not a candidate somewhere up
            reader.answer.bias.copy_(torch.where(batch.candidates.all(0), 0.0, 1e4))
        output = reader(batch)
    assert isinstance(output, ReaderOutput)
    assert output.logits.shape == (b, ENTITIES)
    assert torch.isfinite(output.logits).all()
    # Probabilities: exactly 0 off the candidates, summing to 1 over them.
    probs = torch.softmax(output.logits.float(), -1)
    assert torch.equal(probs[~batch.candidates], torch.zeros(int((~batch.candidates).sum())))
    assert torch.allclose(probs.sum(-1), torch.ones(b))
    assert batch.candidates.gather(1, output.logits.argmax(-1, keepdim=True)).all()
    if output.attention is None:
        assert case.layer != "pointer"  # the pointer layer answers with the attention
        return
    attention = output.attention  # (b, n) or (b, m, n): one row per query step
    assert attention.shape[0] == b and attention.shape[-1] == n
    assert attention.dim() in (2, 3)
    padding = ~batch.context_mask.view(b, *([1] * (attention.dim() - 2)), n).expand_as(attention)
    assert torch.equal(attention[padding], torch.zeros(int(padding.sum())))  # padding: 0
    sums = attention.sum(-1)  # (b,) or (b, m)
    if attention.dim() == 2:
        assert torch.allclose(sums, torch.ones(b), atol=1e-5)
    else:  # a row per query token: 1 on real tokens, all 0 on padding
        real = batch.query_mask
        assert torch.allclose(sums[real], torch.ones(int(real.sum())), atol=1e-5)
        assert torch.equal(sums[~real], torch.zeros(int((~real).sum())))


@pytest.mark.parametrize("case", CASES)
def test_padding_changes_nothing(case: Case):
    """An example scored alone, in a batch, or with extra padding gets the same logits."""
    reader = case.build()
    batch = _batch(seed=2)
    shortest = int(batch.context_mask.sum(1).argmin())
    with torch.no_grad():
        together = reader(batch).logits
        alone = reader(select(batch, [shortest])).logits
        padded = reader(_pad(batch, context=3, query=2)).logits
    assert torch.allclose(together[shortest], alone[0], atol=1e-5)
    assert torch.allclose(padded, together, atol=1e-5)


@pytest.mark.parametrize("case", EQUIVARIANT)
def test_relabelling_entities_permutes_the_answer(case: Case):
    """Relabel the entity ids by a permutation and move the entity embeddings with them:
    every vector the reader computes is unchanged, so the tied and pointer layers give the
    same logits, permuted."""
    reader = case.build()
    batch = _batch(seed=3)
    permutation = torch.randperm(ENTITIES, generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        before = reader(batch).logits
        rows = reader.embedding.weight[ENTITY_OFFSET : ENTITY_OFFSET + ENTITIES].clone()
        reader.embedding.weight[ENTITY_OFFSET + permutation] = rows
        after = reader(relabel(batch, permutation)).logits
    assert torch.allclose(after[:, permutation], before, atol=1e-5)


class _Log:
    """Stands in for ``LightningModule.log`` outside a Trainer."""

    def __call__(self, name: str, value: Any, **kwargs: Any) -> None:
        if isinstance(value, torch.Tensor):
            assert torch.isfinite(value).all(), name


@pytest.mark.parametrize("case", CASES)
def test_training_step_gives_finite_gradients(case: Case):
    reader = case.build().train()
    reader.log = _Log()  # type: ignore[method-assign]
    batch = _batch(seed=5)
    loss = reader.training_step(batch, 0)
    assert loss.dim() == 0 and torch.isfinite(loss)
    loss.backward()
    grads = {name: p.grad for name, p in reader.named_parameters() if p.grad is not None}
    assert all(torch.isfinite(grad).all() for grad in grads.values())
    assert grads["embedding.weight"].abs().sum() > 0  # the loss reaches the embeddings


@pytest.mark.parametrize("case", CASES)
def test_hyperparameters_and_checkpoint_round_trip(case: Case, tmp_path: Path):
    """The saved hyperparameters are the init arguments of the class chain (defaults
    included), plain JSON; ``load_reader`` rebuilds the same reader from them."""
    reader = case.build()
    arguments: set[str] = set()
    for cls in type(reader).__mro__:
        if issubclass(cls, ClozeReader) and "__init__" in vars(cls):
            arguments |= set(inspect.signature(cls.__init__).parameters)
    arguments -= {"self", "options", *type(reader).derived_arguments}
    assert set(reader.hparams) == arguments
    json.dumps(dict(reader.hparams))
    path = tmp_path / "reader.ckpt"
    checkpoint = {"state_dict": reader.state_dict(), "hyper_parameters": dict(reader.hparams)}
    reader.on_save_checkpoint(checkpoint)
    torch.save(checkpoint, path)
    restored = load_reader(path)
    batch = _batch(seed=6)
    with torch.no_grad():
        assert torch.equal(restored(batch).logits, reader(batch).logits)


ONE_PER_READER = [
    next(case for case in CASES if case.values[0].name == name)
    for name in TOOLKIT
    if name != "HardAttentionReader"  # a sampling reader: tests/models/test_hard.py trains it
]


@pytest.mark.parametrize("case", ONE_PER_READER)
def test_overfits_a_tiny_batch(case: Case):
    """Every reader can memorise 8 examples whose answers have nothing to do with the text."""
    reader = case.build().train()
    batch = _batch(seed=7, num_examples=8)
    optimizer = torch.optim.Adam(reader.parameters(), lr=0.05)
    for _ in range(200):
        logits = reader(batch).logits
        if (logits.argmax(-1) == batch.answer).all():  # dropout is 0: as in eval mode
            break
        optimizer.zero_grad()
        F.cross_entropy(logits.float(), batch.answer).backward()
        optimizer.step()
    reader.eval()
    with torch.no_grad():
        assert torch.equal(reader(batch).logits.argmax(-1), batch.answer)


ONE_EACH = [next(case for case in CASES if case.values[0].name == name) for name in TOOLKIT]


@pytest.mark.filterwarnings(r"ignore:Detected call of `lr_scheduler.step\(\)` before")
@pytest.mark.parametrize("case", ONE_EACH)
def test_every_reader_takes_each_learning_rate_schedule(case: Case):
    """``constant`` is the bare optimiser; ``plateau`` halves after an epoch whose val_acc
    did not improve (patience 0); ``decay`` halves after every epoch from lr_decay_start."""
    from attentive_reader.models.schedules import step_schedule

    base = {**TINY, **case.options, "answer_layer": case.layer}
    reader = case.cls(**base, optimizer="sgd", lr=0.1)
    assert isinstance(reader.configure_optimizers(), torch.optim.SGD)
    expected = {"plateau": [0.1, 0.05, 0.025], "decay": [0.05, 0.025, 0.0125]}
    for schedule, rates in expected.items():
        reader = case.cls(**base, optimizer="sgd", lr=0.1, lr_schedule=schedule, lr_decay_start=1)
        configured = reader.configure_optimizers()
        optimizer, scheduler = configured["optimizer"], configured["lr_scheduler"]["scheduler"]
        seen = []
        for _ in rates:  # three epochs, each validated at the same accuracy
            step_schedule(scheduler, validated=True, metrics={"val_acc": torch.tensor(0.5)})
            seen.append(optimizer.param_groups[0]["lr"])
        assert seen == pytest.approx(rates), schedule
        assert reader.hparams["lr_schedule"] == schedule


def test_schedule_options_out_of_range_say_what_to_use():
    cls = TOOLKIT["DeepLSTMReader"]
    for options, message in (
        ({"lr_schedule": "cosine"}, "lr_schedule must be one of constant, plateau, decay"),
        ({"lr_factor": 1.0}, r"lr_factor must be in \(0, 1\)"),
        ({"lr_patience": -1}, "lr_patience must be an integer >= 0"),
        ({"min_lr": -1.0}, "min_lr must be >= 0"),
    ):
        with pytest.raises(ValueError, match=message):
            cls(**TINY, hidden_dim=6, **options)
