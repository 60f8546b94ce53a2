"""The vocabulary: token <-> id, with a fixed block of ids for the entity markers.

Layout (shared by every reader): id 0 ``<pad>``, 1 ``<unk>``, 2 ``@placeholder``, then
``num_entities`` ids for ``@entity0 .. @entity{E-1}`` (token id ``entity_offset + k``), then
the words, most frequent first. Because the entity block is fixed, a reader's output layer
indexes entity ``k`` directly, and permuting entity ids is a lookup in that block.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from attentive_reader.common.markers import (
    PLACEHOLDER,
    entity_index,
    entity_marker,
    is_entity_marker,
)

PAD_TOKEN = "<pad>"
UNK_TOKEN = "<unk>"
SPECIAL_TOKENS = (PAD_TOKEN, UNK_TOKEN, PLACEHOLDER)
# The entity block a reader gets unless its data needs more: DeepMind's CNN questions number
# entities up to @entity526, and any document read later is mapped into the block
# (data/entity_block.py), so one size serves real news.
DEFAULT_NUM_ENTITIES = 600


class EntityOutOfRange(ValueError):
    """An ``@entityN`` marker whose number is not below the vocabulary's ``num_entities``."""

    def __init__(self, marker: str, num_entities: int) -> None:
        super().__init__(
            f"entity marker {marker} does not fit the vocabulary's {num_entities} entity ids"
        )
        self.marker = marker
        self.index = entity_index(marker)
        self.num_entities = num_entities


class Vocabulary:
    """Token <-> id mapping with specials, an entity block and words.

    Args:
        words: the word tokens, in id order (no specials, no entity markers, no duplicates).
        num_entities: the size of the entity block (``@entity0 .. @entity{E-1}``).

    Raises:
        ValueError: on a non-positive ``num_entities``, a duplicate word, or a word that is a
            special token or an entity marker.
    """

    PAD, UNK, PLACEHOLDER = 0, 1, 2
    entity_offset: int = 3

    def __init__(self, words: Sequence[str], num_entities: int) -> None:
        if num_entities < 1:
            raise ValueError(f"num_entities must be at least 1, got {num_entities}")
        words = list(words)
        reserved = [w for w in words if w in SPECIAL_TOKENS or is_entity_marker(w)]
        if reserved:
            raise ValueError(
                f"words may not contain special tokens or entity markers, got {reserved[:5]}"
            )
        if len(set(words)) != len(words):
            duplicates = [w for w, c in Counter(words).items() if c > 1]
            raise ValueError(f"words must be distinct, got duplicates {duplicates[:5]}")
        self.num_entities = num_entities
        self.words = words
        self.tokens: list[str] = [
            *SPECIAL_TOKENS,
            *(entity_marker(k) for k in range(num_entities)),
            *words,
        ]
        self._index = {token: i for i, token in enumerate(self.tokens)}

    @classmethod
    def build(
        cls,
        token_lists: Iterable[Sequence[str]],
        max_words: int = 50_000,
        num_entities: int = DEFAULT_NUM_ENTITIES,
    ) -> Vocabulary:
        """The vocabulary of the ``max_words`` most frequent words in ``token_lists``.

        Entity markers and special tokens are not counted (they have their own ids). Ties in
        frequency are broken alphabetically, so the result does not depend on input order.

        Args:
            token_lists: token sequences (contexts and queries of the train split).
            max_words: how many words to keep; the rest map to ``<unk>``.
            num_entities: the size of the entity block.
        """
        counts: Counter[str] = Counter()
        for tokens in token_lists:
            counts.update(tokens)
        return cls.from_counts(counts, max_words=max_words, num_entities=num_entities)

    @classmethod
    def from_counts(
        cls,
        counts: Mapping[str, int],
        max_words: int = 50_000,
        num_entities: int = DEFAULT_NUM_ENTITIES,
    ) -> Vocabulary:
        """The vocabulary of the ``max_words`` most frequent words of ``counts`` (token ->
        count); the same rules as ``build``."""
        if max_words < 0:
            raise ValueError(f"max_words must be non-negative, got {max_words}")
        counts = Counter(counts)
        for token in list(counts):
            if token in SPECIAL_TOKENS or is_entity_marker(token):
                del counts[token]
        ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        return cls([word for word, _ in ranked[:max_words]], num_entities)

    def __len__(self) -> int:
        return len(self.tokens)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Vocabulary)
            and self.num_entities == other.num_entities
            and self.words == other.words
        )

    def __repr__(self) -> str:
        return f"Vocabulary(size={len(self)}, num_entities={self.num_entities})"

    def entity_id(self, k: int) -> int:
        """The token id of ``@entity{k}``."""
        if not 0 <= k < self.num_entities:
            raise EntityOutOfRange(entity_marker(k), self.num_entities)
        return self.entity_offset + k

    def token_id(self, token: str) -> int:
        """The id of one token (``<unk>`` for unknown words).

        Raises:
            EntityOutOfRange: for an entity marker beyond the entity block.
        """
        index = self._index.get(token)
        if index is not None:
            return index
        if is_entity_marker(token):
            raise EntityOutOfRange(token, self.num_entities)
        return self.UNK

    def encode(self, tokens: Sequence[str]) -> list[int]:
        """Token ids of ``tokens`` (see ``token_id``).

        Raises:
            EntityOutOfRange: for an entity marker beyond the entity block.
        """
        ids = [self._index.get(token, -1) for token in tokens]  # the hot path: one dict lookup
        if -1 in ids:
            ids = [self.token_id(token) if i == -1 else i for token, i in zip(tokens, ids)]
        return ids

    def decode(self, ids: Iterable[int]) -> list[str]:
        """Tokens of ``ids`` (accepts ints or a 1-d tensor / array)."""
        return [self.tokens[int(i)] for i in ids]

    def to_dict(self) -> dict:
        """A JSON-able form (also what checkpoints store)."""
        return {"num_entities": self.num_entities, "words": list(self.words)}

    @classmethod
    def from_dict(cls, data: dict) -> Vocabulary:
        """Inverse of ``to_dict``."""
        return cls(data["words"], data["num_entities"])

    def save(self, path: str | Path) -> None:
        """Write the vocabulary as JSON."""
        Path(path).write_text(json.dumps(self.to_dict(), ensure_ascii=False), encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> Vocabulary:
        """Read a vocabulary written by ``save``."""
        return cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))
