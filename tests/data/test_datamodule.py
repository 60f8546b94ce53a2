import json
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from attentive_reader.common.errors import UserError
from attentive_reader.corpus.manifest import MANIFEST_FORMAT
from attentive_reader.data.datamodule import ClozeDataModule, PreprocessingWarning
from attentive_reader.data.vocab import DEFAULT_NUM_ENTITIES, Vocabulary
from attentive_reader.data.vocab_sources import DATAMODULE_STATE
from tests.corpus.fixtures import numbered_example, write_dataset

TRAIN = [
    numbered_example(
        0, "@entity0 met @entity1 in paris .", "@entity0 met @placeholder", "@entity1"
    ),
    numbered_example(
        1,
        "@entity0 sued @entity2 . @entity1 met @entity0",
        "@placeholder sued @entity2",
        "@entity0",
    ),
    numbered_example(2, "@entity1 met @entity0 .", "@placeholder met @entity0", "@entity1"),
]
VALIDATION = [
    numbered_example(3, "@entity0 met @entity1 in rome .", "@entity0 met @placeholder", "@entity1")
]
TEST = [numbered_example(4, "@entity2 hired @entity0 .", "@entity2 hired @placeholder", "@entity0")]


@pytest.fixture
def path(tmp_path):
    return write_dataset(tmp_path / "ds", {"train": TRAIN, "validation": VALIDATION, "test": TEST})


def test_vocabulary_comes_from_the_train_split(path):
    dm = ClozeDataModule(path, num_entities=5, max_words=3)
    # Counted over train contexts and queries: met 5, "." 3, sued 2, in 1, paris 1.
    assert dm.vocab.words == ["met", ".", "sued"]
    assert dm.vocab_size == 3 + 5 + 3 and dm.num_entities == 5
    rome = dm.dataset("validation").examples[0]
    assert dm.vocab.decode(rome.context) == ["@entity0", "met", "@entity1", "<unk>", "<unk>", "."]


def test_encoded_examples_hold_entity_numbers(path):
    dm = ClozeDataModule(path, num_entities=5, entity_ids="first_occurrence")
    ex = dm.dataset("train").examples[1]
    assert ex.id == "ex1" and ex.answer == 0
    assert list(ex.candidates) == [0, 2, 1]
    assert dm.vocab.decode(ex.query) == ["@placeholder", "sued", "@entity2"]


def test_num_entities_defaults_to_600_or_what_the_data_needs_if_more(path, tmp_path):
    # The fixture's largest marker is @entity2.
    assert ClozeDataModule(path).num_entities == DEFAULT_NUM_ENTITIES == 600
    assert ClozeDataModule(path, num_entities=3).num_entities == 3
    # A query may name an entity its context does not: it counts too.
    wide = numbered_example(
        5, "@entity0 met @entity640 .", "@entity700 met @placeholder", "@entity0"
    )
    other = write_dataset(tmp_path / "wide", {"train": TRAIN, "validation": [wide], "test": TEST})
    assert ClozeDataModule(other).largest_entity_numbers() == {
        "train": 2,
        "validation": 700,
        "test": 2,
    }
    assert ClozeDataModule(other).num_entities == 701


def test_too_few_entity_ids_name_both_numbers_and_the_option(path):
    with pytest.raises(UserError, match=r"needs 3 entity ids .*@entity2.*num_entities is 2"):
        ClozeDataModule(path, num_entities=2)


def test_bad_entity_id_policy():
    with pytest.raises(ValueError, match="entity_ids must be one of permute, first_occurrence"):
        ClozeDataModule("unused", entity_ids="shuffle")


def test_training_data_beyond_a_stored_vocabulary_is_an_error_naming_both_numbers(path, tmp_path):
    Vocabulary(["met"], num_entities=2).save(tmp_path / "vocab.json")
    dm = ClozeDataModule(path, vocab=str(tmp_path / "vocab.json"))
    with pytest.raises(UserError, match=r"\[train\] .* @entity2 .* 2 entity ids.* at least 3"):
        dm.setup("fit")


def test_evaluation_data_beyond_the_block_is_read_fitted_into_it(path, tmp_path):
    Vocabulary(["met", "hired"], num_entities=2).save(tmp_path / "vocab.json")
    dm = ClozeDataModule(path, vocab=str(tmp_path / "vocab.json"))
    dm.setup("test")
    # "@entity2 hired @entity0 ." / "@entity2 hired @placeholder" -> 2 becomes 0, 0 becomes 1.
    (example,) = dm.dataset("test").examples
    assert dm.vocab.decode(example.context) == ["@entity0", "hired", "@entity1", "<unk>"]
    assert dm.vocab.decode(example.query) == ["@entity0", "hired", "@placeholder"]
    assert example.answer == 1 and list(example.candidates) == [0, 1]
    batch = next(iter(dm.test_dataloader()))
    assert batch.answer.tolist() == [1] and batch.candidates.tolist() == [[True, True]]


