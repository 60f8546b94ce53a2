"""Token ids encoded once and memory-mapped: equal to the per-row encoding, reused across
data modules, rebuilt when stale or damaged, safe under a concurrent first run."""

import multiprocessing
import pickle
import shutil
from pathlib import Path

import numpy as np
import pytest

from attentive_reader.common.errors import UserError
from attentive_reader.common.markers import entity_index
from attentive_reader.corpus.records import ClozeExample
from attentive_reader.data import encoded
from attentive_reader.data.datamodule import ClozeDataModule
from attentive_reader.data.entity_block import stored_ids
from attentive_reader.data.vocab import Vocabulary
from tests.corpus.fixtures import write_dataset


def _example(i: int, context: str, query: str, answer: str, candidates=None) -> ClozeExample:
    tokens = context.split()
    markers = tuple(dict.fromkeys(t for t in tokens if t.startswith("@entity")))
    return ClozeExample(
        id=f"ex{i}",
        story_id=f"s{i}",
        context=tuple(tokens),
        query=tuple(query.split()),
        answer=answer,
        candidates=markers if candidates is None else candidates,
    )


ROWS = [
    _example(0, "@entity0 met @entity1 in paris .", "@entity0 met @placeholder", "@entity1"),
    _example(1, "@entity0 sued @entity2 . zurich", "@placeholder sued @entity2", "@entity0"),
    _example(2, "@entity1 met @entity0 .", "@placeholder met @entity0", "@entity1"),
    _example(3, "rome @entity3 met @entity1 .", "@entity3 met @placeholder", "@entity1"),
    _example(4, "@entity2 hired @entity0 .", "@entity2 hired @placeholder", "@entity0"),
]


def write(directory: Path, train=ROWS, validation=ROWS[:2], test=ROWS[4:]) -> str:
    return write_dataset(directory, {"train": train, "validation": validation, "test": test})


@pytest.fixture
def path(tmp_path: Path) -> str:
    return write(tmp_path / "ds")


def _folders(path: str) -> list[Path]:
    return sorted(p for p in (Path(path) / encoded.CACHE_FOLDER).iterdir() if p.is_dir())


def test_cached_columns_equal_the_per_row_encoding(path):
    dm = ClozeDataModule(path, max_words=3, num_entities=4, entity_ids="first_occurrence")
    train = dm.dataset("train")
    assert len(train) == 5 and train.lengths.tolist() == [6, 5, 4, 5, 4]
    for row, ex in zip(ROWS, train.examples):
        assert ex.id == row.id
        assert ex.context.tolist() == dm.vocab.encode(row.context)
        assert ex.query.tolist() == dm.vocab.encode(row.query)
        assert ex.answer == entity_index(row.answer)
        assert ex.candidates.tolist() == [entity_index(m) for m in row.candidates]
    # By hand: met 6, "." 5, hired 2 = sued 2 (alphabetical); 4 entity ids (3..6), so
    # met 7, "." 8; "rome @entity3 met @entity1 ." -> <unk> 6 7 4 8.
    assert dm.vocab.words == ["met", ".", "hired"]
    assert train.examples[3].context.tolist() == [1, 6, 7, 4, 8]


def test_a_second_data_module_opens_the_cache_without_encoding(path, monkeypatch):
    first = ClozeDataModule(path, num_entities=8)
    first.setup("fit")
    folders = _folders(path)
    assert [f.name.split("-")[0] for f in folders] == ["train", "validation"]

    def no_build(*args, **kwargs):
        raise AssertionError("encoded again")

    monkeypatch.setattr(encoded, "_build", no_build)
    monkeypatch.setattr(Vocabulary, "from_counts", no_build)  # the vocabulary is cached too
    second = ClozeDataModule(path, num_entities=8)
    second.setup("fit")
    assert second.vocab == first.vocab
    a, b = first.dataset("train").examples[1], second.dataset("train").examples[1]
    assert a.context.tolist() == b.context.tolist() and _folders(path) == folders


def test_another_vocabulary_gets_its_own_cache(path, tmp_path):
    ClozeDataModule(path, num_entities=8).dataset("train")
    Vocabulary(["met"], num_entities=8).save(tmp_path / "vocab.json")
    other = ClozeDataModule(path, vocab=str(tmp_path / "vocab.json")).dataset("train")
    assert len(_folders(path)) == 2
    met = 3 + 8
    assert other.examples[0].context.tolist() == [3, met, 4, 1, 1, 1]


@pytest.mark.parametrize(
    "damage",
    [
        lambda folder: (folder / "meta.json").unlink(),  # an interrupted build
        lambda folder: (folder / "context.npy").write_bytes(b"\x93NUMPY"),  # truncated
        lambda folder: (folder / "context_offsets.npy").unlink(),
        lambda folder: (folder / "meta.json").write_text("{not json"),
    ],
)
def test_a_damaged_cache_is_rebuilt(path, damage):
    expected = ClozeDataModule(path, num_entities=8).dataset("train").examples[3].context.tolist()
    (folder,) = [f for f in _folders(path) if f.name.startswith("train")]
    damage(folder)
    again = ClozeDataModule(path, num_entities=8).dataset("train")
    assert again.examples[3].context.tolist() == expected
    assert (folder / "meta.json").is_file()
    assert not list(folder.parent.glob(".*partial"))


