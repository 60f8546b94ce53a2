"""HardAttentionReader: output contract, the training terms, options, CLI config, toy task."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import pytorch_lightning as pl
import torch

from attentive_reader.cli import main as cli_main
from attentive_reader.corpus.synthetic.toy import write_toy_dataset
from attentive_reader.data.batching import ClozeBatch
from attentive_reader.data.datamodule import ClozeDataModule
from attentive_reader.models import HardAttentionReader
from attentive_reader.models.loading import load_reader
from tests.models.batches import make_batch, random_batch
from tests.trainers import quiet_trainer

VOCAB, ENTITIES = 60, 10
SMALL = {"embedding_dim": 12, "hidden_dim": 8, "dropout": 0.0, "answer_layer": "output"}
ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "configs" / "hard_attention_reader.yaml"


pytestmark = pytest.mark.usefixtures("one_thread")


def _reader(**overrides) -> HardAttentionReader:
    torch.manual_seed(0)
    return HardAttentionReader(vocab_size=VOCAB, num_entities=ENTITIES, **{**SMALL, **overrides})


class _Recorder:
    """Stands in for ``LightningModule.log`` outside a Trainer: keeps the last value per name
    (and whether it was synced across processes)."""

    def __init__(self) -> None:
        self.values: dict[str, float] = {}
        self.synced: dict[str, bool] = {}

    def __call__(self, name: str, value, **kwargs) -> None:
        self.synced[name] = bool(kwargs.get("sync_dist", False))
        if isinstance(value, torch.Tensor):
            self.values[name] = float(value.detach())
        elif isinstance(value, (int, float)):
            self.values[name] = float(value)


def _train_step(model: HardAttentionReader, batch: ClozeBatch) -> tuple[torch.Tensor, _Recorder]:
    recorder = _Recorder()
    model.log = recorder  # type: ignore[method-assign]
    model.train()
    return model.training_step(batch, 0), recorder


def test_every_training_figure_is_synced_across_processes() -> None:
    model = _reader(baseline="learned", policy_supervision=0.5)
    batch = random_batch(num_examples=4, vocab_size=VOCAB, num_entities=ENTITIES)
    _, logged = _train_step(model, batch)
    assert {"train_loss", "train_acc", "train_ce", "train_value_loss"} <= set(logged.synced)
    assert {"train_policy_supervision_loss", "train_entropy"} <= set(logged.synced)
    assert all(logged.synced.values()), logged.synced


def test_the_step_loss_is_trained_and_logged_once() -> None:
    """The hard reader's loss replaces the cross-entropy (``step_loss``): ``train_loss`` is
    the loss returned, and no figure is logged twice."""
    model = _reader(baseline="learned", policy_supervision=0.5)
    batch = random_batch(num_examples=4, vocab_size=VOCAB, num_entities=ENTITIES)
    calls: list[str] = []
    recorder = _Recorder()

    def log(name: str, value, **kwargs) -> None:
        calls.append(name)
        recorder(name, value, **kwargs)

    model.log = log  # type: ignore[method-assign]
    loss = model.train().training_step(batch, 0)
    assert len(calls) == len(set(calls)), calls
    assert recorder.values["train_loss"] == float(loss.detach())
    assert recorder.values["train_ce"] != float(loss.detach())  # REINFORCE and the rest added


@pytest.mark.parametrize("k", [1, 3])
def test_forward_contract(k: int) -> None:
    batch = random_batch(num_examples=6, vocab_size=VOCAB, num_entities=ENTITIES)
    model = _reader(k=k).eval()
    with torch.no_grad():
        output = model(batch)
    b, n = batch.context.shape
    assert output.logits.shape == (b, ENTITIES)
    # Non-candidates can never be predicted.
    assert (output.logits[~batch.candidates] == torch.finfo(output.logits.dtype).min).all()
    assert batch.candidates.gather(1, output.logits.argmax(-1, keepdim=True)).all()
    # attention = the policy: sums to 1, exactly 0 on padding.
    assert output.attention.shape == (b, n)
    torch.testing.assert_close(output.attention.sum(1), torch.ones(b))
    assert (output.attention[~batch.context_mask] == 0).all()
    # selected = the k greedy positions: the policy's top k.
    assert output.selected.shape == (b, k) and output.selected.dtype == torch.long
    top = output.attention.topk(k, dim=1).indices
    assert torch.equal(output.selected.sort(1).values, top.sort(1).values)
    # Greedy evaluation is deterministic.
    with torch.no_grad():
        assert torch.equal(model(batch).logits, output.logits)


def test_short_contexts_leave_empty_slots() -> None:
    batch = random_batch(
        num_examples=4, vocab_size=VOCAB, num_entities=ENTITIES, context_lengths=(3, 5)
    )
    model = _reader(k=6, num_samples=2).train()
    output = model(batch)
    lengths = batch.context_mask.sum(1)
    # Without replacement a context of length L < k fills L slots; the rest hold -1.
    assert torch.equal((output.selected >= 0).sum(1), lengths.clamp(max=6))
    real = output.selected.clamp(min=0)
    assert batch.context_mask.gather(1, real)[output.selected >= 0].all()
    assert output.extras.samples_selected.shape == (4, 2, 6)


def test_the_reading_mask_is_the_positions_read() -> None:
    """Greedy reads its k positions (a shorter context: all of its tokens); sample the union
    of its selections; expected every token."""
    contexts = [[3, 20], [4, 21, 3, 22, 23], [5, 24, 25, 3, 26, 27, 28]]  # 2, 5 and 7 tokens
    batch = make_batch(contexts, [[2, 20], [2, 21], [2, 30]], [0, 1, 2], ENTITIES)
    lengths = batch.context_mask.sum(1)
    model = _reader(k=4).eval()
    with torch.no_grad():
        output = model(batch)
        read = model.reading_mask(batch, output)  # (b, n)
        assert torch.equal(read.sum(1), lengths.clamp(max=4))
        for row, selected in zip(read, output.selected):
            assert set(row.nonzero().flatten().tolist()) == set(selected[selected >= 0].tolist())
        model.eval_mode, model.eval_samples = "sample", 4
        output = model(batch)
        read = model.reading_mask(batch, output)
        for row, draws in zip(read, output.extras.samples_selected):  # (s, k) each
            assert set(row.nonzero().flatten().tolist()) == set(draws[draws >= 0].tolist())
        model.k = 1
        model.eval_mode = "expected"
        assert torch.equal(model.reading_mask(batch, model(batch)), batch.context_mask)
        # predict_step carries it to the records
        records = model.predict_step(batch, 0).records()
        assert [record.tokens_read for record in records] == lengths.tolist()


@pytest.mark.parametrize(
    "options",
    [
        {"baseline": "none", "num_samples": 1, "reward": "correct"},
        {"baseline": "ema", "num_samples": 1, "k": 2, "replacement": True},
        {"baseline": "learned", "num_samples": 2, "readout": "paper"},
        {"baseline": "leave_one_out", "num_samples": 3, "k": 2},
        {"selection": "gumbel", "baseline": "none", "num_samples": 1, "k": 2},
    ],
)
def test_every_option_trains(options: dict) -> None:
    batch = random_batch(num_examples=5, vocab_size=VOCAB, num_entities=ENTITIES)
    model = _reader(**options)
    loss, logged = _train_step(model, batch)
    assert torch.isfinite(loss)
    loss.backward()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    assert grads and all(torch.isfinite(g).all() for g in grads)
    # The logged per-step quantities of issue 4.
    expected = {"train_loss", "train_ce", "train_entropy", "train_entropy_weight"}
    if options.get("selection") != "gumbel":
        expected |= {"train_reward", "train_baseline", "train_advantage_var"}
    assert expected <= set(logged.values)
    if options["baseline"] == "learned":
        assert "train_value_loss" in logged.values


@pytest.mark.parametrize("scorer", ["additive", "dot", "cosine", "bilinear"])
def test_every_scorer_gives_a_masked_policy_and_trains(scorer: str) -> None:
    batch = random_batch(num_examples=5, vocab_size=VOCAB, num_entities=ENTITIES)
    model = _reader(scorer=scorer, num_samples=8)
    output = model.train()(batch)
    samples = output.extras.samples_selected  # (b, 8, 1)
    assert batch.context_mask.gather(1, samples.flatten(1)).all()
    assert (output.attention[~batch.context_mask] == 0).all()
    loss, _ = _train_step(model, batch)
    loss.backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


def test_policy_learns_only_from_reinforce_not_from_the_reading() -> None:
    """A sampled (hard) reading passes no gradient to the scorer; the REINFORCE term does."""
    batch = random_batch(num_examples=8, vocab_size=VOCAB, num_entities=ENTITIES)
    model = _reader(baseline="none", num_samples=2, entropy_bonus=0.0, scorer="bilinear")
    model.train()
    output = model(batch)
    reward, nll = model.rewards(output.extras.sample_logits, batch.answer)
    nll.mean().backward(retain_graph=True)
    assert model.scorer.weight.weight.grad is None or (model.scorer.weight.weight.grad == 0).all()
    # reward = log p(answer), detached; the policy loss moves the scorer.
    assert not reward.requires_grad
    torch.testing.assert_close(reward, -nll.detach())
    model.zero_grad()
    loss, _ = _train_step(model, batch)
    loss.backward()
    assert model.scorer.weight.weight.grad.abs().sum() > 0


def test_learned_baseline_is_fitted_by_mse_only() -> None:
    batch = random_batch(num_examples=8, vocab_size=VOCAB, num_entities=ENTITIES)
    # With the MSE switched off the value head gets no gradient at all: the policy term
    # treats its prediction as a constant, and its input features are detached.
    model = _reader(baseline="learned", num_samples=2, value_weight=0.0)
    loss, _ = _train_step(model, batch)
    loss.backward()
    assert all(p.grad is None or (p.grad == 0).all() for p in model.value_head.parameters())
    # With the MSE on, the value head (and nothing upstream of it) learns from it.
    model = _reader(baseline="learned", num_samples=2, value_weight=1.0)
    loss, logged = _train_step(model, batch)
    loss.backward()
    assert any(p.grad.abs().sum() > 0 for p in model.value_head.parameters())
    assert logged.values["train_value_loss"] > 0


def test_ema_baseline_is_used_before_it_is_updated() -> None:
    batch = random_batch(num_examples=8, vocab_size=VOCAB, num_entities=ENTITIES)
    model = _reader(baseline="ema", num_samples=1, baseline_decay=0.5)
    _, first = _train_step(model, batch)
    assert first.values["train_baseline"] == 0.0  # nothing seen yet
    mean_reward = first.values["train_reward"]
    assert model.moving_average().item() == pytest.approx(mean_reward)
    _, second = _train_step(model, batch)
    assert second.values["train_baseline"] == pytest.approx(mean_reward)
    expected = 0.5 * mean_reward + 0.5 * second.values["train_reward"]
    assert model.moving_average().item() == pytest.approx(expected, rel=1e-5)


def test_leave_one_out_advantage_sums_to_zero() -> None:
    # With s samples, sum_i (r_i - mean_{j != i} r_j) = 0 for every example, so the mean
    # advantage is 0 and its logged variance equals its mean square.
    batch = random_batch(num_examples=8, vocab_size=VOCAB, num_entities=ENTITIES)
    model = _reader(baseline="leave_one_out", num_samples=4)
    _, logged = _train_step(model, batch)
    assert logged.values["train_advantage_var"] > 0
    assert logged.values["train_baseline"] == pytest.approx(logged.values["train_reward"], abs=1e-5)


def test_entropy_bonus_decays_with_the_step() -> None:
    model = _reader(entropy_bonus=0.5, entropy_decay=0.5)
    batch = random_batch(num_examples=4, vocab_size=VOCAB, num_entities=ENTITIES)
    _, logged = _train_step(model, batch)
    assert logged.values["train_entropy_weight"] == 0.5  # global_step 0 outside a Trainer
    assert 0 < logged.values["train_entropy"] <= torch.log(torch.tensor(20.0)).item() + 1e-5


def test_sample_evaluation_averages_the_answer_distribution() -> None:
    batch = random_batch(num_examples=6, vocab_size=VOCAB, num_entities=ENTITIES)
    model = _reader(eval_mode="sample", eval_samples=5).eval()
    with torch.no_grad():
        output = model(batch)
    sample_probs = output.extras.sample_logits.softmax(-1)  # (b, 5, e)
    torch.testing.assert_close(output.logits.softmax(-1), sample_probs.mean(1))
    assert output.extras.samples_selected.shape == (6, 5, 1)


@pytest.mark.parametrize("answer_layer", ["output", "tied"])
def test_expected_evaluation_is_the_policy_weighted_answer(
    answer_layer: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``expected``: p(a) = sum_t pi(t) p(a | read t alone), computed here one position at a
    time through the reader's parts; the same in chunks of 1 and of 5 positions."""
    import attentive_reader.models.hard as hard

    batch = random_batch(num_examples=6, vocab_size=VOCAB, num_entities=ENTITIES)
    model = _reader(eval_mode="expected", answer_layer=answer_layer).eval()
    b, n = batch.context_mask.shape
    with torch.no_grad():
        output = model(batch)
        encoded = model.encode(batch)
        y_d, u = encoded.document, encoded.query_final
        policy = output.attention  # (b, n)
        wanted = torch.zeros(b, ENTITIES)
        for t in range(n):
            weights = torch.zeros(b, 1, n)
            weights[:, 0, t] = 1.0
            given = hard.AnswerInput(vector=y_d[:, t], query=u, weights=weights)
            wanted += policy[:, t, None] * model.answer_scores(batch, given).softmax(-1)
        monkeypatch.setattr(hard, "EXPECTED_CHUNK", 1)
        one_at_a_time = model(batch).logits
        monkeypatch.setattr(hard, "EXPECTED_CHUNK", 5)
        in_fives = model(batch).logits
    probs = output.logits.softmax(-1)
    torch.testing.assert_close(probs, wanted, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(probs.sum(-1), torch.ones(b))
    assert (probs[~batch.candidates] == 0).all()
    torch.testing.assert_close(one_at_a_time, in_fives)
    torch.testing.assert_close(one_at_a_time.softmax(-1), probs, atol=1e-6, rtol=1e-5)
    # what it reports: the policy's top position, and its one averaged answer
    assert torch.equal(output.selected[:, 0], policy.argmax(-1))
    torch.testing.assert_close(output.extras.sample_logits[:, 0], output.logits)


def test_sampled_evaluation_tends_to_the_expected_answer() -> None:
    """``sample`` estimates what ``expected`` computes: with 4,000 draws the two agree."""
    batch = random_batch(num_examples=6, vocab_size=VOCAB, num_entities=ENTITIES)
    model = _reader(eval_mode="expected").eval()
    with torch.no_grad():
        expected = model(batch).logits.softmax(-1)
        model.eval_mode, model.eval_samples = "sample", 4000
        torch.manual_seed(1)
        sampled = model(batch).logits.softmax(-1)
    # each probability is a mean of 4,000 draws in [0, 1]: its standard error is <= 0.008
    assert (sampled - expected).abs().max() < 0.04


def test_uniform_evaluation_ignores_the_policy() -> None:
    batch = random_batch(num_examples=64, vocab_size=VOCAB, num_entities=ENTITIES)
    model = _reader(eval_mode="greedy").eval()
    with torch.no_grad():
        greedy = model(batch).selected[:, 0]  # (b,)
        model.eval_mode = "uniform"
        uniform = model(batch).selected[:, 0]  # (b,)
    # Contexts have 8-20 tokens: a uniform draw meets the greedy choice in <= 1/8 of rows.
    assert (uniform != greedy).float().mean() > 0.6
    assert batch.context_mask.gather(1, uniform.unsqueeze(1)).all()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"baseline": "leave_one_out", "num_samples": 1}, "num_samples >= 2"),
        ({"selection": "gumbel", "baseline": "ema"}, "baseline='none'"),
        ({"k": 0}, "k must be a positive integer"),
        ({"reward": "accuracy"}, "reward must be one of"),
        ({"eval_mode": "beam"}, "eval_mode must be one of"),
        ({"eval_mode": "expected", "k": 2}, "needs k=1"),
        ({"entropy_decay": 0.0}, "entropy decay"),
        ({"baseline_decay": 1.5}, "decay"),
        ({"gumbel_temperature": 0.0}, "gumbel_temperature"),
    ],
)
def test_constructor_rejects_bad_options(options: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _reader(**options)


def test_checkpoint_round_trip(tmp_path: Path) -> None:
    path = write_toy_dataset(tmp_path / "toy", num_train=64, num_validation=16, num_test=16)
    data = ClozeDataModule(str(path), batch_size=16, num_entities=8)
    data.setup("fit")
    model = HardAttentionReader(
        vocab_size=data.vocab_size,
        num_entities=data.num_entities,
        **SMALL,
        k=2,
        baseline="ema",
        eval_mode="sample",
    )
    trainer = quiet_trainer(
        max_steps=3,
        limit_val_batches=0,
        default_root_dir=tmp_path,
    )
    trainer.fit(model, data)
    checkpoint = tmp_path / "hard.ckpt"
    trainer.save_checkpoint(checkpoint)
    loaded = load_reader(checkpoint)
    assert type(loaded) is HardAttentionReader
    assert loaded.hparams["k"] == 2 and loaded.hparams["eval_mode"] == "sample"
    assert loaded.moving_average.initialized.item()
    assert loaded.moving_average().item() == pytest.approx(model.moving_average().item())


def test_cli_fast_dev_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_toy_dataset(tmp_path / "toy", num_train=64, num_validation=16, num_test=16)
    monkeypatch.chdir(tmp_path)
    status = cli_main(
        [
            "fit",
            "--config",
            str(CONFIG),
            "--data.path",
            str(path),
            "--data.num_entities",
            "8",
            "--model.embedding_dim",
            "8",
            "--model.hidden_dim",
            "8",
            "--trainer.fast_dev_run",
            "true",
            "--trainer.enable_progress_bar",
            "false",
            "--trainer.enable_model_summary",
            "false",
        ]
    )
    assert status == 0


# Issue 4's setting (the paper's output layer over 8 permuted ids, pure REINFORCE), and the
# shipped config's answer path over 100 permuted ids (tied layer reading the selected marker,
# 0/1 reward, the policy's attention-sum term).
SETTINGS = {
    "output-8-ids": (8, {"answer_layer": "output"}),
    "shipped-100-ids": (
        100,
        {
            "answer_layer": "tied",
            "query_match": True,
            "reward": "correct",
            "policy_supervision": 1.0,
        },
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("setting", SETTINGS)
def test_learns_the_toy_task_and_beats_its_untrained_selection(
    tmp_path: Path, setting: str
) -> None:
    """Issue 4's done-when: >= 0.8 test accuracy on the generated cloze task, well above the
    untrained reader and the trained read-out with uniformly random (untrained) selection."""
    path = write_toy_dataset(
        tmp_path / "toy", num_train=2000, num_validation=100, num_test=200, seed=0
    )
    num_entities, options = SETTINGS[setting]
    pl.seed_everything(0, verbose=False)
    data = ClozeDataModule(str(path), batch_size=32, num_entities=num_entities, seed=0)
    data.setup("fit")
    model = HardAttentionReader(
        vocab_size=data.vocab_size,
        num_entities=data.num_entities,
        embedding_dim=32,
        hidden_dim=32,
        dropout=0.0,
        optimizer="adam",
        lr=3e-3,
        **options,
    )
    trainer = quiet_trainer(
        max_epochs=6,
        limit_val_batches=0,
        gradient_clip_val=10,
    )
    untrained = trainer.test(model, data, verbose=False)[0]["test_acc"]
    start = time.perf_counter()
    trainer.fit(model, data)
    seconds = time.perf_counter() - start
    trained = trainer.test(model, data, verbose=False)[0]["test_acc"]
    model.eval_mode = "uniform"
    uniform = trainer.test(model, data, verbose=False)[0]["test_acc"]
    print(
        f"hard reader: untrained {untrained:.3f}, uniform selection {uniform:.3f}, "
        f"trained {trained:.3f} ({seconds:.0f} s)"
    )
    assert trained >= 0.8
    assert trained - untrained >= 0.3
    assert trained - uniform >= 0.3


def test_each_choice_is_a_part_made_once() -> None:
    """``selection``, ``reward``, ``baseline`` and ``eval_mode`` each choose a part from its
    table when set; setting ``eval_mode`` later chooses again, with the same checks."""
    import attentive_reader.models.hard as hard
    from attentive_reader.nn.reinforce import CorrectReward, LeaveOneOutBaseline, NoBaseline
    from attentive_reader.nn.selection import GumbelSelector, SampledSelector

    model = _reader(selection="gumbel", baseline="none", reward="correct", eval_mode="sample")
    assert isinstance(model.train_selector, GumbelSelector)
    assert isinstance(model.reward, CorrectReward) and isinstance(model.baseline, NoBaseline)
    assert model.evaluation is hard.EVAL_MODES["sample"] and not model.evaluation.expected
    model.eval_mode = "expected"
    assert model.eval_mode == "expected" and model.evaluation.expected
    with pytest.raises(ValueError, match="eval_mode must be one of"):
        model.eval_mode = "beam"  # type: ignore[assignment]
    assert model.eval_mode == "expected"  # a refused value changes nothing
    default = _reader(k=2)
    assert isinstance(default.train_selector, SampledSelector)
    assert isinstance(default.baseline, LeaveOneOutBaseline)
    with pytest.raises(ValueError, match="needs k=1"):
        default.eval_mode = "expected"


@pytest.mark.parametrize("baseline", ["none", "ema", "learned", "leave_one_out"])
def test_checkpoint_keys_do_not_depend_on_where_the_parts_live(baseline: str) -> None:
    """Old checkpoints load: the moving average's state is saved for every baseline, the value
    head's parameters only for the learned one, under the reader's own names."""
    num_samples = 2 if baseline == "leave_one_out" else 1
    keys = set(_reader(baseline=baseline, num_samples=num_samples).state_dict())
    assert {"moving_average.value", "moving_average.initialized"} <= keys
    value_keys = {f"value_head.{i}.{p}" for i in (0, 2) for p in ("weight", "bias")}
    assert (value_keys <= keys) == (baseline == "learned")
    assert not any(key.startswith(("baseline.", "reward.", "train_selector.")) for key in keys)
