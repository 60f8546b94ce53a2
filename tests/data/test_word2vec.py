"""``data/word2vec.py`` and ``attentive-reader vectors``: the train split's text only, each
story's document once, entity markers as one shared token left out of the file, vectors a
reader loads, the same vectors from the same seed, and a clear line without gensim."""

from __future__ import annotations

import importlib.util
import sys

import pytest
from torch import nn

from attentive_reader.cli import main as cli
from attentive_reader.common.errors import UserError
from attentive_reader.data.word2vec import ENTITY_TOKEN, train_word_vectors, training_sentences
from attentive_reader.nn.word_vectors import load_word_vectors
from tests.corpus.fixtures import cloze_example, write_dataset

CONTEXT = "@entity0 met @entity1 in @entity2 . @entity1 smiled ."


@pytest.fixture
def data(tmp_path) -> str:
    """Two train stories (the first with two questions), one validation story of its own
    words."""
    return write_dataset(
        tmp_path / "data",
        {
            "train": [
                cloze_example("a1", "s1", CONTEXT, "@placeholder met @entity1", "@entity0"),
                cloze_example("a2", "s1", CONTEXT, "@entity0 met @placeholder", "@entity1"),
                cloze_example("b1", "s2", "the bank hired @entity0 .", "@placeholder was hired"),
            ],
            "validation": [
                cloze_example("v1", "s3", "secret words about @entity0 .", "@placeholder said")
            ],
            "test": [cloze_example("t1", "s4", "hidden @entity0 .", "@placeholder spoke")],
        },
    )


def test_the_sentences_are_the_train_splits_documents_once_and_distinct_queries(data):
    e = ENTITY_TOKEN
    assert training_sentences(data) == [
        [e, "met", e, "in", e, ".", e, "smiled", "."],  # s1's document, once
        [e, "met", e],  # both of s1's queries, alike once the markers are one token
        ["the", "bank", "hired", e, "."],
        [e, "was", "hired"],
    ]


# The tests that train word2vec need gensim (the test extra installs it, as CI does).
needs_gensim = pytest.mark.skipif(
    importlib.util.find_spec("gensim") is None, reason="gensim is not installed"
)


@needs_gensim
def test_the_vectors_file_holds_the_train_words_and_a_reader_loads_it(data, tmp_path):
    out = tmp_path / "vectors.txt"
    summary = train_word_vectors(data, out, dim=4, epochs=2, min_count=1)
    header, *lines = out.read_text(encoding="utf-8").splitlines()
    words = {line.split(" ")[0] for line in lines}
    assert words == {"met", "in", ".", "smiled", "the", "bank", "hired", "was"}
    assert header == "8 4" and all(len(line.split(" ")) == 5 for line in lines)
    assert (summary.words, summary.dim, summary.sentences, summary.tokens) == (8, 4, 4, 20)
    tokens = ["<pad>", "<unk>", "@placeholder", "@entity0", "met", "bank", "secret"]
    assert load_word_vectors(out, tokens, nn.Embedding(len(tokens), 4), keep=tokens[:3]) == 2
    # One worker and one seed: the same file again.
    again = tmp_path / "again.txt"
    train_word_vectors(data, again, dim=4, epochs=2, min_count=1)
    assert again.read_bytes() == out.read_bytes()


@needs_gensim
def test_the_command_writes_the_vectors_and_says_how_to_use_them(data, tmp_path, capsys):
    out = tmp_path / "v.txt"
    argv = ["vectors", "--data", data, "--output", str(out), "--dim", "6", "--min-count", "1"]
    assert cli(argv) == 0
    assert out.read_text().splitlines()[0] == "8 6"
    assert "--model.embedding_dim 6 --model.word_vectors" in capsys.readouterr().err
    assert cli([*argv[:-1], "100"]) == 2
    assert "no word seen 100 times" in capsys.readouterr().err
    assert cli([*argv, "--window", "0"]) == 2
    assert "--window must be a positive integer" in capsys.readouterr().err


def test_without_gensim_one_line_says_what_to_install(data, tmp_path, monkeypatch):
    for module in ("gensim", "gensim.models"):
        monkeypatch.setitem(sys.modules, module, None)  # importing it fails
    with pytest.raises(UserError, match=r"needs gensim: pip install 'attentive-reader\[vectors\]'"):
        train_word_vectors(data, tmp_path / "v.txt")
