"""Cloze accuracy with a confidence interval, breakdowns, and the report of several systems.

Everything here works on one score per example: 1 or 0 for a model's right or wrong answer,
and for the non-neural baselines (``corpus/baselines.py``) their expected credit under a random
tie-break (``1/k`` when the answer is among ``k`` tied best candidates), the figure the
anonymization report and the published tables use. So models and baselines are reported the
same way, side by side; a baseline also keeps its accuracy with ties broken by first
occurrence (``first_occurrence``). The ``evaluate`` command feeds it; the functions are pure
and tested with hand-computed numbers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Literal

from attentive_reader.corpus.baselines import BaselineScores, score_baselines
from attentive_reader.corpus.records import ClozeExample

Z_95 = 1.959963984540054
"""The standard normal quantile of a two-sided 95% interval."""

DEFAULT_LENGTH_EDGES: tuple[int, ...] = (0, 250, 500, 750, 1000, 1500, 2000)
"""Lower bounds of the context-length buckets (tokens), the last one open-ended."""

DEFAULT_CANDIDATE_EDGES: tuple[int, ...] = (1, 2, 5, 10, 20, 40)
"""Lower bounds of the number-of-candidates buckets, the last one open-ended."""

SystemKind = Literal["baseline", "model"]


def wilson_interval(correct: float, total: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion.

    Unlike the normal ("Wald") interval it stays inside [0, 1] and is sensible for small
    ``total`` and for accuracies near 0 or 1. For expected credits (a fractional
    ``correct``) it is the interval of their mean taken as a proportion: their variance is at
    most that of right/wrong answers with the same mean, so the interval is not too narrow.

    Args:
        correct: number of successes (or sum of credits in [0, 1]), ``0 <= correct <= total``.
        total: number of trials; 0 gives the uninformative interval ``(0.0, 1.0)``.
        z: the normal quantile (1.96 for 95%).

    Raises:
        ValueError: if the counts are negative or ``correct > total``.
    """
    if total < 0 or correct < 0 or correct > total:
        raise ValueError(f"need 0 <= correct <= total, got correct={correct}, total={total}")
    if total == 0:
        return 0.0, 1.0
    p = correct / total
    z2 = z * z
    denominator = 1.0 + z2 / total
    centre = (p + z2 / (2 * total)) / denominator
    half = z / denominator * math.sqrt(p * (1 - p) / total + z2 / (4 * total * total))
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class Accuracy:
    """Accuracy over a set of examples, with its Wilson 95% interval.

    Attributes:
        n: number of examples.
        correct: number answered correctly (an int); for a baseline the sum of its expected
            credits (a float: 2.5 for five ties of two candidates each holding the answer).
        accuracy: ``correct / n`` (0.0 when ``n == 0``).
        ci_low: lower end of the 95% interval.
        ci_high: upper end of the 95% interval.
    """

    n: int
    correct: float
    accuracy: float
    ci_low: float
    ci_high: float

    @classmethod
    def of(cls, scores: Sequence[float]) -> Accuracy:
        """The accuracy of per-example scores: correct/wrong flags (``correct`` is then an
        int) or expected credits in [0, 1] (a float)."""
        n = len(scores)
        flags = all(isinstance(s, (bool, int)) for s in scores)
        correct = int(sum(scores)) if flags else float(sum(scores))
        low, high = wilson_interval(correct, n)
        return cls(n, correct, correct / n if n else 0.0, low, high)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Reading:
    """How much of the documents a system read: means per question.

    Attributes:
        tokens_read: the document tokens the answer was computed from (a reader's
            ``ClozeReader.reading_mask``: every token for a soft reader, the selected ones
            for a hard one; a baseline scans every token).
        document_tokens: the document tokens the system was given (after a checkpoint's
            context cap; a baseline's: the stored documents').
    """

    tokens_read: float
    document_tokens: float

    @classmethod
    def of(cls, tokens_read: Sequence[int], document_tokens: Sequence[int]) -> Reading:
        """The means of per-question counts.

        Raises:
            ValueError: if the two lists differ in length or are empty.
        """
        if len(tokens_read) != len(document_tokens) or not tokens_read:
            raise ValueError(
                f"need one count of each per question, got {len(tokens_read)} and "
                f"{len(document_tokens)}"
            )
        n = len(tokens_read)
        return cls(sum(tokens_read) / n, sum(document_tokens) / n)

    def to_dict(self) -> dict:
        return asdict(self)


def bucket_label(value: int, edges: Sequence[int]) -> str:
    """The label of the bucket holding ``value``; ``edges`` are ascending lower bounds.

    ``bucket_label(300, (0, 250, 500)) == "250-499"``, ``bucket_label(600, (0, 250, 500)) ==
    "500+"``; values below the first edge get ``"<first"``. Integer-valued buckets whose
    range holds one value are labelled by that value (``"1"``).

    Raises:
        ValueError: if ``edges`` is empty or not strictly ascending.
    """
    _check_edges(edges)
    if value < edges[0]:
        return f"<{edges[0]}"
    for low, high in zip(edges, edges[1:]):
        if low <= value < high:
            return str(low) if high - low == 1 else f"{low}-{high - 1}"
    return f"{edges[-1]}+"


