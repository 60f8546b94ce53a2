import pytest
import pytorch_lightning as pl
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader

from attentive_reader.data.batching import ClozeBatch
from attentive_reader.data.entity_block import UNANSWERABLE
from attentive_reader.models import (
    AttentiveReader,
    ClozeReader,
    DeepLSTMReader,
    ImpatientReader,
    UniformReader,
)
from attentive_reader.models.base import answer_loss
from tests.trainers import quiet_trainer

from .batches import make_batch, random_batch

VOCAB, ENTITIES = 60, 10
# The contract every reader keeps is tested in tests/models/test_contract.py; here what is
# particular to these readers.
TINY = {"embedding_dim": 12, "hidden_dim": 12, "dropout": 0.0, "answer_layer": "output"}

SIZES = {"vocab_size": VOCAB, "num_entities": ENTITIES}
READERS = {
    "impatient-additive": lambda: ImpatientReader(**SIZES, **TINY),
    "deep-lstm": lambda: DeepLSTMReader(**SIZES, **TINY),
    "uniform": lambda: UniformReader(**SIZES, **TINY),
}


def build(name: str) -> ClozeReader:
    torch.manual_seed(0)
    return READERS[name]()


def test_impatient_padded_query_steps_keep_r():
    """Extra query padding gives all-zero attention rows and changes nothing else."""
    reader = build("impatient-additive").eval()
    batch = random_batch(num_examples=2, vocab_size=VOCAB, num_entities=ENTITIES, seed=2)
    longer = ClozeBatch(
        context=batch.context,
        context_mask=batch.context_mask,
        query=F.pad(batch.query, (0, 4)),
        query_mask=F.pad(batch.query_mask, (0, 4)),
        candidates=batch.candidates,
        answer=batch.answer,
        ids=batch.ids,
        truncated=batch.truncated,
    )
    with torch.no_grad():
        short_output, long_output = reader(batch), reader(longer)
    m = batch.query.shape[1]
    assert torch.allclose(short_output.logits, long_output.logits, atol=1e-6)
    assert torch.allclose(short_output.attention, long_output.attention[:, :m], atol=1e-6)
    assert torch.equal(long_output.attention[:, m:], torch.zeros(2, 4, batch.context.shape[1]))


def test_deep_lstm_joins_document_delimiter_and_query():
    reader = build("deep-lstm")
    batch = make_batch([[20, 3, 21], [22, 4]], [[30, 2], [31, 32, 2]], [0, 1], ENTITIES)
    document = reader.embedding(batch.context)
    query = reader.embedding(batch.query)
    joined, mask = reader.join(document, batch.context_mask, query, batch.query_mask)
    assert joined.shape == (2, 3 + 1 + 3, TINY["embedding_dim"])
    assert mask.tolist() == [[True] * 6 + [False], [True] * 6 + [False]]
    embed, delimiter = reader.embedding.weight, reader.delimiter
    for row, expected in enumerate(
        [
            [embed[20], embed[3], embed[21], delimiter, embed[30], embed[2]],
            [embed[22], embed[4], delimiter, embed[31], embed[32], embed[2]],
        ]
    ):
        assert torch.equal(joined[row, :6], torch.stack(expected))
        assert torch.equal(joined[row, 6], torch.zeros(TINY["embedding_dim"]))


def test_uniform_attention_is_uniform_and_has_no_scorer():
    reader = build("uniform").eval()
    batch = random_batch(num_examples=6, vocab_size=VOCAB, num_entities=ENTITIES)
    with torch.no_grad():
        attention = reader(batch).attention  # (b, n)
    expected = batch.context_mask / batch.context_mask.sum(1, keepdim=True)
    assert torch.allclose(attention, expected)
    assert not hasattr(reader, "scorer") and "scorer" not in reader.hparams


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"scorer": "mlp"}, "unknown scorer 'mlp'"),
        ({"readout": "gated"}, "readout must be"),
        ({"dropout": 1.0}, "dropout"),
        ({"optimizer": "lbfgs"}, "optimizer must be one of"),
        ({"lr": 0.0}, "lr must be positive"),
        ({"hidden_dim": 0}, "hidden_dim"),
    ],
)
def test_constructor_validates(arguments, message):
    with pytest.raises(ValueError, match=message):
        AttentiveReader(**SIZES, **arguments)


