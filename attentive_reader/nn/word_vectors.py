"""Pretrained word vectors from a text file into a reader's embedding.

The text format of GloVe and of word2vec / fastText (``.vec``; ``gensim``'s
``save_word2vec_format(binary=False)``): one word a line, ``word v1 v2 ... vd`` separated by
single spaces, UTF-8; word2vec's files start with a header line ``count d``. A file whose
vectors are not the embedding's size is refused at once, naming both sizes; a damaged line is
named by its number. Words containing spaces (a few exist in GloVe 840B) are read whole.

Entity markers (``@entity3``) never take a file's vector, nor do the tokens the caller keeps
(``@placeholder`` and the special tokens): an anonymized marker means nothing outside its
document, and a reader learns what each marker is from the permuted ids.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from pathlib import Path

import torch
from torch import nn

from attentive_reader.common.errors import UserError
from attentive_reader.common.markers import is_entity_marker


def load_word_vectors(
    path: str | Path,
    vocab_tokens: Sequence[str],
    embedding: nn.Embedding,
    keep: Collection[str] = (),
) -> int:
    """Copy the file's vectors into the rows of ``embedding`` whose token it has.

    Token ``i`` of ``vocab_tokens`` (row ``i``) takes the vector of the same word or, when the
    file has none, of its lower-cased form. The padding row, entity markers and the tokens in
    ``keep`` keep their values, as do words the file lacks.

    Args:
        path: the vector file.
        vocab_tokens: the token of each embedding row, in id order.
        embedding: the layer to fill; modified in place (on its device).
        keep: tokens that keep their own embeddings (e.g. ``@placeholder``, ``<unk>``).

    Returns:
        The number of rows that received a vector.

    Raises:
        UserError: a missing or unreadable file, vectors of another size than
            ``embedding.embedding_dim`` (naming both), a damaged line (naming it), or more
            tokens than embedding rows.
    """
    if len(vocab_tokens) > embedding.num_embeddings:
        raise UserError(
            f"{len(vocab_tokens)} vocabulary tokens but the embedding has only "
            f"{embedding.num_embeddings} rows"
        )
    rows = {
        index: token
        for index, token in enumerate(vocab_tokens)
        if index != embedding.padding_idx and token not in keep and not is_entity_marker(token)
    }
    wanted = set(rows.values()) | {token.lower() for token in rows.values()}
    vectors = read_word_vectors(path, embedding.embedding_dim, wanted)
    found = {
        index: vector
        for index, token in rows.items()
        if (vector := vectors.get(token, vectors.get(token.lower()))) is not None
    }
    if found:
        weight = embedding.weight
        with torch.no_grad():  # one copy to the embedding's device
            weight[list(found)] = torch.tensor(
                list(found.values()), dtype=weight.dtype, device=weight.device
            )
    return len(found)


def read_word_vectors(
    path: str | Path, dim: int, wanted: Collection[str]
) -> dict[str, list[float]]:
    """The vectors of the ``wanted`` words in the file (the first of a repeated word).

    Raises:
        UserError: as ``load_word_vectors`` says.
    """
    path = Path(path)
    vectors: dict[str, list[float]] = {}
    checked = False  # whether the file's vector size has been compared with ``dim``
    for number, fields in _lines(path):
        if number == 1 and len(fields) == 2 and all(f.isdigit() for f in fields):
            _check_size(path, int(fields[1]), dim)  # word2vec's header: "count dim"
            checked = True
            continue
        if len(fields) - 1 != dim and not _is_spaced_word(fields, dim):
            if not checked:
                _check_size(path, len(fields) - 1, dim)
            raise UserError(
                f"{path}, line {number}: {len(fields) - 1} values where the file's vectors have "
                f"{dim}; the line is damaged: mend or remove it"
            )
        checked = True
        word = " ".join(fields[:-dim])
        if word not in wanted or word in vectors:
            continue
        try:
            vectors[word] = [float(value) for value in fields[-dim:]]
        except ValueError:
            raise UserError(f"{path}, line {number}: a value of {word!r} is not a number") from None
    return vectors


def _lines(path: Path) -> Iterator[tuple[int, list[str]]]:
    """``(line number, fields)`` of every non-blank line.

    Raises:
        UserError: a missing or unreadable file, or a line that is not UTF-8.
    """
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        raise UserError(
            f"word vectors file not found: {path}; check --model.word_vectors"
        ) from None
    except OSError as error:
        raise UserError(f"cannot read the word vectors file {path}: {error.strerror}") from None
    with handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError as error:
                raise UserError(
                    f"{path}, line {number}: not UTF-8 ({error.reason}); word vectors are read as "
                    "UTF-8 text (a binary word2vec file must be saved as text first)"
                ) from None
            if line.strip():
                yield number, line.rstrip(" ").split(" ")


def _check_size(path: Path, size: int, dim: int) -> None:
    """Refuse a file whose vectors have ``size`` values for an embedding of ``dim``."""
    if size != dim:
        raise UserError(
            f"{path} holds {size}-dimensional vectors but the reader's embedding_dim is {dim}; "
            f"set --model.embedding_dim {size} or use a file of {dim}-dimensional vectors"
        )


def _is_spaced_word(fields: list[str], dim: int) -> bool:
    """True for a line whose word itself contains spaces (a few exist in GloVe 840B).

    Such a line has more than ``dim + 1`` fields and its second field is not a number; a line
    of a file with larger vectors has a number there.
    """
    if len(fields) <= dim + 1:
        return False
    try:
        float(fields[1])
    except ValueError:
        return True
    return False
