"""The paper's non-neural baselines, checked by hand on one tiny example."""

import pytest

from attentive_reader.corpus.baselines import (
    baseline_predictor,
    exclusive_frequency,
    expected_accuracy,
    expected_credit,
    maximum_frequency,
    score_baselines,
    tied_best,
    word_distance,
    word_distance_score,
    word_distance_scores,
)
from attentive_reader.corpus.records import ClozeExample

#           0          1          2          3     4        5    6          7
CONTEXT = ["@entity0", "visited", "@entity1", "on", "monday", ".", "@entity2", "praised",
#           8          9    10         11
           "@entity1", ".", "@entity1", "smiled"]  # fmt: skip
QUERY = ["@placeholder", "praised", "@entity1"]
CANDIDATES = ["@entity0", "@entity1", "@entity2"]


def test_maximum_frequency_counts_the_context():
    # @entity1 occurs 3 times, the others once.
    assert maximum_frequency(CONTEXT, CANDIDATES) == "@entity1"


def test_maximum_frequency_breaks_ties_by_first_occurrence():
    assert maximum_frequency(["@entity3", "@entity5", "x"], ["@entity3", "@entity5"]) == "@entity3"
    assert maximum_frequency(["@entity5", "@entity3"], ["@entity5", "@entity3"]) == "@entity5"


def test_exclusive_frequency_skips_entities_in_the_query():
    # @entity1 is in the query; @entity0 and @entity2 tie at one mention -> the earlier one.
    assert exclusive_frequency(CONTEXT, QUERY, CANDIDATES) == "@entity0"
    query = ["@entity0", "praised", "@placeholder"]
    assert exclusive_frequency(CONTEXT, query, CANDIDATES) == "@entity1"


def test_exclusive_frequency_falls_back_when_every_candidate_is_in_the_query():
    query = ["@entity0", "@entity1", "@entity2", "@placeholder"]
    assert exclusive_frequency(CONTEXT, query, CANDIDATES) == "@entity1"


def test_word_distance_scores_by_hand():
    # "praised" sits at offset +1 from the placeholder, "@entity1" at +2.
    # @entity0 @0: praised expected at 1, nearest at 7 -> 6; @entity1 expected at 2 -> 0.   = 6
    # @entity1 @2: 4 + 2 = 6;  @8: praised at 9 vs 7 -> 2, @entity1 at 10 -> 0 = 2;  @10: 4 + 2
    # @entity2 @6: praised at 7 -> 0, @entity1 at 8 -> 0                                      = 0
    scores = word_distance_scores(CONTEXT, QUERY, CANDIDATES)
    assert scores == {"@entity0": 6, "@entity1": 2, "@entity2": 0}
    assert word_distance(CONTEXT, QUERY, CANDIDATES) == "@entity2"
    assert word_distance_score(CONTEXT, QUERY, 8) == 2


def test_word_distance_caps_each_word_at_the_max_penalty():
    # m = 3: @entity0 pays min(6, 3) + 0; @entity1 @2 pays 3 + 2, @8 pays 2, @10 pays 3 + 2.
    scores = word_distance_scores(CONTEXT, QUERY, CANDIDATES, max_penalty=3)
    assert scores == {"@entity0": 3, "@entity1": 2, "@entity2": 0}
    # A query word absent from the context pays the full penalty at every alignment.
    scores = word_distance_scores(CONTEXT, [*QUERY, "zebra"], CANDIDATES, max_penalty=8)
    assert scores == {"@entity0": 14, "@entity1": 10, "@entity2": 8}


def test_word_distance_window_counts_only_nearby_query_words():
    # window 1: only "praised" (+1) counts.
    scores = word_distance_scores(CONTEXT, QUERY, CANDIDATES, window=1)
    assert scores == {"@entity0": 6, "@entity1": 2, "@entity2": 0}
    # The placeholder in the middle: "@entity0" at offset -1 and "smiled" at +1.
    query = ["@entity0", "@placeholder", "smiled"]
    # @entity1 @2:  @entity0 expected at 1 -> 1; smiled expected at 3, found at 11 -> 8 = 9
    # @entity1 @8:  @entity0 expected at 7 -> 7; smiled expected at 9 -> 2              = 9
    # @entity1 @10: @entity0 expected at 9 -> 9, capped at 8; smiled at 11 -> 0         = 8
    assert word_distance_scores(CONTEXT, query, ["@entity1"]) == {"@entity1": 8}


def test_word_distance_rejects_a_query_without_placeholder():
    with pytest.raises(ValueError, match="@placeholder"):
        word_distance(CONTEXT, ["praised"], CANDIDATES)
    with pytest.raises(ValueError, match="max_penalty"):
        word_distance_score(CONTEXT, QUERY, 0, max_penalty=0)


def test_baseline_predictor_on_a_cloze_example():
    ex = ClozeExample(
        id="s:0:0",
        story_id="s",
        context=tuple(CONTEXT),
        query=tuple(QUERY),
        answer="@entity2",
        candidates=tuple(CANDIDATES),
    )
    assert baseline_predictor("maximum_frequency")(ex) == "@entity1"
    assert baseline_predictor("exclusive_frequency")(ex) == "@entity0"
    assert baseline_predictor("word_distance")(ex) == "@entity2"
    with pytest.raises(ValueError, match="choose one of"):
        baseline_predictor("nearest")  # type: ignore[arg-type]


