"""A document's entity markers fitted into a reader's block of entity ids.

A reader answers over a fixed block of ``e`` entity ids (``@entity0 .. @entity{e-1}``). At
evaluation and answering time an example may number its entities beyond the block (another
corpus, a long article); it is never refused. The rule, applied alike to stored examples
(evaluation, heatmaps) and to documents (``Reader.answer``):

- every marker number of the context and the query is below ``e``: the example is read as
  stored (the identity);
- else its distinct entities are renumbered ``0, 1, ...`` by first occurrence in the
  context, the entities named only in the query after them;
- with more distinct entities than ``e``, the block keeps the ``e`` entities that occur most
  often in the context (ties: the one that occurs first); the others are read as ``<unk>``
  and are no candidates, and an example whose answer is one of them cannot be answered: its
  answer becomes ``UNANSWERABLE`` and it counts wrong.

Context, query, candidates, answer and (through ``EntityFit.stored_number``) the markers
shown to users are relabelled consistently. Training data is never relabelled: it must fit
the block (``ClozeDataModule`` checks).

Encoded ids hold a marker beyond the block as ``-1 - k`` (``beyond_block_id``): the
vocabulary has no id for it, and ``fit_encoded`` needs its number.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from attentive_reader.common.markers import entity_index, is_entity_marker
from attentive_reader.corpus.records import ClozeExample
from attentive_reader.data.vocab import EntityOutOfRange, Vocabulary

if TYPE_CHECKING:  # batching loads torch; heatmap pages use this module without it
    from attentive_reader.data.batching import EncodedExample

# The answer id of an example whose answer the block left out.
UNANSWERABLE = -1


@dataclass(frozen=True)
class EntityFit:
    """How one example's entity numbers map into a reader's block.

    Attributes:
        mapping: stored entity number -> the reader's, for the entities the block keeps;
            ``None`` for the identity (every number fits).
        dropped: how many distinct entities the block left out (read as ``<unk>``).
    """

    mapping: Mapping[int, int] | None = None
    dropped: int = 0

    @property
    def relabelled(self) -> bool:
        """Whether the example is read relabelled (not as stored)."""
        return self.mapping is not None

    def reader_number(self, k: int) -> int | None:
        """The reader's number of stored entity ``k`` (``None``: left out of the block)."""
        return k if self.mapping is None else self.mapping.get(k)

    def stored_number(self, r: int) -> int:
        """The stored entity number that the reader reads as ``r``."""
        if self.mapping is None:
            return r
        return {new: k for k, new in self.mapping.items()}[r]

    def answer_id(self, k: int) -> int:
        """The reader's id of the stored answer ``k``; ``UNANSWERABLE`` when left out."""
        r = self.reader_number(k)
        return UNANSWERABLE if r is None else r


IDENTITY = EntityFit()


def fit_entities(context: Sequence[int], query: Iterable[int], num_entities: int) -> EntityFit:
    """The fit of an example into a block of ``num_entities`` ids (the module's rule).

    Args:
        context: the entity number of each entity token of the context, in order.
        query: the same for the query.
        num_entities: the block's size ``e``.
    """
    query = list(query)
    if all(k < num_entities for k in (*context, *query)):
        return IDENTITY
    order = list(dict.fromkeys([*context, *query]))  # first occurrence; query-only last
    kept = order
    if len(order) > num_entities:
        counts = Counter(context)
        # A stable sort: among equal counts the first to occur stays first.
        chosen = set(sorted(order, key=lambda k: -counts[k])[:num_entities])
        kept = [k for k in order if k in chosen]
    return EntityFit({k: r for r, k in enumerate(kept)}, dropped=len(order) - len(kept))


def example_fit(example: ClozeExample, num_entities: int) -> EntityFit:
    """The fit of a stored (or just anonymized) example, from its markers."""
    return fit_entities(
        _marker_numbers(example.context), _marker_numbers(example.query), num_entities
    )


def _marker_numbers(tokens: Iterable[str]) -> list[int]:
    return [entity_index(token) for token in tokens if is_entity_marker(token)]


def beyond_block_id(k: int | np.ndarray) -> int | np.ndarray:
    """The encoded id of ``@entity{k}`` when ``k`` is beyond the vocabulary's block (also
    elementwise over an array of numbers)."""
    return -1 - k


def stored_ids(tokens: Sequence[str], vocab: Vocabulary) -> np.ndarray:
    """Token ids as the encoded columns hold them: markers beyond the block as
    ``beyond_block_id``, (t,) int64."""
    ids = []
    for token in tokens:
        try:
            ids.append(vocab.token_id(token))
        except EntityOutOfRange:
            ids.append(beyond_block_id(entity_index(token)))
    return np.array(ids, dtype=np.int64)


def fit_encoded(
    example: EncodedExample, num_entities: int, entity_offset: int = Vocabulary.entity_offset
) -> tuple[EncodedExample, EntityFit]:
    """An encoded example (full context, ids as ``stored_ids`` makes them) fitted into the
    block, and its fit; the example itself when no marker is beyond the block."""
    context = np.asarray(example.context, dtype=np.int64)  # (n,)
    query = np.asarray(example.query, dtype=np.int64)  # (m,)
    if not ((context < 0).any() or (query < 0).any()):
        return example, IDENTITY
    in_context = _id_numbers(context, entity_offset, num_entities)  # (n,) -1: a word
    in_query = _id_numbers(query, entity_offset, num_entities)  # (m,)
    fit = fit_entities(
        in_context[in_context >= 0].tolist(), in_query[in_query >= 0].tolist(), num_entities
    )
    kept = [fit.reader_number(int(k)) for k in example.candidates]
    fitted = dataclasses.replace(
        example,
        context=_fitted_ids(context, in_context, fit, entity_offset),
        query=_fitted_ids(query, in_query, fit, entity_offset),
        answer=fit.answer_id(int(example.answer)),
        candidates=np.array([r for r in kept if r is not None], dtype=np.int64),
    )
    return fitted, fit


def _id_numbers(ids: np.ndarray, offset: int, num_entities: int) -> np.ndarray:
    """The entity number of each token id (-1 for a word), (t,)."""
    numbers = np.full(len(ids), -1, dtype=np.int64)
    inside = (ids >= offset) & (ids < offset + num_entities)
    numbers[inside] = ids[inside] - offset
    beyond = ids < 0
    numbers[beyond] = beyond_block_id(ids[beyond])  # its own inverse
    return numbers


def _fitted_ids(ids: np.ndarray, numbers: np.ndarray, fit: EntityFit, offset: int) -> np.ndarray:
    """``ids`` with each entity token relabelled by ``fit`` (``<unk>`` when left out)."""
    out = ids.copy()
    for position in np.flatnonzero(numbers >= 0):
        r = fit.reader_number(int(numbers[position]))
        out[position] = Vocabulary.UNK if r is None else offset + r
    return out
