"""Accuracy, the Wilson interval, breakdowns and the report tables."""

import json

import pytest

from attentive_reader.corpus.records import ClozeExample
from attentive_reader.eval.report import (
    Accuracy,
    Reading,
    breakdown,
    bucket_label,
    build_report,
    markdown_tables,
    wilson_interval,
)


def test_wilson_interval_against_known_values():
    # 81 / 100, z = 1.96: centre (0.81 + 0.019207) / 1.038415 = 0.798532,
    # half-width 1.96 * sqrt(0.81 * 0.19 / 100 + 3.8415 / 40000) / 1.038415 = 0.076322.
    low, high = wilson_interval(81, 100)
    assert low == pytest.approx(0.72221, abs=1e-4)
    assert high == pytest.approx(0.87485, abs=1e-4)
    # 0 / 10: the lower end is 0, the upper end z^2 / (n + z^2) = 3.8415 / 13.8415.
    low, high = wilson_interval(0, 10)
    assert low == 0.0
    assert high == pytest.approx(0.27753, abs=1e-4)
    # Symmetry: n - k successes mirror k.
    lo1, hi1 = wilson_interval(3, 20)
    lo2, hi2 = wilson_interval(17, 20)
    assert (lo1, hi1) == pytest.approx((1 - hi2, 1 - lo2))
    assert wilson_interval(0, 0) == (0.0, 1.0)


def test_wilson_interval_rejects_impossible_counts():
    with pytest.raises(ValueError, match="correct <= total"):
        wilson_interval(5, 4)
    with pytest.raises(ValueError):
        wilson_interval(-1, 4)


def test_accuracy_of_flags():
    acc = Accuracy.of([True, False, True, True])
    assert (acc.n, acc.correct, acc.accuracy) == (4, 3, 0.75)
    assert acc.ci_low < 0.75 < acc.ci_high


def test_bucket_labels():
    edges = (0, 250, 500)
    assert bucket_label(0, edges) == "0-249"
    assert bucket_label(249, edges) == "0-249"
    assert bucket_label(250, edges) == "250-499"
    assert bucket_label(10_000, edges) == "500+"
    assert bucket_label(1, (1, 2, 5)) == "1"
    assert bucket_label(0, (1, 2, 5)) == "<1"
    with pytest.raises(ValueError, match="ascending"):
        bucket_label(3, (5, 2))


def test_breakdown_groups_and_orders():
    result = breakdown([True, False, True, False], ["b", "a", "b", "c"], order=["a", "b"])
    assert list(result) == ["a", "b", "c"]
    assert (result["a"].n, result["a"].correct) == (1, 0)
    assert (result["b"].n, result["b"].correct) == (2, 2)
    with pytest.raises(ValueError):
        breakdown([True], ["a", "b"])


def _example(i: int, length: int, candidates: int, answer: str) -> ClozeExample:
    markers = [f"@entity{k}" for k in range(candidates)]
    context = (markers * length)[:length]
    return ClozeExample(
        id=f"s{i}",
        story_id=f"s{i}",
        context=tuple(context),
        query=("@placeholder", "said"),
        answer=answer,
        candidates=tuple(markers),
    )


def test_build_report_by_hand():
    examples = [
        _example(0, 10, 2, "@entity0"),
        _example(1, 10, 2, "@entity1"),
        _example(2, 300, 3, "@entity2"),
        _example(3, 300, 1, "@entity0"),
    ]
    model = ["@entity0", "@entity0", "@entity2", "@entity0"]  # 3 of 4 right
    report = build_report(
        examples, {"run/a.ckpt": model}, length_edges=(0, 100), candidate_edges=(1, 2, 3)
    )
    assert report["num_examples"] == 4
    names = [s["name"] for s in report["systems"]]
    assert names == ["maximum_frequency", "exclusive_frequency", "word_distance", "run/a.ckpt"]
    m = report["systems"][-1]
    assert m["kind"] == "model"
    assert (m["overall"]["correct"], m["overall"]["n"]) == (3, 4)
    assert m["by_context_length"]["0-99"] == pytest.approx(
        {"n": 2, "correct": 1, "accuracy": 0.5, **_ci(1, 2)}
    )
    assert m["by_context_length"]["100+"]["correct"] == 2
    assert {k: v["n"] for k, v in m["by_num_candidates"].items()} == {"1": 1, "2": 2, "3+": 1}
    # Maximum frequency, ties broken at random: ex0 e0 / e1 tie at 5 with the answer e0 among
    # them: 1/2; ex1 the same tie, answer e1: 1/2; ex2 three tied at 100: 1/3; ex3 alone: 1.
    mf = report["systems"][0]
    assert mf["overall"]["correct"] == pytest.approx(1 / 2 + 1 / 2 + 1 / 3 + 1)
    assert mf["overall"]["accuracy"] == pytest.approx(7 / 3 / 4)
    assert mf["by_context_length"]["0-99"]["correct"] == pytest.approx(1.0)  # ex0 + ex1
    assert mf["by_num_candidates"]["2"]["accuracy"] == pytest.approx(0.5)
    # Ties broken by first occurrence (e0 each time): ex0 and ex3 right.
    assert (mf["first_occurrence"]["correct"], mf["first_occurrence"]["n"]) == (2, 4)
    assert "first_occurrence" not in m  # models have one figure
    json.dumps(report)  # JSON-able