def test_training_permutation_is_a_consistent_seeded_relabelling(path):
    dm = ClozeDataModule(path, num_entities=50, seed=7)
    train = dm.dataset("train")
    original = train.examples[1]
    a, b = train[(3, 1)], train[(3, 1)]
    assert np.array_equal(a.context, b.context) and a.answer == b.answer  # reproducible
    # One bijection maps every entity id in context, query, answer and candidates.
    offset = dm.vocab.entity_offset
    mapping = {}
    for old, new in zip([*original.context, *original.query], [*a.context, *a.query]):
        if old >= offset and old < offset + 50:
            assert mapping.setdefault(old - offset, new - offset) == new - offset
        else:
            assert old == new
    assert len(set(mapping.values())) == len(mapping)
    assert a.answer == mapping[original.answer]
    assert [int(c) for c in a.candidates] == [mapping[c] for c in original.candidates]
    # Other epochs draw other permutations (50 ids: a repeat is vanishingly unlikely).
    assert any(train[(epoch, 1)].answer != a.answer for epoch in range(4, 9))


def _same(a, b) -> bool:
    return (
        (a.id, a.answer, a.truncated) == (b.id, b.answer, b.truncated)
        and np.array_equal(a.context, b.context)
        and np.array_equal(a.query, b.query)
        and np.array_equal(a.candidates, b.candidates)
    )


def test_no_permutation_in_evaluation_or_when_switched_off(path):
    # Examples are read from memory-mapped columns on demand: equal, not the same object.
    dm = ClozeDataModule(path, num_entities=50)
    assert _same(dm.dataset("validation")[(3, 0)], dm.dataset("validation").examples[0])
    dm_off = ClozeDataModule(path, num_entities=50, entity_ids="first_occurrence")
    assert _same(dm_off.dataset("train")[(3, 1)], dm_off.dataset("train").examples[1])


def test_training_batches_are_permuted_per_epoch(path):
    dm = ClozeDataModule(path, num_entities=50, batch_size=3)
    dm.setup("fit")
    loader = dm.train_dataloader()
    answers = []
    for epoch in range(3):
        loader.batch_sampler.epoch_fn = lambda epoch=epoch: epoch
        (batch,) = list(loader)
        order = np.argsort(batch.ids)
        answers.append(batch.answer[order].tolist())
        # The answer is always among the candidates after relabelling.
        assert batch.candidates[torch.arange(3), batch.answer].all()
    assert answers[0] != answers[1] or answers[1] != answers[2]


def test_persistent_training_workers_give_each_epoch_the_main_process_batches(path):
    def epochs(num_workers: int) -> list[list[int]]:
        dm = ClozeDataModule(path, num_entities=50, batch_size=3, num_workers=num_workers)
        dm.setup("fit")
        loader = dm.train_dataloader()
        assert loader.persistent_workers == (num_workers > 0)
        answers = []
        for epoch in range(3):  # one loader over the epochs, as the Trainer keeps it
            loader.batch_sampler.epoch_fn = lambda epoch=epoch: epoch
            (batch,) = list(loader)
            answers.append(batch.answer[np.argsort(batch.ids)].tolist())
        return answers

    assert epochs(1) == epochs(0)


def test_batches_are_pinned_for_a_cuda_trainer_or_when_asked(path):
    from types import SimpleNamespace

    dm = ClozeDataModule(path, num_entities=50, batch_size=3)
    dm.setup("fit")
    assert not dm.train_dataloader().pin_memory  # no trainer: nothing to copy to
    for device, pinned in (("cpu", False), ("cuda", True)):
        strategy = SimpleNamespace(root_device=torch.device(device))
        dm.trainer = SimpleNamespace(strategy=strategy, world_size=1, global_rank=0)
        loaders = (dm.train_dataloader(), dm.val_dataloader(), dm.predict_dataloader())
        assert [loader.pin_memory for loader in loaders] == [pinned] * 3
    dm.pin_memory = False  # the caller's choice wins
    assert not dm.train_dataloader().pin_memory


def test_truncation_is_recorded_and_keeps_candidates(path):
    dm = ClozeDataModule(path, num_entities=5, max_context_tokens=3, entity_ids="first_occurrence")
    dm.setup("fit")
    batch = next(iter(dm.val_dataloader()))
    assert batch.context.shape[1] == 3 and batch.truncated.tolist() == [True]
    assert batch.candidates[0, :2].all()


def test_state_dict_round_trip_and_mismatch(path, tmp_path):
    dm = ClozeDataModule(path, num_entities=5)
    dm.load_state_dict(dm.state_dict())  # the same vocabulary: accepted
    other = Vocabulary(["x"], num_entities=5)
    with pytest.raises(UserError, match="vocabulary differs"):
        dm.load_state_dict({"vocab": other.to_dict()})


