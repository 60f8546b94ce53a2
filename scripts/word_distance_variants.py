#!/usr/bin/env python
"""What moves the word-distance baseline? Readings of its definition, each with its interval.

Hermann et al. (2015, section 4) define it in two sentences: the placeholder is aligned with
each candidate entity of the document, and the score sums "the distances of every word in Q
to their nearest aligned word in D, where alignment is defined by matching words either
directly or as aligned by the coreference system", with a maximum penalty per word m = 8.
``attentive_reader.corpus.baselines.word_distance`` implements that reading
(docs/anonymization.md, "The word-distance baseline"); this script scores the others on a
preprocessed dataset, each as the expected accuracy under a random tie-break (%, ± half the
95% cluster-bootstrap interval over documents), with its change from the definition as
implemented (± the paired interval: the same documents drawn for both)::

    python scripts/word_distance_variants.py data/dailymail_test

Variants (each one change from the definition as implemented):

- ``query names through the grouping``: a context entity's name left as plain words in the
  query (``eval.anonymization`` counts these queries) is read as that entity's marker, so
  it aligns with any mention of the entity;
- ``no alignment through the grouping``: the query's other markers match nothing (what the
  score would be without coreference);
- ``stems``: words are compared by a crude suffix-stripping stem ("resigned" = "resigns");
- ``no punctuation in the query`` / ``... in query and document``: punctuation tokens left
  out (offsets close up);
- ``cap 4`` / ``cap 16``: another maximum penalty per word.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from attentive_reader.common.errors import UserError
from attentive_reader.common.markers import PLACEHOLDER, is_entity_marker
from attentive_reader.corpus.baselines import expected_credit
from attentive_reader.corpus.records import ClozeExample, load_dataset
from attentive_reader.eval.anonymization import cluster_interval

Transform = Callable[[ClozeExample], ClozeExample]
_NOTHING = "@@no-match"  # a token no context holds


def _is_punct(token: str) -> bool:
    return not any(c.isalnum() for c in token) and token != PLACEHOLDER


def _stem(token: str) -> str:
    if is_entity_marker(token) or token == PLACEHOLDER or len(token) <= 4:
        return token
    for suffix in ("ing", "ed", "es", "ly", "s", "'s"):
        if token.endswith(suffix) and len(token) - len(suffix) >= 3:
            return token[: -len(suffix)]
    return token


def _names_in_query(ex: ClozeExample) -> ClozeExample:
    """Plain words of the query that are a context entity's name become its marker."""
    names: list[tuple[tuple[str, ...], str]] = []
    for marker in ex.candidates:
        words = tuple(ex.entities.get(marker, "").lower().split())
        if words:
            names.append((words, marker))
        if len(words) >= 2 and len(words[-1]) > 2:
            names.append((words[-1:], marker))  # a surname: "Obama" of "Barack Obama"
    names.sort(key=lambda item: -len(item[0]))
    query, out, i = list(ex.query), [], 0
    while i < len(query):
        hit = next((n for n in names if tuple(query[i : i + len(n[0])]) == n[0]), None)
        out.append(hit[1] if hit else query[i])
        i += len(hit[0]) if hit else 1
    return replace(ex, query=tuple(out))


def _no_alignment(ex: ClozeExample) -> ClozeExample:
    return replace(ex, query=tuple(_NOTHING if is_entity_marker(t) else t for t in ex.query))


def _stems(ex: ClozeExample) -> ClozeExample:
    return replace(ex, context=tuple(map(_stem, ex.context)), query=tuple(map(_stem, ex.query)))


def _query_punctuation_out(ex: ClozeExample) -> ClozeExample:
    return replace(ex, query=tuple(t for t in ex.query if not _is_punct(t)))


def _punctuation_out(ex: ClozeExample) -> ClozeExample:
    return replace(
        _query_punctuation_out(ex), context=tuple(t for t in ex.context if not _is_punct(t))
    )


VARIANTS: tuple[tuple[str, Transform | None, int], ...] = (
    ("the definition as implemented", None, 8),
    ("query names through the grouping", _names_in_query, 8),
    ("no alignment through the grouping", _no_alignment, 8),
    ("stems", _stems, 8),
    ("no punctuation in the query", _query_punctuation_out, 8),
    ("no punctuation in query and document", _punctuation_out, 8),
    ("cap 4", None, 4),
    ("cap 16", None, 16),
)


def variant_scores(examples: Sequence[ClozeExample]) -> list[tuple[str, float, float, float]]:
    """Each variant's (name, expected accuracy %, half-width of its interval, half-width of
    the interval of its change from the definition as implemented, both in points). The
    change's interval is paired: the same bootstrap draws of documents score both."""
    stories = [ex.story_id for ex in examples]
    rows, base = [], None
    for name, transform, cap in VARIANTS:
        credits = [
            expected_credit("word_distance", transform(ex) if transform else ex, max_penalty=cap)
            for ex in examples
        ]
        base = credits if base is None else base
        share = 100.0 * sum(credits) / len(credits) if credits else 0.0
        change = [c - b for c, b in zip(credits, base)]
        rows.append(
            (
                name,
                round(share, 1),
                cluster_interval(credits, stories),
                cluster_interval(change, stories),
            )
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument(
        "dataset", type=Path, help="a folder written by attentive-reader preprocess"
    )
    args = parser.parse_args(argv)
    try:
        loaded = load_dataset(args.dataset)
    except UserError as error:
        print(f"error: {error}")
        return 2
    examples = [ClozeExample.from_row(row) for split in loaded for row in loaded[split]]
    print(f"{args.dataset}: {len(examples)} questions (word distance, ties at random, ± 95%)")
    print("| variant | word distance (%) | change (paired ±) |")
    print("| --- | ---: | ---: |")
    rows = variant_scores(examples)
    for name, share, half, change_half in rows:
        print(f"| {name} | {share} ± {half} | {share - rows[0][1]:+.1f} ± {change_half} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