def _example(answer: str, query=QUERY, context=CONTEXT) -> ClozeExample:
    return ClozeExample(
        id=f"s_0_{answer}",
        story_id="s",
        context=tuple(context),
        query=tuple(query),
        answer=answer,
        candidates=tuple(c for c in CANDIDATES if c in context),
    )


def test_tied_best_keeps_every_tied_candidate():
    # Exclusive frequency: @entity1 is in the query; @entity0 and @entity2 tie at one mention.
    ex = _example("@entity2")
    assert tied_best("exclusive_frequency", ex) == ("@entity0", "@entity2")
    assert tied_best("maximum_frequency", ex) == ("@entity1",)
    assert tied_best("word_distance", ex) == ("@entity2",)
    # The deterministic predictor is the first of the tied ones.
    assert baseline_predictor("exclusive_frequency")(ex) == tied_best("exclusive_frequency", ex)[0]
    with pytest.raises(ValueError, match="choose one of"):
        tied_best("nearest", ex)  # type: ignore[arg-type]


def test_expected_credit_under_a_random_tie_break():
    # The answer among k = 2 tied candidates: 1/2, whichever of the two it is.
    assert expected_credit("exclusive_frequency", _example("@entity2")) == 0.5
    assert expected_credit("exclusive_frequency", _example("@entity0")) == 0.5
    # Not among the tied best: 0; the one best: 1.
    assert expected_credit("exclusive_frequency", _example("@entity1")) == 0.0
    assert expected_credit("maximum_frequency", _example("@entity1")) == 1.0
    # Three candidates tied (each once in the context): 1/3 for maximum frequency.
    context = ["@entity0", "a", "@entity1", "b", "@entity2"]
    assert expected_credit("maximum_frequency", _example("@entity1", context=context)) == 1 / 3
    # Word distance, query "@placeholder b": @entity0 @0 expects b at 1 (found at 3) -> 2,
    # @entity1 @2 -> 0 (b at 3), @entity2 @4 expects b at 5 -> 2. @entity1 alone is best;
    # @entity0 and @entity2 would tie at 2 and are not the best.
    query = ["@placeholder", "b"]
    assert tied_best("word_distance", _example("@entity1", query, context)) == ("@entity1",)
    # Query "b @placeholder": @entity0 @0 expects b at -1, found at 3 -> 4;
    # @entity1 @2 expects b at 1 -> 2; @entity2 @4 expects b at 3 -> 0.
    query = ["b", "@placeholder"]
    assert tied_best("word_distance", _example("@entity2", query, context)) == ("@entity2",)


def test_expected_accuracy_is_the_mean_credit_in_percent():
    examples = [_example("@entity2"), _example("@entity1"), _example("@entity0")]
    # Exclusive frequency: 1/2 + 0 + 1/2 over 3 questions = 33.3%; the first-occurrence
    # predictor (@entity0 each time) would score 1 of 3 as well, but on other questions:
    assert expected_accuracy("exclusive_frequency", examples) == pytest.approx(100 / 3)
    # Maximum frequency: @entity1 alone is best: right once in 3.
    assert expected_accuracy("maximum_frequency", examples) == pytest.approx(100 / 3)
    assert expected_accuracy("maximum_frequency", []) == 0.0
    # Where ties favour the first candidate, the expectation is lower than the predictor's.
    tied = [_example("@entity0", context=["@entity0", "@entity1", "@entity2"])] * 2
    right = sum(baseline_predictor("maximum_frequency")(ex) == ex.answer for ex in tied)
    assert right == 2 and expected_accuracy("maximum_frequency", tied) == pytest.approx(100 / 3)


def test_score_baselines_gives_both_scorings_in_one_pass():
    examples = [_example("@entity2"), _example("@entity1"), _example("@entity0")]
    scores = score_baselines(examples)
    assert list(scores) == ["maximum_frequency", "exclusive_frequency", "word_distance"]
    # Exclusive frequency: @entity0 and @entity2 tie (the answer among them: 1/2 each time);
    # the deterministic predictor answers @entity0, the first of the two, every time.
    exclusive = scores["exclusive_frequency"]
    assert exclusive.credits == (0.5, 0.0, 0.5)
    assert exclusive.first_occurrence == ("@entity0",) * 3
    assert exclusive.accuracy == pytest.approx(1 / 3)
    assert scores["word_distance"].credits == (1.0, 0.0, 0.0)
    for name, result in scores.items():  # the same figures as the one-question functions
        assert result.credits == tuple(expected_credit(name, ex) for ex in examples)
        assert result.first_occurrence == tuple(baseline_predictor(name)(ex) for ex in examples)
        assert 100 * result.accuracy == pytest.approx(expected_accuracy(name, examples))
    assert score_baselines([])["word_distance"].accuracy == 0.0