def bucket_labels(edges: Sequence[int]) -> list[str]:
    """All labels of ``edges`` in order (without the ``"<first"`` underflow bucket)."""
    _check_edges(edges)
    return [bucket_label(e, edges) for e in edges]


def _check_edges(edges: Sequence[int]) -> None:
    if not edges or any(b <= a for a, b in zip(edges, edges[1:])):
        raise ValueError(
            f"bucket edges must be a non-empty, strictly ascending list, got {list(edges)}"
        )


def breakdown(
    scores: Sequence[float], labels: Sequence[str], order: Sequence[str] = ()
) -> dict[str, Accuracy]:
    """Accuracy per label: ``scores[i]`` belongs to the group ``labels[i]``.

    Args:
        scores: correct/wrong (or an expected credit) per example.
        labels: the group of each example (same length as ``scores``).
        order: labels listed first, in this order (groups with no example are left out);
            the other labels follow in order of first appearance.

    Raises:
        ValueError: if the two lists differ in length.
    """
    if len(scores) != len(labels):
        raise ValueError(f"{len(scores)} scores but {len(labels)} labels")
    groups: dict[str, list[float]] = {}
    for score, label in zip(scores, labels):
        groups.setdefault(label, []).append(score)
    ordered = [label for label in order if label in groups]
    ordered += [label for label in groups if label not in ordered]
    return {label: Accuracy.of(groups[label]) for label in ordered}


def system_result(
    name: str,
    kind: SystemKind,
    scores: Sequence[float],
    examples: Sequence[ClozeExample],
    *,
    length_edges: Sequence[int] = DEFAULT_LENGTH_EDGES,
    candidate_edges: Sequence[int] = DEFAULT_CANDIDATE_EDGES,
    first_occurrence: Sequence[str] | None = None,
    reading: Reading | None = None,
) -> dict:
    """One system's figures: overall accuracy, both breakdowns and what it read (a JSON-able
    dict).

    Args:
        name: the system's name in tables (a baseline name or a checkpoint path).
        kind: ``"baseline"`` or ``"model"``.
        scores: per example, in the order of ``examples``: right (``True``) or wrong for a
            model, the expected credit for a baseline.
        examples: the evaluated examples (their answers, context lengths, candidates).
        length_edges: lower bounds of the context-length buckets.
        candidate_edges: lower bounds of the number-of-candidates buckets.
        first_occurrence: a baseline's predictions with ties broken by first occurrence;
            their overall accuracy is kept as ``first_occurrence``.
        reading: how much of the documents it read (kept as ``reading``; none: left out).

    Raises:
        ValueError: if there is not exactly one score per example.
    """
    if len(scores) != len(examples):
        raise ValueError(
            f"{name}: {len(scores)} predictions for {len(examples)} examples; "
            "every example must be predicted exactly once"
        )
    lengths = [bucket_label(len(ex.context), length_edges) for ex in examples]
    counts = [bucket_label(len(ex.candidates), candidate_edges) for ex in examples]
    result = {
        "name": name,
        "kind": kind,
        "overall": Accuracy.of(scores).to_dict(),
        "by_context_length": {
            k: v.to_dict()
            for k, v in breakdown(scores, lengths, bucket_labels(length_edges)).items()
        },
        "by_num_candidates": {
            k: v.to_dict()
            for k, v in breakdown(scores, counts, bucket_labels(candidate_edges)).items()
        },
    }
    if first_occurrence is not None:
        first = Accuracy.of(correct_flags(first_occurrence, examples))
        result["first_occurrence"] = first.to_dict()
    if reading is not None:
        result["reading"] = reading.to_dict()
    return result


def correct_flags(predictions: Sequence[str], examples: Sequence[ClozeExample]) -> list[bool]:
    """Whether each predicted marker is its example's answer (in the order of ``examples``)."""
    return [p == ex.answer for p, ex in zip(predictions, examples)]