def test_the_optimizer_comes_from_the_reader_arguments():
    adam = AttentiveReader(**SIZES).configure_optimizers()
    assert isinstance(adam, torch.optim.Adam) and adam.defaults["lr"] == 1e-3
    sgd = AttentiveReader(
        vocab_size=VOCAB, num_entities=ENTITIES, optimizer="sgd"
    ).configure_optimizers()
    assert isinstance(sgd, torch.optim.SGD) and sgd.defaults["lr"] == 0.1
    rmsprop = AttentiveReader(
        **SIZES,
        optimizer="rmsprop",
        lr=5e-5,
        weight_decay=0.01,
        optimizer_options={"alpha": 0.95, "momentum": 0.9},
    ).configure_optimizers()
    assert isinstance(rmsprop, torch.optim.RMSprop)
    assert {k: rmsprop.defaults[k] for k in ("lr", "alpha", "momentum", "weight_decay")} == {
        "lr": 5e-5,
        "alpha": 0.95,
        "momentum": 0.9,
        "weight_decay": 0.01,
    }


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"lr": 0.1}, "may not set lr"),
        ({"betas": [0.9, 0.99]}, "do not fit rmsprop"),
        ({"alpha": -1.0}, "do not fit rmsprop"),
    ],
)
def test_bad_optimizer_options_fail_at_construction(options, message):
    with pytest.raises(ValueError, match=message):
        AttentiveReader(
            vocab_size=VOCAB, num_entities=ENTITIES, optimizer="rmsprop", optimizer_options=options
        )


def test_word_vectors_through_the_method(tmp_path):
    path = tmp_path / "glove.txt"
    path.write_text("the 1 2 3\nobama 4 5 6\n", encoding="utf-8")
    reader = AttentiveReader(
        vocab_size=5, num_entities=2, embedding_dim=3, hidden_dim=4, word_vectors=str(path)
    )
    assert reader.load_word_vectors(["<pad>", "<unk>", "@placeholder", "the", "Obama"]) == 2
    assert torch.equal(reader.embedding.weight[4].detach(), torch.tensor([4.0, 5.0, 6.0]))


@pytest.mark.slow
def test_lightning_loop_metrics_predict_and_checkpoint(tmp_path):
    """fit/validate/test/predict through a Trainer; the checkpoint loads with weights_only."""
    train = [random_batch(16, VOCAB, ENTITIES, seed=s) for s in range(2)]
    val = [random_batch(8, VOCAB, ENTITIES, seed=10)]
    reader = AttentiveReader(
        vocab_size=VOCAB, num_entities=ENTITIES, optimizer="adam", lr=0.01, **TINY
    )
    trainer = quiet_trainer(
        max_epochs=2,
        default_root_dir=tmp_path,
    )
    loader = lambda batches: DataLoader(batches, batch_size=None)  # noqa: E731
    trainer.fit(reader, loader(train), loader(val))
    for key in ("train_loss_epoch", "train_acc", "val_loss", "val_acc"):
        assert key in trainer.callback_metrics, key
    (result,) = trainer.test(reader, loader(val), verbose=False)
    with torch.no_grad():
        expected = (reader(val[0]).logits.argmax(-1) == val[0].answer).float().mean().item()
    assert result["test_acc"] == pytest.approx(expected)

    (prediction,) = trainer.predict(reader, loader(val))
    from attentive_reader.models.predictions import BatchPrediction

    assert isinstance(prediction, BatchPrediction)
    assert prediction.ids == val[0].ids and prediction.selected is None
    assert torch.equal(prediction.context_lengths, val[0].context_mask.sum(-1))
    assert torch.allclose(prediction.probs.sum(-1), torch.ones(8))
    assert (prediction.probs[~val[0].candidates] == 0).all()
    assert torch.equal(prediction.prediction, prediction.logits.argmax(-1))

    path = tmp_path / "reader.ckpt"
    trainer.save_checkpoint(path)
    checkpoint = torch.load(path, weights_only=True)
    assert checkpoint["reader_class"] == "attentive_reader.models.attentive.AttentiveReader"
    restored = AttentiveReader.load_from_checkpoint(path).eval()
    with torch.no_grad():
        assert torch.equal(restored(val[0]).logits, reader(val[0]).logits)


def test_answers_outside_the_block_add_no_loss_and_count_wrong():
    logits = torch.tensor([[2.0, 0.0], [0.0, 3.0], [1.0, 0.0]])
    answer = torch.tensor([0, UNANSWERABLE, 1])
    expected = F.cross_entropy(logits[[0, 2]], answer[[0, 2]])
    assert torch.equal(answer_loss(logits, answer), expected)
    assert answer_loss(logits[1:2], answer[1:2]).item() == 0.0
    # In a test loop: the reader predicts every answer, two of which it cannot give.
    reader = AttentiveReader(vocab_size=VOCAB, num_entities=ENTITIES, **TINY).eval()
    batch = random_batch(6, VOCAB, ENTITIES, seed=3)
    with torch.no_grad():
        batch.answer = reader(batch).logits.argmax(-1)
    batch.answer[:2] = UNANSWERABLE
    (result,) = quiet_trainer().test(reader, DataLoader([batch], batch_size=None), verbose=False)
    assert result["test_acc"] == pytest.approx(4 / 6)


