"""Word vectors trained on a processed dataset's train split only (word2vec, by ``gensim``).

What a reader may initialise its embeddings with (``--model.word_vectors``) without seeing
the validation or test text: ``train_word_vectors`` reads the train split's documents and
queries (each story's document once, each distinct query once: a story gives one example per
blanked entity, all with the same document), trains word2vec and writes the word2vec text
format (a ``count dim`` header, then ``word v1 ... vd`` a line), which ``nn/word_vectors.py``
reads.

Entity markers and ``@placeholder`` are trained as one shared token, ``ENTITY_TOKEN``, and
left out of the file. Their numbers are given per document (``@entity3`` of one story has
nothing to do with ``@entity3`` of another), so a vector per number would mean nothing, and a
reader keeps its own marker embeddings anyway; but where an entity stood is worth keeping:
"visited" is learnt next to "an entity", not next to the word after it.

``gensim`` is an optional extra (``pip install 'attentive-reader[vectors]'``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from attentive_reader.common.errors import UserError
from attentive_reader.common.fileio import replacing
from attentive_reader.common.markers import PLACEHOLDER, is_entity_marker
from attentive_reader.corpus.records import load_split

#: What every entity marker and the placeholder are while training (not written out).
ENTITY_TOKEN = "@entity"
Algorithm = Literal["skipgram", "cbow"]
#: Rows read from the dataset at a time.
READ_ROWS = 1000


@dataclass(frozen=True)
class VectorsSummary:
    """What ``train_word_vectors`` did.

    Attributes:
        output: the vectors file written.
        words: words in it.
        dim: values per vector.
        sentences: documents and queries trained on.
        tokens: their tokens.
    """

    output: Path
    words: int
    dim: int
    sentences: int
    tokens: int


def training_sentences(data: str | Path) -> list[list[str]]:
    """The train split's documents (one per story) and distinct queries, as token lists,
    entity markers and ``@placeholder`` replaced by ``ENTITY_TOKEN``.

    Raises:
        UserError: ``data`` is not a processed dataset, or has no train split.
    """
    train = load_split(Path(data), "train").select_columns(["story_id", "context", "query"])
    stories: set[str] = set()
    queries: set[tuple[str, ...]] = set()
    sentences: list[list[str]] = []
    for rows in train.iter(batch_size=READ_ROWS):
        for story, context, query in zip(rows["story_id"], rows["context"], rows["query"]):
            if story not in stories:
                stories.add(story)
                sentences.append(_shared_markers(context))
            tokens = _shared_markers(query)
            if tuple(tokens) not in queries:
                queries.add(tuple(tokens))
                sentences.append(tokens)
    return sentences


def _shared_markers(tokens: Sequence[str]) -> list[str]:
    return [ENTITY_TOKEN if t == PLACEHOLDER or is_entity_marker(t) else t for t in tokens]


def train_word_vectors(
    data: str | Path,
    output: str | Path,
    *,
    dim: int = 100,
    epochs: int = 5,
    window: int = 5,
    min_count: int = 5,
    algorithm: Algorithm = "skipgram",
    workers: int = 1,
    seed: int = 0,
) -> VectorsSummary:
    """Train word2vec on the train split of ``data`` and write its word vectors to ``output``.

    Args:
        data: a processed dataset directory.
        output: the vectors file (word2vec text format), written whole or not at all.
        dim: values per vector (the reader's ``embedding_dim``).
        epochs: passes over the sentences.
        window: words on each side that count as a word's context.
        min_count: words seen fewer times get no vector.
        algorithm: ``skipgram`` (predict the context from the word) or ``cbow``.
        workers: training threads; with 1, a seed gives the same vectors every run.
        seed: the seed of the initial vectors and the sampling.

    Raises:
        UserError: gensim is not installed, the dataset is not one, or its train split has
            no word seen ``min_count`` times.
    """
    try:
        from gensim.models import Word2Vec
    except ImportError:
        raise UserError(
            "training word vectors needs gensim: pip install 'attentive-reader[vectors]'"
        ) from None
    sentences = training_sentences(data)
    tokens = sum(len(sentence) for sentence in sentences)
    counts: dict[str, int] = {}
    for sentence in sentences:
        for token in sentence:
            counts[token] = counts.get(token, 0) + 1
    if not any(n >= min_count for t, n in counts.items() if t != ENTITY_TOKEN):
        raise UserError(
            f"the train split of {data} has no word seen {min_count} times ({tokens} tokens); "
            "lower --min-count or train on more stories"
        )
    model = Word2Vec(
        sentences,
        vector_size=dim,
        window=window,
        min_count=min_count,
        sg=1 if algorithm == "skipgram" else 0,
        workers=workers,
        seed=seed,
        epochs=epochs,
    )
    words = [word for word in model.wv.index_to_key if word != ENTITY_TOKEN]
    write_vectors(Path(output), words, (model.wv[word] for word in words), dim)
    return VectorsSummary(Path(output), len(words), dim, len(sentences), tokens)


def write_vectors(path: Path, words: Sequence[str], vectors: Iterator, dim: int) -> None:
    """Write ``words`` and their ``vectors`` in the word2vec text format, whole or not at all."""
    with replacing(path) as tmp, tmp.open("w", encoding="utf-8") as handle:
        handle.write(f"{len(words)} {dim}\n")
        for word, vector in zip(words, vectors):
            handle.write(word + " " + " ".join(f"{float(v):.6g}" for v in vector) + "\n")