def build_report(
    examples: Sequence[ClozeExample],
    models: Mapping[str, Sequence[str]],
    *,
    baselines: Mapping[str, BaselineScores] | None = None,
    length_edges: Sequence[int] = DEFAULT_LENGTH_EDGES,
    candidate_edges: Sequence[int] = DEFAULT_CANDIDATE_EDGES,
    reading: Mapping[str, Reading] | None = None,
) -> dict:
    """The figures of the baselines and the models on one set of examples (JSON-able).

    Args:
        examples: the evaluated examples, each once.
        models: system name -> predicted marker per example (in the order of ``examples``).
        baselines: the baselines' scores (``score_baselines``); computed from the examples
            with the paper's settings when ``None``.
        length_edges: lower bounds of the context-length buckets.
        candidate_edges: lower bounds of the number-of-candidates buckets.
        reading: model name -> how much of the documents it read (a model left out has no
            ``reading``); each baseline reads every token of the stored documents.

    Returns:
        ``{"num_examples", "buckets", "systems": [...]}``: the baselines first (expected
        accuracy under a random tie-break, and ``first_occurrence``), then the models in the
        given order; each system as returned by ``system_result``.
    """
    if baselines is None:
        baselines = score_baselines(examples)
    reading = reading or {}
    lengths = [len(ex.context) for ex in examples]
    every_token = Reading.of(lengths, lengths) if examples else None
    edges = {"length_edges": length_edges, "candidate_edges": candidate_edges}
    systems = [
        system_result(
            name,
            "baseline",
            scores.credits,
            examples,
            first_occurrence=scores.first_occurrence,
            reading=every_token,
            **edges,
        )
        for name, scores in baselines.items()
    ]
    for name, predictions in models.items():
        if len(predictions) != len(examples):  # before zip() would cut the longer one
            raise ValueError(
                f"{name}: {len(predictions)} predictions for {len(examples)} examples; "
                "every example must be predicted exactly once"
            )
        flags = correct_flags(predictions, examples)
        systems.append(
            system_result(name, "model", flags, examples, reading=reading.get(name), **edges)
        )
    return {
        "num_examples": len(examples),
        "buckets": {
            "context_length": {"unit": "tokens", "lower_bounds": list(length_edges)},
            "num_candidates": {"unit": "entities", "lower_bounds": list(candidate_edges)},
        },
        "systems": systems,
    }


def _percent(x: float) -> str:
    return f"{100 * x:.1f}"


BASELINE_NOTE = (
    "Baselines: expected accuracy when ties are broken at random (the DeepMind data permutes "
    "the markers per document, so a tie broken by marker there is a random one); the last "
    "column breaks ties by first occurrence in the context instead, which favours the answer."
)


def markdown_tables(report: dict) -> str:
    """The report as Markdown: one overall table, then one table per breakdown.

    Accuracies are in percent; the interval is the Wilson 95% interval. A baseline's figures
    are its expected accuracy under a random tie-break; the overall table's last column
    gives its accuracy with ties broken by first occurrence. A checkpoint that read examples
    fitted into its entity block gets one line saying how many, and how many of their answers
    it could not give.
    """
    systems = report["systems"]
    lines = _overall_table(systems) + _block_notes(report)
    for key, title in (
        ("by_context_length", "context length (tokens)"),
        ("by_num_candidates", "number of candidate entities"),
    ):
        labels: list[str] = []
        for s in systems:
            labels += [label for label in s[key] if label not in labels]
        if not labels:
            continue
        lines += [
            "",
            f"Accuracy (%) by {title}:",
            "",
            "| bucket | n | " + " | ".join(_cell(s["name"]) for s in systems) + " |",
            "| --- | ---: | " + " | ".join("---:" for _ in systems) + " |",
        ]
        for label in labels:
            n = next(s[key][label]["n"] for s in systems if label in s[key])
            cells = [
                _percent(s[key][label]["accuracy"]) if label in s[key] else "-" for s in systems
            ]
            lines.append(f"| {label} | {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _block_notes(report: dict) -> list[str]:
    """One line per checkpoint that read examples relabelled into its entity block."""
    checkpoints = (report.get("inputs") or {}).get("checkpoints") or []
    notes = [
        f"{c['name']}: {c['relabelled']} of {report['num_examples']} examples numbered "
        f"entities beyond its {c['num_entities']} entity ids and were read relabelled into "
        f"them; {c['unanswerable']} answers fell outside them and count wrong"
        for c in checkpoints
        if c.get("relabelled")
    ]
    return ["", *notes] if notes else []


READING_NOTE = (
    "Tokens read: the mean document tokens per question that a system's answer is computed "
    "from, of the mean document tokens it was given (the encoders of every reader run over "
    "the whole document)."
)


def _overall_table(systems: Sequence[dict]) -> list[str]:
    lines = [
        "| system | kind | accuracy (%) | 95% CI (%) | correct / n | first-occurrence ties (%) "
        "| tokens read |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for s in systems:
        o, first = s["overall"], s.get("first_occurrence")
        lines.append(
            f"| {_cell(s['name'])} | {s['kind']} | {_percent(o['accuracy'])} | "
            f"{_percent(o['ci_low'])}-{_percent(o['ci_high'])} | "
            f"{_count(o['correct'])} / {o['n']} | "
            f"{'-' if first is None else _percent(first['accuracy'])} | {_reading(s)} |"
        )
    if any(s["kind"] == "baseline" for s in systems):
        lines += ["", BASELINE_NOTE]
    if any(s.get("reading") for s in systems if s["kind"] == "model"):
        lines += ["", READING_NOTE]
    return lines


def _reading(system: dict) -> str:
    """``tokens read of document tokens`` per question (means), or ``-`` where not known."""
    reading = system.get("reading")
    if not reading:
        return "-"
    return f"{reading['tokens_read']:.1f} of {reading['document_tokens']:.1f}"


def _count(correct: float) -> str:
    """A count of right answers: an int as it is, a sum of expected credits to 0.1."""
    return str(correct) if isinstance(correct, int) else f"{correct:.1f}"


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")
