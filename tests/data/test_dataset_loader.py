"""The one loader of a processed dataset (``corpus/records.py``): one clear error per way a
directory can be wrong, used by the data module, ``export`` and ``evaluate``."""

import json
import subprocess
import sys

import datasets
import pytest

from attentive_reader.common.errors import UserError
from attentive_reader.corpus.questions import export_questions
from attentive_reader.corpus.records import (
    CLOZE_FEATURES,
    SPLITS,
    ClozeExample,
    load_dataset,
    load_split,
)
from attentive_reader.data.datamodule import ClozeDataModule
from attentive_reader.eval.evaluation import load_examples

ROW = ClozeExample(
    id="ex0",
    story_id="s0",
    context=("@entity0", "met", "@entity1"),
    query=("@placeholder", "met", "@entity1"),
    answer="@entity0",
    candidates=("@entity0", "@entity1"),
    entities={"@entity0": "Ann", "@entity1": "Bob"},
).to_row()


def _write(path, splits=("train", "validation", "test"), rows=None):
    data = {
        split: datasets.Dataset.from_list(
            [dict(rows or ROW)], features=None if rows else CLOZE_FEATURES
        )
        for split in splits
    }
    datasets.DatasetDict(data).save_to_disk(str(path))
    return path


def _every_loader(path, split="test"):
    """The loaders of the three callers, each as a thunk."""
    return {
        "load_split": lambda: load_split(path, split),
        "ClozeDataModule": lambda: ClozeDataModule(str(path)).examples(split),
        "evaluate": lambda: load_examples(path, split),
        "export": lambda: export_questions(path, path.parent / "exported"),
    }


def test_a_processed_dataset_loads_its_splits(tmp_path):
    path = _write(tmp_path / "ds")
    assert set(load_dataset(path)) == set(SPLITS)
    assert load_split(path, "test")[0]["id"] == "ex0"
    assert [ex.id for ex in load_examples(path, "test")] == ["ex0"]


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda p: p, r"ds is not a processed dataset directory \(it does not exist\)"),
        (lambda p: p.mkdir() or p, r"ds is not a processed dataset directory \(no dataset_dict"),
        (
            lambda p: (p.mkdir(), (p / "dataset_dict.json").write_text('{"splits": ["x"]}')) and p,
            r"ds: cannot load the dataset .*attentive-reader preprocess' again",
        ),
    ],
)
def test_every_loader_gives_the_same_error(tmp_path, make, message):
    path = make(tmp_path / "ds")
    for load in _every_loader(path).values():
        with pytest.raises(UserError, match=message):
            load()


def test_a_missing_split_names_those_there_are(tmp_path):
    path = _write(tmp_path / "ds", splits=("train", "validation"))
    message = r"ds has no 'test' split \(it has train, validation\)"
    for name in ("load_split", "ClozeDataModule", "evaluate"):
        with pytest.raises(UserError, match=message):
            _every_loader(path)[name]()


def test_a_dataset_of_an_older_format_says_what_to_do(tmp_path):
    old = {
        key: value for key, value in ROW.items() if key not in ("entity_markers", "entity_names")
    }
    path = _write(tmp_path / "ds", rows=old)
    message = r"split \w+ lacks the columns entity_markers, entity_names .*older version"
    for load in _every_loader(path).values():
        with pytest.raises(UserError, match=message):
            load()


def test_the_loader_imports_neither_torch_nor_spacy():
    code = (
        "import sys, json; import attentive_reader.corpus.records; "
        "print(json.dumps(sorted(m for m in ('torch', 'spacy') if m in sys.modules)))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(run.stdout) == []
