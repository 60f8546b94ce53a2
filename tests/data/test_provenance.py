"""``data_provenance``: a dataset's fingerprint, its generated-or-real mark and the
exclusive-frequency baseline of its validation split, by hand."""

import hashlib
import json

import datasets
import pytest

from attentive_reader.common.errors import UserError
from attentive_reader.corpus.synthetic.examples import write_examples
from attentive_reader.data.datamodule import ClozeDataModule
from attentive_reader.data.provenance import data_provenance, generated_by
from tests.corpus.fixtures import numbered_example  # candidates: the markers, in order

VALIDATION = [
    # @entity0 twice, @entity1 once: the baseline answers @entity0, right: credit 1.
    numbered_example(0, "@entity0 x @entity0 @entity1", "@placeholder x", "@entity0"),
    # A tie between the two: credit 1/2.
    numbered_example(1, "@entity0 @entity1", "@placeholder y", "@entity1"),
    # @entity1 is in the query; of the others @entity0 is the most frequent, and wrong: 0.
    numbered_example(
        2, "@entity0 @entity0 @entity1 @entity1 @entity2", "@entity1 met @placeholder", "@entity2"
    ),
]


def test_the_baseline_the_fingerprint_and_the_mark(tmp_path):
    path = tmp_path / "d"
    write_examples(path, {"train": VALIDATION, "validation": VALIDATION}, source="unit", options={})
    data = ClozeDataModule(str(path))
    record = data.provenance()
    assert record["exclusive_frequency"] == pytest.approx((1 + 0.5 + 0) / 3)
    assert record["validation_examples"] == 3 and record["path"] == str(path.resolve())
    digest = hashlib.sha256((path / "manifest.json").read_bytes()).hexdigest()
    assert (record["fingerprint"], record["fingerprint_of"]) == (digest, "manifest")
    assert record["synthetic"] == {"generator": "unit"}  # write_examples makes data up
    # Computed once per validation split: a second data module reads the cached value.
    assert ClozeDataModule(str(path)).provenance() == record
    assert list((path / ".encoded").glob("exclusive_frequency-*.json"))

    (path / "manifest.json").unlink()  # a folder without a manifest: its splits' fingerprints
    splits = {s: datasets.load_from_disk(str(path / s)) for s in ("train", "validation")}
    bare = data_provenance(path, splits)
    assert bare["fingerprint_of"] == "splits" and bare["synthetic"] is None
    assert bare["fingerprint"] != digest
    assert bare["exclusive_frequency"] == record["exclusive_frequency"]
    assert data_provenance(path, {"train": splits["train"]})["exclusive_frequency"] is None


def test_what_a_manifest_says_about_its_origin(tmp_path):
    assert generated_by(None, tmp_path) is None
    assert generated_by({"synthetic": None}, tmp_path) is False  # with the mark: real text
    assert generated_by({"synthetic": {"generator": "x"}}, tmp_path) == {"generator": "x"}
    # Before the mark, a real corpus's manifest cannot tell; a synth corpus still on disk can.
    assert generated_by({"inputs": [{"path": str(tmp_path / "gone")}]}, tmp_path) is None
    corpus = tmp_path / "corpus"
    (corpus / "stories").mkdir(parents=True)
    mark = {"generator": "attentive_reader.corpus.synthetic", "seed": 3}
    (corpus / "synthetic.json").write_text(json.dumps(mark))
    found = generated_by({"inputs": [{"path": str(corpus / "stories")}]}, tmp_path)
    assert found["seed"] == 3 and found["found"] == str((corpus / "synthetic.json").resolve())


def test_a_development_manifest_of_generated_examples_is_refused_in_one_line(tmp_path):
    path = tmp_path / "d"
    write_examples(path, {"train": VALIDATION, "validation": VALIDATION}, source="unit", options={})
    manifest = json.loads((path / "manifest.json").read_text())
    del manifest["synthetic"]
    manifest["source"] = "toy"  # how generated examples said so before the mark
    (path / "manifest.json").write_text(json.dumps(manifest))
    expected = (
        f"{path / 'manifest.json'} was written by a development version of attentive-reader "
        "(a 'source' key, no 'synthetic' mark); generate the dataset again"
    )
    with pytest.raises(UserError) as caught:
        ClozeDataModule(str(path)).provenance()
    assert str(caught.value) == expected


def test_the_baseline_is_computed_without_caching_where_the_cache_cannot_be_written(tmp_path):
    from attentive_reader.data.provenance import _baseline

    blocker = tmp_path / "file"
    blocker.write_text("not a folder")  # a cache folder that cannot be made
    rows = datasets.Dataset.from_list([e.to_row() for e in VALIDATION])
    assert _baseline(rows, blocker / "cache") == pytest.approx(0.5)
    assert not (blocker.parent / "cache").exists()
