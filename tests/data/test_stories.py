"""A share of the training stories (``--data.train_fraction``): nested, whole stories."""

import datasets
import pytest

from attentive_reader.corpus.records import CLOZE_FEATURES
from attentive_reader.data import encoded
from attentive_reader.data.datamodule import ClozeDataModule
from attentive_reader.data.stories import story_position, story_share
from tests.corpus.fixtures import cloze_example, write_dataset


def _example(i: int, story: int):
    # Each story holds 3 questions; the words differ per story so the vocabulary shows them.
    return cloze_example(
        f"ex{i}",
        f"story{story}",
        f"@entity0 met @entity1 in w{story}",
        "@placeholder met",
        "@entity0",
    )


def _rows(stories: int) -> datasets.Dataset:
    examples = [_example(3 * s + q, s) for s in range(stories) for q in range(3)]
    return datasets.Dataset.from_list([e.to_row() for e in examples], features=CLOZE_FEATURES)


def test_story_position_is_the_scaled_sha1_of_the_id():
    # sha1("a") = 86f7e437faa5a7fc..., so the position is 0x86f7e437faa5a7fc / 2**64.
    assert story_position("a") == 0x86F7E437FAA5A7FC / 2**64
    assert 0 <= story_position("") < 1


def test_shares_are_nested_and_keep_whole_stories():
    rows = _rows(200)
    quarter, half, whole = (story_share(rows, f) for f in (0.25, 0.5, 1.0))
    assert whole is rows
    stories = [set(r["story_id"]) for r in (quarter, half)]
    assert stories[0] < stories[1]
    for share, fraction in zip(stories, (0.25, 0.5)):
        assert all(story_position(s) < fraction for s in share)
        assert abs(len(share) / 200 - fraction) < 0.1
    for part in (quarter, half):  # every question of a kept story, none of the others
        assert len(part) == 3 * len(set(part["story_id"]))


@pytest.mark.parametrize("fraction", [0, -0.5, 1.5, True])
def test_a_share_outside_0_to_1_is_refused(fraction):
    with pytest.raises(ValueError, match=r"share of stories must be in \(0, 1\]"):
        story_share(_rows(2), fraction)


def test_the_data_module_trains_on_the_share_and_evaluates_on_everything(tmp_path):
    examples = [_example(3 * s + q, s) for s in range(40) for q in range(3)]
    path = write_dataset(
        tmp_path / "data",
        {"train": examples, "validation": examples[:6], "test": examples[:6]},
    )
    whole = ClozeDataModule(path, num_entities=4)
    half = ClozeDataModule(path, num_entities=4, train_fraction=0.5)
    kept = {s for s in whole.examples("train")["story_id"] if story_position(s) < 0.5}
    assert set(half.examples("train")["story_id"]) == kept
    assert len(half.examples("train")) == 3 * len(kept) < len(whole.examples("train"))
    assert len(half.examples("validation")) == len(whole.examples("validation")) == 6
    # The vocabulary is the share's: a word of a dropped story is unknown.
    dropped = next(s for s in range(40) if f"story{s}" not in kept)
    assert f"w{dropped}" in whole.vocab.words and f"w{dropped}" not in half.vocab.words


@pytest.mark.parametrize("num_proc", [1, 2])
def test_the_share_is_what_the_training_batches_hold(tmp_path, monkeypatch, capfd, num_proc):
    """The share goes through the encoded cache: every kept question once, no other (with
    num_proc 2 and small blocks, where a whole split would be encoded by worker processes),
    and no progress bar of datasets' in the log while it is selected."""
    monkeypatch.setattr(encoded, "_BLOCK_ROWS", 8)
    examples = [_example(3 * s + q, s) for s in range(40) for q in range(3)]
    path = write_dataset(
        tmp_path / "data",
        {"train": examples, "validation": examples[:6], "test": examples[:6]},
    )
    half = ClozeDataModule(
        path, num_entities=4, train_fraction=0.5, batch_size=7, num_proc=num_proc
    )
    half.setup("fit")
    seen = [example_id for batch in half.train_dataloader() for example_id in batch.ids]
    assert sorted(seen) == sorted(half.examples("train")["id"])
    assert len(seen) < len(examples)
    assert "Flattening" not in capfd.readouterr().err