def test_a_tie_of_two_scores_one_half():
    """One question, the answer tied with one other candidate: 0.5 expected, in the report's
    figures, interval, table and counts."""
    tied = _example(0, 10, 2, "@entity1")  # e0 and e1 five times each
    report = build_report([tied], {})
    for system in report["systems"][:2]:  # maximum and exclusive frequency
        assert system["overall"]["correct"] == 0.5 and system["overall"]["accuracy"] == 0.5
        assert (system["overall"]["ci_low"], system["overall"]["ci_high"]) == wilson_interval(
            0.5, 1
        )
        assert system["first_occurrence"]["correct"] == 0  # e0 first: wrong
    text = markdown_tables(report)
    assert "| maximum_frequency | baseline | 50.0 | " in text
    assert "| 0.5 / 1 | 0.0 |" in text and "ties are broken at random" in text


def _ci(k, n):
    low, high = wilson_interval(k, n)
    return {"ci_low": low, "ci_high": high}


def test_every_example_needs_one_prediction():
    examples = [_example(0, 10, 2, "@entity0")]
    with pytest.raises(ValueError, match="exactly once"):
        build_report(examples, {"m": []})


def test_markdown_tables():
    examples = [_example(0, 10, 2, "@entity0"), _example(1, 10, 2, "@entity1")]
    report = build_report(examples, {"a|b.ckpt": ["@entity0", "@entity1"]})
    text = markdown_tables(report)
    assert "| a\\|b.ckpt | model | 100.0 | " in text
    assert "| 2 / 2 | - |" in text  # a model has no first-occurrence figure
    # Each example ties e0 and e1: 1/2 + 1/2 expected; by first occurrence e0 is right once.
    assert "| maximum_frequency | baseline | 50.0 | " in text
    assert "| 1.0 / 2 | 50.0 |" in text
    assert "| 0-249 | 2 | 50.0 |" in text


def test_what_each_system_read_is_in_the_json_and_the_table():
    # Documents of 10 and 301 tokens: a baseline reads every stored token, 155.5 a question.
    examples = [_example(0, 10, 2, "@entity0"), _example(1, 301, 2, "@entity1")]
    hard = Reading.of([1, 1], [10, 301])
    capped = Reading.of([10, 200], [10, 200])  # a reader whose context cap cut the long one
    predictions = ["@entity0", "@entity1"]
    report = build_report(
        examples,
        {"hard": predictions, "capped": predictions, "untold": predictions},
        reading={"hard": hard, "capped": capped},
    )
    systems = {s["name"]: s for s in report["systems"]}
    assert systems["hard"]["reading"] == {"tokens_read": 1.0, "document_tokens": 155.5}
    assert systems["capped"]["reading"] == {"tokens_read": 105.0, "document_tokens": 105.0}
    assert "reading" not in systems["untold"]
    assert systems["word_distance"]["reading"] == {"tokens_read": 155.5, "document_tokens": 155.5}
    text = markdown_tables(report)
    assert "| first-occurrence ties (%) | tokens read |" in text
    assert "| 2 / 2 | - | 1.0 of 155.5 |" in text and "| 2 / 2 | - | 105.0 of 105.0 |" in text
    assert "| 2 / 2 | - | - |" in text  # a model that did not say
    assert "Tokens read: the mean document tokens per question" in text
    with pytest.raises(ValueError, match="one count of each per question"):
        Reading.of([1], [10, 301])