def test_a_rewritten_dataset_is_encoded_again(path, tmp_path):
    ClozeDataModule(path, num_entities=8).dataset("train")
    changed = [_example(9, "@entity0 won .", "@placeholder won", "@entity0"), *ROWS[1:]]
    # Rewrite the same directory (as preprocess --overwrite does): new files, new key.
    write(tmp_path / "new", train=changed)
    for name in ("train", "validation", "test", "dataset_dict.json"):
        target = Path(path) / name
        shutil.rmtree(target) if target.is_dir() else target.unlink()
        source = tmp_path / "new" / name
        shutil.copytree(source, target) if source.is_dir() else shutil.copy(source, target)
    dm = ClozeDataModule(path, num_entities=8)
    assert dm.dataset("train").examples[0].id == "ex9"
    assert dm.vocab.token_id("won") != dm.vocab.UNK  # the vocabulary was counted again


def test_cache_dir_and_a_read_only_dataset_directory(path, tmp_path, monkeypatch):
    ClozeDataModule(path, num_entities=8, cache_dir=str(tmp_path / "cache")).dataset("test")
    assert (tmp_path / "cache").is_dir() and not (Path(path) / encoded.CACHE_FOLDER).exists()
    # A directory the user cannot write: the user's cache (root ignores modes, so pretend).
    monkeypatch.setenv(encoded.ENV_CACHE, str(tmp_path / "user-cache"))
    monkeypatch.setattr(encoded.os, "access", lambda *_: False)
    root = encoded.cache_root(Path(path))
    assert root.parent == tmp_path / "user-cache" / "encoded"
    ClozeDataModule(path, num_entities=8).dataset("test")
    assert any(p.name.startswith("test-") for p in root.iterdir())


def _build_in_child(path: str, log: str) -> None:
    original = encoded._build

    def logged(*args, **kwargs):
        with open(log, "a") as handle:
            handle.write("built\n")
        return original(*args, **kwargs)

    encoded._build = logged
    ClozeDataModule(path, num_entities=8).setup("fit")


def test_two_processes_starting_together_build_once(path, tmp_path):
    log = tmp_path / "builds.log"
    context = multiprocessing.get_context("fork")
    children = [context.Process(target=_build_in_child, args=(path, str(log))) for _ in range(2)]
    for child in children:
        child.start()
    for child in children:
        child.join(120)
        assert child.exitcode == 0
    assert log.read_text().count("built") == 2  # train and validation, once each
    dm = ClozeDataModule(path, num_entities=8)
    assert dm.dataset("train").examples[2].id == "ex2"


@pytest.mark.slow
def test_worker_processes_encode_the_same_ids(path, tmp_path, monkeypatch):
    one = ClozeDataModule(path, num_entities=8, cache_dir=str(tmp_path / "one"))
    monkeypatch.setattr(encoded, "_BLOCK_ROWS", 2)  # 5 rows: three ranges of rows
    many = ClozeDataModule(path, num_entities=8, cache_dir=str(tmp_path / "many"), num_proc=3)
    a, b = one.dataset("train").columns, many.dataset("train").columns
    for name in encoded._ARRAYS:
        assert np.array_equal(a.array(name), b.array(name)), name


def test_markers_beyond_the_block_are_stored_by_number_and_read_fitted_into_it(path, tmp_path):
    Vocabulary(["met", "."], num_entities=2).save(tmp_path / "vocab.json")
    dm = ClozeDataModule(path, vocab=str(tmp_path / "vocab.json"))
    test = dm.dataset("validation")  # ROWS[:2]; ROWS[1] names @entity2, beyond the block
    vocab = dm.vocab
    for i, row in enumerate(ROWS[:2]):
        span = test.columns.span("context", "context_offsets", i)
        assert span.tolist() == stored_ids(row.context, vocab).tolist()
    # "@entity0 sued @entity2 . zurich": @entity2 has no id in a block of 2, so -1 - 2.
    assert test.columns.span("context", "context_offsets", 1).tolist() == [3, 1, -3, 6, 1]
    # Read, it is fitted by first occurrence: @entity0 stays 0, @entity2 becomes 1.
    example = test.examples[1]
    assert vocab.decode(example.context) == ["@entity0", "<unk>", "@entity1", ".", "<unk>"]
    assert vocab.decode(example.query) == ["@placeholder", "<unk>", "@entity1"]
    assert (example.answer, list(example.candidates)) == (0, [0, 1])


def test_a_pickled_split_maps_the_files_instead_of_copying_them(path):
    split = ClozeDataModule(path, num_entities=8).dataset("train")
    split.examples[0]  # maps the arrays in this process
    data = pickle.dumps(split)
    assert len(data) < 1000
    assert pickle.loads(data).examples[4].id == "ex4"


@pytest.mark.parametrize(
    "row, message",
    [
        (
            _example(7, "@entity0 met @entity1", "@placeholder met", "@entity9", ("@entity0",)),
            r"\[train\] example ex7: the answer @entity9 is not among its candidates",
        ),
        (
            _example(7, "@entity0 met bob", "@placeholder met", "@entity0", ("@entity0", "bob")),
            r"\[train\] example ex7: not an entity marker: 'bob'",
        ),
        (
            _example(7, "@entity0 met @entity1", "@placeholder met", "@entity1", ("@entity0",)),
            r"\[train\] example ex7: the answer @entity1 is not among its candidates",
        ),
    ],
)
def test_bad_rows_are_named_with_what_to_do(tmp_path, row, message):
    data = write(tmp_path / "bad", train=[*ROWS[:3], row, *ROWS[3:]])
    Vocabulary(["met"], num_entities=5).save(tmp_path / "vocab.json")
    dm = ClozeDataModule(data, vocab=str(tmp_path / "vocab.json"))
    with pytest.raises(UserError, match=message):
        dm.dataset("train")
    assert not list((Path(data) / encoded.CACHE_FOLDER).glob("train-*"))  # nothing half-built
