"""How much counting tells about the answer, measured on the generator's own ground truth.

The questions are the ones preprocessing makes (one per entity mention in a highlight whose
entity also occurs in the article), read from the mentions the generator recorded, so no spaCy
model is needed. The predictions are the evaluation's own baselines (``corpus.baselines``),
applied to the article's sequence of entity mentions.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from attentive_reader.common.markers import entity_marker
from attentive_reader.corpus.baselines import exclusive_frequency, maximum_frequency
from attentive_reader.corpus.synthetic.shapes import SyntheticStory


@dataclass(frozen=True)
class FrequencyBaselines:
    """How much counting tells about the answer, on the generator's own ground truth.

    Questions are made as the pipeline makes them: one per entity mention in a highlight whose
    entity also occurs in the article.

    Attributes:
        questions: number of questions.
        max_frequency: accuracy of predicting the most frequent entity of the article (ties
            broken by first occurrence, as ``corpus.baselines.maximum_frequency`` does).
        exclusive_frequency: the same, among entities that do not occur in the question.
        answer_is_most_frequent: fraction of questions whose answer is among the most
            frequent entities (ties included).
        chance_most_frequent: the same for a uniformly random candidate (mean of
            ``#most frequent / #candidates``): "chance" for the line above.
        mean_candidates: mean number of distinct entities in the article.
    """

    questions: int
    max_frequency: float
    exclusive_frequency: float
    answer_is_most_frequent: float
    chance_most_frequent: float
    mean_candidates: float


def ground_truth_questions(item: SyntheticStory) -> list[tuple[int, tuple[int, ...]]]:
    """``(answer entity, entities of the rest of the question)`` for each cloze question."""
    in_article = {m.entity for m in item.article_mentions}
    questions = []
    for mentions in item.highlight_mentions:
        for i, mention in enumerate(mentions):
            if mention.entity in in_article:
                others = tuple(m.entity for j, m in enumerate(mentions) if j != i)
                questions.append((mention.entity, others))
    return questions


def frequency_baselines(stories: Iterable[SyntheticStory]) -> FrequencyBaselines:
    """Measure the frequency baselines on the generator's ground truth (no spaCy needed).

    Entity ``i`` is written as the marker ``@entity{i}``: the context is the article's
    sequence of mentions, the candidates its entities by first occurrence, the query the
    question's other entities.

    Raises:
        ValueError: if no story has a highlight entity that occurs in its article.
    """
    n = max_hits = exclusive_hits = among_top = 0
    chance = candidates_total = 0.0
    for item in stories:
        context = [entity_marker(m.entity) for m in item.article_mentions]
        counts = Counter(context)  # insertion order = first occurrence
        candidates = list(counts)
        top = max(counts.values(), default=0)
        top_set = {marker for marker, count in counts.items() if count == top}
        for answer, others in ground_truth_questions(item):
            marker = entity_marker(answer)
            query = [entity_marker(e) for e in others]
            n += 1
            max_hits += maximum_frequency(context, candidates) == marker
            exclusive_hits += exclusive_frequency(context, query, candidates) == marker
            among_top += marker in top_set
            chance += len(top_set) / len(counts)
            candidates_total += len(counts)
    if n == 0:
        raise ValueError("no questions: the stories have no highlight entity in the article")
    return FrequencyBaselines(
        questions=n,
        max_frequency=max_hits / n,
        exclusive_frequency=exclusive_hits / n,
        answer_is_most_frequent=among_top / n,
        chance_most_frequent=chance / n,
        mean_candidates=candidates_total / n,
    )