def test_word_vectors_need_a_vocabulary(tmp_path):
    path = tmp_path / "glove.txt"
    path.write_text("the 1 2 3\n", encoding="utf-8")
    reader = AttentiveReader(
        vocab_size=5, num_entities=2, embedding_dim=3, hidden_dim=4, word_vectors=str(path)
    )
    batch = make_batch([[3, 4]], [[4, 2]], [0], num_entities=2)
    trainer = quiet_trainer(fast_dev_run=1, default_root_dir=tmp_path)
    with pytest.raises(ValueError, match="word_vectors needs the vocabulary"):
        trainer.fit(reader, DataLoader([batch], batch_size=None))


def test_bf16_autocast_forward_and_backward():
    reader = build("impatient-additive")
    batch = random_batch(num_examples=4, vocab_size=VOCAB, num_entities=ENTITIES)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        output = reader(batch)
        loss = F.cross_entropy(output.logits.float(), batch.answer)
    loss.backward()
    assert torch.isfinite(loss)
    assert all(torch.isfinite(p.grad).all() for p in reader.parameters() if p.grad is not None)
    assert batch.candidates.gather(1, output.logits.argmax(-1, keepdim=True)).all()


class _StubVocab:
    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens

    def __len__(self) -> int:
        return len(self.tokens)

    def decode(self, ids) -> list[str]:
        return [self.tokens[int(i)] for i in ids]


class _StubDataModule(pl.LightningDataModule):
    def __init__(self, vocab: _StubVocab, batch: ClozeBatch) -> None:
        super().__init__()
        self.vocab, self.batch = vocab, batch

    def train_dataloader(self) -> DataLoader:
        return DataLoader([self.batch], batch_size=None)


def test_word_vectors_load_when_fit_starts(tmp_path):
    path = tmp_path / "glove.txt"
    path.write_text("the 1 2 3\nobama 4 5 6\n", encoding="utf-8")
    tokens = ["<pad>", "<unk>", "@placeholder", "@entity0", "@entity1", "the", "Obama"]
    reader = AttentiveReader(
        vocab_size=len(tokens),
        num_entities=2,
        embedding_dim=3,
        hidden_dim=4,
        word_vectors=str(path),
        lr=1e-12,
    )
    batch = make_batch([[3, 4, 5]], [[6, 2]], [0], num_entities=2)
    trainer = quiet_trainer(
        fast_dev_run=1,
        default_root_dir=tmp_path,
    )
    trainer.fit(reader, datamodule=_StubDataModule(_StubVocab(tokens), batch))
    weight = reader.embedding.weight.detach()
    assert torch.allclose(weight[5], torch.tensor([1.0, 2.0, 3.0]))
    assert torch.allclose(weight[6], torch.tensor([4.0, 5.0, 6.0]))


def test_deep_lstm_reads_the_query_first_when_asked():
    """order="query_first" joins query ||| document: the same tokens, the query's first."""
    torch.manual_seed(0)
    reader = DeepLSTMReader(
        vocab_size=VOCAB, num_entities=ENTITIES, order="query_first", **TINY
    ).eval()
    batch = random_batch(num_examples=3, vocab_size=VOCAB, num_entities=ENTITIES, seed=4)
    seen = []
    reader.layers[0].register_forward_hook(lambda module, args, out: seen.append(args[0]))
    with torch.no_grad():
        reader(batch)
    document = reader.embedding(batch.context)
    query = reader.embedding(batch.query)
    expected, _ = reader.join(query, batch.query_mask, document, batch.context_mask)
    torch.testing.assert_close(seen[0], expected)
    with pytest.raises(ValueError, match="order must be"):
        DeepLSTMReader(**SIZES, order="interleaved")


def test_deep_lstm_forget_bias_reaches_every_layer():
    """forget_bias=1.0 starts every layer's forget gates at 1; None keeps torch's draw."""
    torch.manual_seed(0)
    reader = DeepLSTMReader(**SIZES, forget_bias=1.0, **TINY)
    torch.manual_seed(0)
    plain = DeepLSTMReader(**SIZES, **TINY)
    assert len(reader.layers) == 2
    for layer, plain_layer in zip(reader.layers, plain.layers, strict=True):
        cell, plain_cell = layer.layers[0][0], plain_layer.layers[0][0]
        h = cell.hidden_size
        total = cell.bias_ih_l0[h : 2 * h] + cell.bias_hh_l0[h : 2 * h]
        assert torch.equal(total, torch.ones(h))
        assert not torch.equal(plain_cell.bias_ih_l0[h : 2 * h], torch.ones(h))
        torch.testing.assert_close(cell.weight_ih_l0, plain_cell.weight_ih_l0)
