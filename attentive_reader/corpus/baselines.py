"""The non-neural baselines of Hermann et al. (2015), computed from the data alone.

Each baseline maps one anonymized cloze question (context, query, candidates) to the entity
marker it answers. They are pure functions over token sequences, so they are checked by hand
on tiny examples and need neither a vocabulary nor a model.

- **Maximum frequency**: the candidate entity seen most often in the context.
- **Exclusive frequency**: the candidate seen most often in the context among those that do
  not occur in the query (a query rarely mentions its own answer elsewhere).
- **Word distance**: align the query's ``@placeholder`` with each occurrence of a candidate in
  the context; every other query word then "expects" itself at the same offset around the
  occurrence and pays the distance to the nearest context position holding the same word,
  at most ``max_penalty`` (also what a word with no match nearby pays). A candidate scores
  the smallest sum over its occurrences; the lowest score wins.

The predictors (``maximum_frequency``, ..., ``baseline_predictor``) break ties by the
candidates' order (first occurrence in the context), so each is deterministic. That order
favours the answer, though: a highlight is usually about the story's lead entity, which is
also named first. In the DeepMind data the markers are permuted at random per document, so
a tie broken by marker there is a random one. Accuracies to compare with the published
figures are therefore *expected accuracies under a random tie-break*
(``expected_credit``, ``expected_accuracy``): a question whose answer is among the ``k``
tied best candidates counts ``1/k``.

``score_baselines`` is the one scoring of stored examples: each baseline's expected credit
per question and its first-occurrence prediction, from one pass over ``tied_best``. The
evaluation report (``eval.report``), the anonymization report (``eval.anonymization``,
``attentive-reader anonymization``) and ``attentive-reader learning`` all read their
figures from it, so they agree to the last digit.

They live in ``corpus/`` (they need neither torch nor spaCy) so that the synthetic corpus's
ground-truth baselines (``corpus.synthetic.frequency_baselines``) and the evaluation report
(``eval.report``) share one implementation.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from attentive_reader.common.checks import check_positive
from attentive_reader.common.markers import PLACEHOLDER
from attentive_reader.corpus.records import ClozeExample

BaselineName = Literal["maximum_frequency", "exclusive_frequency", "word_distance"]
BASELINES: tuple[BaselineName, ...] = (
    "maximum_frequency",
    "exclusive_frequency",
    "word_distance",
)


def _candidates_or_error(candidates: Sequence[str]) -> Sequence[str]:
    if not candidates:
        raise ValueError("a cloze question needs at least one candidate entity in its context")
    return candidates


def maximum_frequency(context: Sequence[str], candidates: Sequence[str]) -> str:
    """The candidate that occurs most often in ``context`` (ties: the earlier candidate).

    Args:
        context: the anonymized context tokens.
        candidates: the candidate markers, in order of first occurrence.

    Raises:
        ValueError: if there are no candidates.
    """
    counts = Counter(context)
    # max() keeps the first of equal keys, i.e. the earliest candidate.
    return max(_candidates_or_error(candidates), key=lambda c: counts[c])


def exclusive_frequency(
    context: Sequence[str], query: Sequence[str], candidates: Sequence[str]
) -> str:
    """The most frequent candidate among those absent from the query.

    When every candidate also occurs in the query, this falls back to ``maximum_frequency``
    (the question must still be answered, and this is what the count alone says).

    Args:
        context: the anonymized context tokens.
        query: the query tokens (with ``@placeholder``).
        candidates: the candidate markers, in order of first occurrence.
    """
    in_query = set(query)
    exclusive = [c for c in _candidates_or_error(candidates) if c not in in_query]
    return maximum_frequency(context, exclusive or candidates)


def word_distance_score(
    context: Sequence[str],
    query: Sequence[str],
    position: int,
    *,
    max_penalty: int = 8,
    window: int | None = None,
    index: dict[str, list[int]] | None = None,
) -> int:
    """The distance between the query and the context when the placeholder sits at ``position``.

    Each query word at offset ``d`` from the placeholder pays
    ``min(max_penalty, min_i |i - (position + d)|)`` over the context positions ``i`` that hold
    the same word (``max_penalty`` when there is none).

    Args:
        context: the anonymized context tokens.
        query: the query tokens, with exactly one ``@placeholder``.
        position: the context position the placeholder is aligned with.
        max_penalty: the most one query word can cost (the paper's ``m = 8``).
        window: if given, only query words within this many positions of the placeholder
            count; ``None`` counts every query word (the paper's definition).
        index: word -> sorted positions in ``context`` (computed when omitted; pass it to
            score many positions of one context cheaply).

    Raises:
        ValueError: if the query has no ``@placeholder`` or ``max_penalty`` is not positive.
    """
    check_positive(max_penalty=max_penalty)
    if PLACEHOLDER not in query:
        raise ValueError(f"the query has no {PLACEHOLDER}: {' '.join(query)!r}")
    if index is None:
        index = positions_by_word(context)
    anchor = list(query).index(PLACEHOLDER)
    total = 0
    for j, word in enumerate(query):
        offset = j - anchor
        if offset == 0 or (window is not None and abs(offset) > window):
            continue
        target = position + offset
        total += _nearest_distance(index.get(word, ()), target, max_penalty)
    return total


def _nearest_distance(positions: Sequence[int], target: int, cap: int) -> int:
    """``min(cap, min |p - target|)`` over the sorted ``positions``."""
    k = bisect.bisect_left(positions, target)
    best = cap
    if k < len(positions):
        best = min(best, positions[k] - target)
    if k > 0:
        best = min(best, target - positions[k - 1])
    return best


def positions_by_word(tokens: Sequence[str]) -> dict[str, list[int]]:
    """Word -> the sorted positions where it occurs in ``tokens``."""
    index: dict[str, list[int]] = {}
    for i, token in enumerate(tokens):
        index.setdefault(token, []).append(i)
    return index


def word_distance_scores(
    context: Sequence[str],
    query: Sequence[str],
    candidates: Sequence[str],
    *,
    max_penalty: int = 8,
    window: int | None = None,
) -> dict[str, int]:
    """Each candidate's word-distance score: the minimum over its occurrences in the context.

    A candidate that does not occur in the context scores ``max_penalty`` per counted query
    word (it cannot be aligned at all).
    """
    if PLACEHOLDER not in query:
        raise ValueError(f"the query has no {PLACEHOLDER}: {' '.join(query)!r}")
    index = positions_by_word(context)
    anchor = list(query).index(PLACEHOLDER)
    counted = sum(
        1
        for j in range(len(query))
        if j != anchor and (window is None or abs(j - anchor) <= window)
    )
    scores = {}
    for candidate in candidates:
        occurrences = index.get(candidate, [])
        scores[candidate] = min(
            (
                word_distance_score(
                    context, query, p, max_penalty=max_penalty, window=window, index=index
                )
                for p in occurrences
            ),
            default=max_penalty * counted,
        )
    return scores


def word_distance(
    context: Sequence[str],
    query: Sequence[str],
    candidates: Sequence[str],
    *,
    max_penalty: int = 8,
    window: int | None = None,
) -> str:
    """The candidate with the lowest word-distance score (ties: the earlier candidate)."""
    scores = word_distance_scores(
        context, query, _candidates_or_error(candidates), max_penalty=max_penalty, window=window
    )
    return min(candidates, key=lambda c: scores[c])


def tied_best(
    name: BaselineName,
    example: ClozeExample,
    *,
    max_penalty: int = 8,
    window: int | None = None,
) -> tuple[str, ...]:
    """Every candidate the baseline ``name`` scores best on ``example`` (ties all kept).

    The deterministic predictor (``baseline_predictor``) returns the first of them.

    Args:
        name: the baseline.
        example: the cloze question.
        max_penalty: word distance's cap per query word.
        window: word distance's window (``None``: every query word).

    Returns:
        The best-scoring candidates, in the candidates' order.

    Raises:
        ValueError: for an unknown name or a question without candidates.
    """
    candidates = _candidates_or_error(example.candidates)
    score: dict[str, float]
    if name in ("maximum_frequency", "exclusive_frequency"):
        counts = Counter(example.context)
        pool = candidates
        if name == "exclusive_frequency":
            in_query = set(example.query)
            pool = [c for c in candidates if c not in in_query] or candidates
        score = {c: -counts[c] for c in pool}
    elif name == "word_distance":
        score = dict(
            word_distance_scores(
                example.context,
                example.query,
                candidates,
                max_penalty=max_penalty,
                window=window,
            )
        )
    else:
        raise ValueError(f"unknown baseline {name!r}; choose one of {', '.join(BASELINES)}")
    best = min(score.values())
    return tuple(c for c in candidates if c in score and score[c] == best)


def expected_credit(
    name: BaselineName,
    example: ClozeExample,
    *,
    max_penalty: int = 8,
    window: int | None = None,
) -> float:
    """The expected score of ``name`` on ``example`` when ties are broken at random.

    ``1/k`` when the answer is among the ``k`` tied best candidates (``tied_best``), else 0.
    """
    return _credit(tied_best(name, example, max_penalty=max_penalty, window=window), example)


def _credit(best: Sequence[str], example: ClozeExample) -> float:
    return 1.0 / len(best) if example.answer in best else 0.0


def expected_accuracy(
    name: BaselineName,
    examples: Sequence[ClozeExample],
    *,
    max_penalty: int = 8,
    window: int | None = None,
) -> float:
    """The mean of ``expected_credit`` over ``examples``, in % (0.0 when there are none).

    This is what a baseline scores on the DeepMind data, whose markers are permuted at random
    per document, so that any tie-break by marker is a random one.
    """
    if not examples:
        return 0.0
    total = sum(
        expected_credit(name, ex, max_penalty=max_penalty, window=window) for ex in examples
    )
    return 100.0 * total / len(examples)


@dataclass(frozen=True)
class BaselineScores:
    """One baseline scored on a list of questions, both ways.

    Attributes:
        name: the baseline.
        credits: per question, the expected score under a random tie-break (``1/k`` when the
            answer is among the ``k`` tied best candidates, else 0): ``expected_credit``.
        first_occurrence: per question, the prediction with ties broken by the candidates'
            order (first occurrence in the context): ``baseline_predictor``'s answer.
    """

    name: BaselineName
    credits: tuple[float, ...]
    first_occurrence: tuple[str, ...]

    @property
    def accuracy(self) -> float:
        """The mean credit, a fraction (0.0 for no questions): the figure to publish."""
        return sum(self.credits) / len(self.credits) if self.credits else 0.0


def score_baselines(
    examples: Iterable[ClozeExample], *, max_penalty: int = 8, window: int | None = None
) -> dict[BaselineName, BaselineScores]:
    """Every baseline on every example, in order: expected credits and first-occurrence answers.

    One ``tied_best`` per baseline and question gives both (its first candidate is the
    deterministic predictor's answer).

    Args:
        examples: the cloze questions.
        max_penalty: word distance's cap per query word.
        window: word distance's window (``None``: every query word).

    Returns:
        Baseline name -> its scores, in ``BASELINES`` order.

    Raises:
        ValueError: for a question without candidates or a query without ``@placeholder``.
    """
    credits: dict[BaselineName, list[float]] = {name: [] for name in BASELINES}
    first: dict[BaselineName, list[str]] = {name: [] for name in BASELINES}
    for example in examples:
        for name in BASELINES:
            best = tied_best(name, example, max_penalty=max_penalty, window=window)
            credits[name].append(_credit(best, example))
            first[name].append(best[0])
    return {
        name: BaselineScores(name, tuple(credits[name]), tuple(first[name])) for name in BASELINES
    }


def baseline_predictor(
    name: BaselineName, *, max_penalty: int = 8, window: int | None = None
) -> Callable[[ClozeExample], str]:
    """A function ``ClozeExample -> predicted marker`` for the baseline ``name``.

    Raises:
        ValueError: for an unknown name (the message lists the known ones).
    """
    if name == "maximum_frequency":
        return lambda ex: maximum_frequency(ex.context, ex.candidates)
    if name == "exclusive_frequency":
        return lambda ex: exclusive_frequency(ex.context, ex.query, ex.candidates)
    if name == "word_distance":
        return lambda ex: word_distance(
            ex.context, ex.query, ex.candidates, max_penalty=max_penalty, window=window
        )
    raise ValueError(f"unknown baseline {name!r}; choose one of {', '.join(BASELINES)}")
