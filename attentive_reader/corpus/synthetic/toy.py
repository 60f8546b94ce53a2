"""A small generated cloze task whose answer depends on reading the right sentence.

Each context is a handful of sentences ``@entityA <relation> @entityB``, with filler words.
The query is ``@entityA <relation> @placeholder``: exactly one sentence has that subject and
relation, and its object is the answer. Every entity fills exactly two of the sentence slots,
so counting entities gives no hint (the most frequent entity is the answer only by chance),
and relations repeat across sentences (at least one distractor shares the query's relation
with another subject). A reader must match the query against the right sentence: an
attention reader solves it, the Uniform Reader (no attention) cannot.

It is the synthetic corpus's token-level shape: where ``story.py`` writes news stories that
``preprocess`` anonymizes, this task makes anonymized examples directly (there is nothing for
NER to find). ``write_toy_dataset`` stores it through ``examples.write_examples`` as a
processed dataset directory with the normal ``manifest.json``, usable as ``--data.path``.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from attentive_reader.common.markers import PLACEHOLDER, entity_marker
from attentive_reader.corpus.records import SPLITS, ClozeExample
from attentive_reader.corpus.synthetic.examples import write_examples

RELATIONS = ("visited", "praised", "sued", "hired", "thanked", "warned", "joined", "called")
FILLERS = ("yesterday", "reportedly", "again", "quietly", "in", "public", "officials", "said")
NAMES = ("Ada", "Bo", "Cy", "Di", "Ed", "Flo", "Gus", "Hal", "Ivy", "Jo", "Kit", "Lu")


def toy_example(
    rng: np.random.Generator,
    example_id: str,
    num_entities: int = 6,
    num_relations: int = 4,
    max_fillers: int = 2,
) -> ClozeExample:
    """One toy example (``num_entities`` sentences, each entity in exactly two slots).

    Args:
        rng: the random source.
        example_id: the example's id (also its story id).
        num_entities: entities per example (at least 3); there are as many sentences.
        num_relations: how many relation words are drawn from (at least 2; fewer than
            ``num_entities`` so that relations repeat).
        max_fillers: up to this many filler words after each sentence's object.
    """
    if not 3 <= num_entities <= len(NAMES):
        raise ValueError(f"num_entities must be in 3..{len(NAMES)}, got {num_entities}")
    if not 2 <= num_relations <= len(RELATIONS):
        raise ValueError(f"num_relations must be in 2..{len(RELATIONS)}, got {num_relations}")
    # Each entity fills two slots; slots are paired into (subject, object) with no
    # self-relation.
    while True:
        slots = rng.permutation(np.repeat(np.arange(num_entities), 2))
        pairs = slots.reshape(-1, 2)
        if (pairs[:, 0] != pairs[:, 1]).all():
            break
    # Relations: a subject never uses one relation twice, so (subject, relation) is unique.
    triples: list[tuple[int, int, int]] = []
    for subject, obj in pairs:
        used = {r for s, r, _ in triples if s == subject}
        relation = int(rng.choice([r for r in range(num_relations) if r not in used]))
        triples.append((int(subject), relation, int(obj)))
    # Prefer a query whose relation also appears with another subject (a distractor).
    shared = [t for t in triples if any(r == t[1] and s != t[0] for s, r, _ in triples)]
    pool = shared or triples
    subject, relation, answer = pool[int(rng.integers(len(pool)))]
    # Number entities by first occurrence in the context, as preprocessing does.
    order: dict[int, int] = {}
    for s, _, o in triples:
        order.setdefault(s, len(order))
        order.setdefault(o, len(order))
    context: list[str] = []
    for s, r, o in triples:
        fillers = rng.choice(FILLERS, size=int(rng.integers(max_fillers + 1))).tolist()
        context += [entity_marker(order[s]), RELATIONS[r], entity_marker(order[o]), *fillers, "."]
    query = (entity_marker(order[subject]), RELATIONS[relation], PLACEHOLDER)
    markers = tuple(entity_marker(k) for k in range(num_entities))
    return ClozeExample(
        id=example_id,
        story_id=example_id,
        context=tuple(context),
        query=query,
        answer=entity_marker(order[answer]),
        candidates=markers,
        entities={m: NAMES[k] for k, m in enumerate(markers)},
    )


def write_toy_dataset(
    directory: str | os.PathLike,
    num_train: int = 2000,
    num_validation: int = 200,
    num_test: int = 200,
    num_entities: int = 6,
    num_relations: int = 4,
    max_fillers: int = 2,
    seed: int = 0,
) -> Path:
    """Write the toy task as a processed dataset directory (with the normal manifest).

    Args:
        directory: where to write (created; an existing dataset there is replaced).
        num_train: train examples.
        num_validation: validation examples.
        num_test: test examples.
        num_entities: entities (and sentences) per example.
        num_relations: relation words used.
        max_fillers: filler words per sentence, at most.
        seed: the random seed (same seed, same dataset).

    Returns:
        The directory.
    """
    rng = np.random.default_rng(seed)
    sizes = dict(zip(SPLITS, (num_train, num_validation, num_test)))
    splits = {
        split: [
            toy_example(rng, f"toy-{split}-{i}", num_entities, num_relations, max_fillers)
            for i in range(size)
        ]
        for split, size in sizes.items()
    }
    options = {
        "num_entities": num_entities,
        "num_relations": num_relations,
        "max_fillers": max_fillers,
        "seed": seed,
    }
    write_examples(directory, splits, source="toy", options=options)
    return Path(directory)