def test_stored_vocabulary_wins_over_building(path, tmp_path):
    Vocabulary(["met"], num_entities=9).save(tmp_path / "vocab.json")
    dm = ClozeDataModule(path, vocab=str(tmp_path / "vocab.json"))
    assert dm.num_entities == 9 and dm.vocab.words == ["met"]
    # The hyperparameters are the arguments as given (no mutation after the fact); the count
    # in use reaches the model through the CLI's link from ``num_entities``.
    assert dm.hparams["num_entities"] is None and dm.hparams["vocab"].endswith("vocab.json")


def test_from_checkpoint_reuses_vocabulary_and_arguments(path, tmp_path):
    dm = ClozeDataModule(path, num_entities=5, batch_size=2, max_words=1)
    checkpoint = {
        "datamodule_hyper_parameters": {**dm.hparams, "_instantiator": "x"},
        "ClozeDataModule": dm.state_dict(),
    }
    torch.save(checkpoint, tmp_path / "run.ckpt")
    other = write_dataset(tmp_path / "other", {"train": TEST, "validation": TEST, "test": TEST})
    loaded = ClozeDataModule.from_checkpoint(tmp_path / "run.ckpt", path=other)
    assert loaded.vocab == dm.vocab and loaded.batch_size == 2
    assert str(loaded.path) == other
    # Lightning keys a data module's state by its class name, where the readers look first.
    assert DATAMODULE_STATE == ClozeDataModule.__qualname__


def test_a_checkpoint_with_the_development_option_permute_entities_is_refused(path, tmp_path):
    dm = ClozeDataModule(path, num_entities=5)
    arguments = {k: v for k, v in dm.hparams.items() if k != "entity_ids"}
    checkpoint = {
        "datamodule_hyper_parameters": {**arguments, "permute_entities": True},
        "ClozeDataModule": dm.state_dict(),
    }
    torch.save(checkpoint, tmp_path / "old.ckpt")
    expected = (
        f"{tmp_path / 'old.ckpt'} was saved by a development version of attentive-reader (data "
        "option permute_entities, now entity_ids: permute or first_occurrence); train it again "
        "with this version"
    )
    with pytest.raises(UserError) as caught:
        ClozeDataModule.from_checkpoint(tmp_path / "old.ckpt")
    assert str(caught.value) == expected


def _manifest(folder: str, pipeline: str, cap: int | None) -> None:
    manifest = {
        "format": MANIFEST_FORMAT,
        "spacy": {"name": pipeline, "version": "3.8.0"},
        "options": {"labels": ["PERSON"], "lowercase": True, "max_context_tokens": cap},
        "grouping": {"rules_version": 7},
    }
    (Path(folder) / "manifest.json").write_text(json.dumps(manifest))


def test_a_checkpoint_read_on_data_preprocessed_otherwise_warns_naming_both(path, tmp_path):
    _manifest(path, "en_core_web_sm", 2000)
    dm = ClozeDataModule(path, num_entities=5)
    checkpoint = {
        "datamodule_hyper_parameters": dict(dm.hparams),
        "ClozeDataModule": dm.state_dict(),
    }
    torch.save(checkpoint, tmp_path / "run.ckpt")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the same preprocessing: no warning
        ClozeDataModule.from_checkpoint(tmp_path / "run.ckpt")
    other = write_dataset(tmp_path / "other", {"train": TEST, "validation": TEST, "test": TEST})
    _manifest(other, "en_core_web_lg", None)
    expected = (
        f"{other} was preprocessed with spaCy pipeline en_core_web_lg 3.8.0, max_context_tokens "
        f"None, the training data of {tmp_path / 'run.ckpt'} with spaCy pipeline en_core_web_sm "
        "3.8.0, max_context_tokens 2000: entities may be marked differently"
    )
    with pytest.warns(PreprocessingWarning) as caught:
        loaded = ClozeDataModule.from_checkpoint(tmp_path / "run.ckpt", path=other)
    assert [str(w.message) for w in caught] == [expected] and loaded.vocab == dm.vocab
    with pytest.warns(PreprocessingWarning, match="en_core_web_lg 3.8.0"):  # through --ckpt_path
        ClozeDataModule(other, checkpoint=str(tmp_path / "run.ckpt"))


def test_missing_directory_is_a_clear_error(tmp_path):
    with pytest.raises(UserError, match="not a processed dataset directory"):
        ClozeDataModule(str(tmp_path / "nowhere"))


@pytest.mark.parametrize(
    "kwargs, message",
    [({"batch_size": 0}, "batch_size"), ({"max_context_tokens": 0}, "max_context_tokens")],
)
def test_bad_arguments(path, kwargs, message):
    with pytest.raises(ValueError, match=message):
        ClozeDataModule(path, **kwargs)
