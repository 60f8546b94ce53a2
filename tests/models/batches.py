"""Tiny tensor-level ``ClozeBatch`` factories for the reader tests (no vocabulary, no files).

Token ids follow the vocabulary layout: 0 padding, 1 unknown, 2 ``@placeholder``, entity ``k``
is token ``ENTITY_OFFSET + k``, words come after the entity block.
"""

from __future__ import annotations

from dataclasses import replace

import torch

from attentive_reader.data.batching import ClozeBatch

PAD, PLACEHOLDER, ENTITY_OFFSET = 0, 2, 3


def _pad(rows: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(row) for row in rows)
    ids = torch.zeros(len(rows), width, dtype=torch.long)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = torch.tensor(row)
    return ids, ids != PAD


def make_batch(
    contexts: list[list[int]], queries: list[list[int]], answers: list[int], num_entities: int
) -> ClozeBatch:
    """A padded batch from token-id lists; candidates are the entities present in each context."""
    context, context_mask = _pad(contexts)
    query, query_mask = _pad(queries)
    candidates = torch.zeros(len(contexts), num_entities, dtype=torch.bool)
    for i, row in enumerate(contexts):
        for token in row:
            if ENTITY_OFFSET <= token < ENTITY_OFFSET + num_entities:
                candidates[i, token - ENTITY_OFFSET] = True
    for i, answer in enumerate(answers):
        assert candidates[i, answer], "the answer must occur in the context"
    return ClozeBatch(
        context=context,
        context_mask=context_mask,
        query=query,
        query_mask=query_mask,
        candidates=candidates,
        answer=torch.tensor(answers, dtype=torch.long),
        ids=[f"ex{i}" for i in range(len(contexts))],
        truncated=torch.zeros(len(contexts), dtype=torch.bool),
    )


def random_batch(
    num_examples: int = 32,
    vocab_size: int = 60,
    num_entities: int = 10,
    context_lengths: tuple[int, int] = (8, 20),
    query_lengths: tuple[int, int] = (3, 7),
    seed: int = 0,
) -> ClozeBatch:
    """Random contexts with 3-6 distinct entities each and a random answer among them.

    Lengths vary (so every batch has padding in both context and query); the answer has no
    relation to the text, so a reader can only get it right by memorising the examples.
    """
    generator = torch.Generator().manual_seed(seed)
    first_word = ENTITY_OFFSET + num_entities

    def randint(low: int, high: int) -> int:  # inclusive
        return int(torch.randint(low, high + 1, (1,), generator=generator))

    contexts, queries, answers = [], [], []
    for _ in range(num_examples):
        length = randint(*context_lengths)
        context = [randint(first_word, vocab_size - 1) for _ in range(length)]
        entities = torch.randperm(num_entities, generator=generator)[: randint(3, 6)].tolist()
        slots = torch.randperm(length, generator=generator)[: len(entities)].tolist()
        for entity, slot in zip(entities, slots):
            context[slot] = ENTITY_OFFSET + entity
        query = [randint(first_word, vocab_size - 1) for _ in range(randint(*query_lengths))]
        query[randint(0, len(query) - 1)] = PLACEHOLDER
        contexts.append(context)
        queries.append(query)
        answers.append(entities[randint(0, len(entities) - 1)])
    return make_batch(contexts, queries, answers, num_entities)


def sentence_task_batch(
    num_examples: int,
    num_sentences: int = 4,
    filler: int = 3,
    num_keys: int = 12,
    num_fillers: int = 20,
    num_entities: int = 8,
    seed: int = 0,
) -> ClozeBatch:
    """A cloze task that needs attention: the answer is the entity of the sentence the query names.

    Each context is ``num_sentences`` sentences ``key w w w @entityX``, with distinct keys and
    distinct entities; the query is ``key w @placeholder`` for one of the keys, and the
    answer is that sentence's entity. Reading the whole context uniformly does not tell which
    entity to pick (all are equally present), attending to the right sentence does.
    """
    generator = torch.Generator().manual_seed(seed)
    first_key = ENTITY_OFFSET + num_entities
    first_filler = first_key + num_keys
    contexts, queries, answers = [], [], []
    for _ in range(num_examples):
        keys = (first_key + torch.randperm(num_keys, generator=generator)[:num_sentences]).tolist()
        entities = torch.randperm(num_entities, generator=generator)[:num_sentences].tolist()
        context: list[int] = []
        for key, entity in zip(keys, entities):
            words = first_filler + torch.randint(num_fillers, (filler,), generator=generator)
            context += [key, *words.tolist(), ENTITY_OFFSET + entity]
        target = int(torch.randint(num_sentences, (1,), generator=generator))
        word = first_filler + int(torch.randint(num_fillers, (1,), generator=generator))
        contexts.append(context)
        queries.append([keys[target], word, PLACEHOLDER])
        answers.append(entities[target])
    return make_batch(contexts, queries, answers, num_entities)


def vocab_size_for_sentence_task(
    num_keys: int = 12, num_fillers: int = 20, num_entities: int = 8
) -> int:
    """The vocabulary size ``sentence_task_batch`` needs with these arguments."""
    return ENTITY_OFFSET + num_entities + num_keys + num_fillers


def select(batch: ClozeBatch, rows: list[int]) -> ClozeBatch:
    """The given examples, trimmed to their own longest context and query."""
    n = int(batch.context_mask[rows].sum(1).max())
    m = int(batch.query_mask[rows].sum(1).max())
    return ClozeBatch(
        context=batch.context[rows, :n],
        context_mask=batch.context_mask[rows, :n],
        query=batch.query[rows, :m],
        query_mask=batch.query_mask[rows, :m],
        candidates=batch.candidates[rows],
        answer=batch.answer[rows],
        ids=[batch.ids[i] for i in rows],
        truncated=batch.truncated[rows],
    )


def relabel(batch: ClozeBatch, permutation: torch.Tensor) -> ClozeBatch:
    """Entity ``k`` becomes entity ``permutation[k]`` everywhere in the batch (tokens,
    candidates, answer); ``permutation`` covers the whole entity block."""
    num_entities = len(permutation)

    def ids(tokens: torch.Tensor) -> torch.Tensor:
        k = tokens - ENTITY_OFFSET
        entity = (k >= 0) & (k < num_entities)
        return torch.where(
            entity, ENTITY_OFFSET + permutation[k.clamp(0, num_entities - 1)], tokens
        )

    candidates = torch.zeros_like(batch.candidates)
    candidates[:, permutation] = batch.candidates
    return replace(
        batch,
        context=ids(batch.context),
        query=ids(batch.query),
        candidates=candidates,
        answer=permutation[batch.answer],
    )


def alone(batch: ClozeBatch, i: int, *, min_query: int = 0) -> ClozeBatch:
    """Example ``i`` of ``batch`` as a batch of one, without padding (its query keeps at least
    ``min_query`` positions: an all-padding query still has a step to read)."""
    n = int(batch.context_mask[i].sum())
    m = max(int(batch.query_mask[i].sum()), min_query)
    return ClozeBatch(
        context=batch.context[i : i + 1, :n],
        context_mask=batch.context_mask[i : i + 1, :n],
        query=batch.query[i : i + 1, :m],
        query_mask=batch.query_mask[i : i + 1, :m],
        candidates=batch.candidates[i : i + 1],
        answer=batch.answer[i : i + 1],
        ids=batch.ids[i : i + 1],
        truncated=batch.truncated[i : i + 1],
    )
