"""``nn/word_vectors.py``: GloVe and word2vec text files into an embedding, entity markers and
kept tokens untouched, and every bad file refused in one line naming it."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from attentive_reader.common.errors import UserError
from attentive_reader.nn.word_vectors import load_word_vectors

TOKENS = ["<pad>", "<unk>", "@placeholder", "@entity0", "@entity1", "the", "Cat", "dog"]
KEEP = ("<pad>", "<unk>", "@placeholder")


def _embedding(dim: int = 3) -> nn.Embedding:
    embedding = nn.Embedding(len(TOKENS), dim, padding_idx=0)
    nn.init.zeros_(embedding.weight)
    return embedding


@pytest.mark.parametrize(
    "text",
    [
        "the 1 2 3\ncat 4 5 6\nbird 7 8 9\n",  # GloVe: no header
        "3 3\nthe 1 2 3\ncat 4 5 6\nbird 7 8 9\n",  # word2vec text: "count dim" first
    ],
    ids=["glove", "word2vec"],
)
def test_glove_and_word2vec_text_fill_the_rows_of_the_words_they_have(tmp_path, text):
    path = tmp_path / "vectors.txt"
    path.write_text(text, encoding="utf-8")
    embedding = _embedding()
    assert load_word_vectors(path, TOKENS, embedding, keep=KEEP) == 2
    weight = embedding.weight.detach()
    assert torch.equal(weight[5], torch.tensor([1.0, 2.0, 3.0]))
    assert torch.equal(weight[6], torch.tensor([4.0, 5.0, 6.0]))  # "Cat": the lower-cased word
    assert torch.equal(weight[7], torch.zeros(3))  # not in the file: unchanged


def test_entity_markers_and_kept_tokens_keep_their_own_embeddings(tmp_path):
    # Vectors trained on anonymized text have the markers; a reader must not take them.
    path = tmp_path / "vectors.txt"
    lines = [f"{t} 9 9 9" for t in ("<unk>", "@placeholder", "@entity0", "@entity1", "the")]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    embedding = _embedding()
    assert load_word_vectors(path, TOKENS, embedding, keep=KEEP) == 1
    weight = embedding.weight.detach()
    assert torch.equal(weight[5], torch.full((3,), 9.0))
    assert torch.equal(weight[:5], torch.zeros(5, 3))


def test_a_word_with_spaces_and_a_repeated_word(tmp_path):
    path = tmp_path / "vectors.vec"
    path.write_text("3 2\n. . . 1 2\nthe 3 4\nthe 5 6\n", encoding="utf-8")
    embedding = nn.Embedding(3, 2)
    assert load_word_vectors(path, ["<pad>", ". . .", "the"], embedding) == 2
    assert torch.equal(embedding.weight[1].detach(), torch.tensor([1.0, 2.0]))
    assert torch.equal(embedding.weight[2].detach(), torch.tensor([3.0, 4.0]))  # the first


@pytest.mark.parametrize(
    "text",
    ["the 1 2 3 4 5\ncat 1 2 3 4 5\n", "2 5\nthe 1 2 3 4 5\ncat 1 2 3 4 5\n"],
    ids=["glove", "word2vec"],
)
def test_a_file_of_another_size_is_refused_naming_the_file_and_both_sizes(tmp_path, text):
    path = tmp_path / "glove.5d.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(UserError) as error:
        load_word_vectors(path, TOKENS, _embedding(3))
    assert str(error.value) == (
        f"{path} holds 5-dimensional vectors but the reader's embedding_dim is 3; set "
        "--model.embedding_dim 5 or use a file of 3-dimensional vectors"
    )


def test_bad_files_are_one_line_errors_naming_them(tmp_path):
    path = tmp_path / "vectors.txt"
    cases = {
        b"the 1 2 3\ncat 4 5\n": "vectors.txt, line 2: 2 values where the file's vectors have 3",
        b"the 1 x 3\n": "vectors.txt, line 1: a value of 'the' is not a number",
        b"the 1 2 3\n\xff\xfe 1 2 3\n": "vectors.txt, line 2: not UTF-8",
    }
    for content, expected in cases.items():
        path.write_bytes(content)
        with pytest.raises(UserError, match=expected):
            load_word_vectors(path, TOKENS, _embedding())
    with pytest.raises(UserError, match="word vectors file not found: .*none.txt"):
        load_word_vectors(tmp_path / "none.txt", TOKENS, _embedding())
    with pytest.raises(UserError, match="cannot read the word vectors file .*: Is a directory"):
        load_word_vectors(tmp_path, TOKENS, _embedding())
    with pytest.raises(UserError, match="8 vocabulary tokens but the embedding has only 2 rows"):
        load_word_vectors(path, TOKENS, nn.Embedding(2, 3))
