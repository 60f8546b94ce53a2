"""How good is a dataset's anonymization? Figures a user can check against the DeepMind data.

``anonymization_report(examples)`` measures, over stored cloze examples:

- the three non-neural baselines (``eval.baselines``), to put beside the published ones
  (Hermann et al. 2015, Table 4): an entity split over several markers lowers the
  frequency baselines, so they are a sensitive check of the grouping;
- entities and questions per document;
- **related second marker**: the share of questions whose answer's entity has another
  marker in the context with a related name (``related_kind``: an alias or demonym of
  the same place, a plural, an acronym, a surname or first name of the same person),
  i.e. an answer that is probably one piece of a split entity;
- **plain names in queries**: the share of queries holding, as plain words, a name of an
  entity of their context (its full name, or the last word of a multi-word name).

Each share comes with the half-width of its 95% interval (``interval``, the normal
approximation ``1.96 * sqrt(p (1 - p) / n)``): on 61 questions a baseline is only known to
about ±12 points, on 1,100 to about ±3.

Pure functions over ``ClozeExample`` records; ``scripts/anonymization_report.py`` reads a
dataset folder and prints them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from attentive_reader.corpus.names import canonical_form, form_key, is_place
from attentive_reader.corpus.records import ClozeExample, is_entity_marker
from attentive_reader.eval.baselines import BASELINES, baseline_predictor

# Hermann et al. (2015), Table 4 (test accuracy, %) and Table 1 (entities per document).
PUBLISHED: dict[str, dict[str, float]] = {
    "cnn": {
        "maximum_frequency": 33.2,
        "exclusive_frequency": 39.3,
        "word_distance": 50.9,
        "entities_per_document": 26.4,
        "questions_per_document": 4.2,
    },
    "dailymail": {
        "maximum_frequency": 25.5,
        "exclusive_frequency": 32.8,
        "word_distance": 55.5,
        "entities_per_document": 26.5,
        "questions_per_document": 4.5,
    },
}

_SKIP = frozenset({"of", "the", "and", "for", "de", "on", "in", "&"})


def _words(name: str) -> tuple[str, ...]:
    return form_key(name.replace("-", " - ").split())


def related_kind(a: str, b: str) -> str | None:
    """How two entity names are related, or ``None``.

    Returns:
        ``"alias"`` (the same canonical name: "Iran" / "Iranian", "U.S." / "America"),
        ``"plural"`` ("Houthi" / "Houthis"), ``"acronym"`` ("FBI" / "Federal Bureau of
        Investigation"), ``"surname"`` (one name ends the other: "Benaud" / "Richie
        Benaud"), ``"first name"`` ("Richie" / "Richie Benaud").
    """
    ka, kb = _words(a), _words(b)
    if not ka or not kb or ka == kb:
        return None if not ka or not kb else "alias"
    if canonical_form(ka) == canonical_form(kb):
        return "alias"
    short, long = sorted((ka, kb), key=len)
    if len(short) == len(long) and short[:-1] == long[:-1]:
        x, y = sorted((short[-1], long[-1]), key=len)
        if y == x + "s" and len(x) > 2:
            return "plural"
    if len(short) == 1 and len(long) >= 2:
        initials = "".join(w[0] for w in long if w not in _SKIP)
        if len(initials) >= 2 and short[0] == initials:
            return "acronym"
    if len(short) < len(long) and not (is_place(short) and not is_place(long)):
        if long[-len(short) :] == short and short[0][:1].isalpha() and len(short[-1]) > 2:
            return "surname"
        person_like = len(long) <= 3 and not set(long) & _SKIP and not is_place(short)
        if len(short) == 1 and long[0] == short[0] and person_like and len(short[0]) > 2:
            return "first name"
    return None


def _plain_names(example: ClozeExample) -> list[str]:
    """Names of context entities that the query holds as plain words."""
    query = [w.lower() for w in example.query if not is_entity_marker(w) and w != "@placeholder"]
    text = f" {' '.join(query)} "
    found = []
    for marker in example.candidates:
        name = example.entities.get(marker, "")
        words = name.lower().replace("-", " - ").split()
        if not words:
            continue
        forms = {" ".join(words)}
        if len(words) >= 2 and len(words[-1]) > 2 and words[-1] not in _SKIP:
            forms.add(words[-1])
        hit = next((f for f in forms if f" {f} " in text and f[:1].isalpha()), None)
        if hit is not None:
            found.append(hit)
    return found


def interval(percent: float, n: int) -> float:
    """Half-width, in points, of the 95% interval of a share of ``percent`` % over ``n``.

    >>> interval(50.0, 100)
    9.8
    """
    if n <= 0:
        return 0.0
    p = percent / 100.0
    return round(100.0 * 1.96 * math.sqrt(p * (1.0 - p) / n), 1)


def _accuracy(examples: Sequence[ClozeExample], name: str) -> float:
    predict = baseline_predictor(name)  # type: ignore[arg-type]
    right = sum(predict(ex) == ex.answer for ex in examples)
    return round(100.0 * right / len(examples), 1) if examples else 0.0


def anonymization_report(examples: Iterable[ClozeExample]) -> dict:
    """The figures of the module docstring, as a JSON-ready dict.

    Returns:
        ``questions``, ``documents``, the three baselines (accuracy, %),
        ``entities_per_document``, ``questions_per_document``, ``related_second_marker``
        (% of questions) with ``related_kinds`` (counts by kind), ``plain_name_queries``
        (% of queries), up to 20 ``plain_name_examples``, and ``intervals``: the 95%
        interval's half-width (points) of each baseline and of the two shares.
    """
    examples = list(examples)
    documents: dict[str, int] = {}
    for ex in examples:
        documents.setdefault(ex.story_id, len(ex.candidates))
    related = 0
    kinds: dict[str, int] = {}
    plain = 0
    plain_examples: list[str] = []
    for ex in examples:
        answer = ex.entities.get(ex.answer, "")
        found = [
            related_kind(answer, ex.entities.get(m, "")) for m in ex.candidates if m != ex.answer
        ]
        found = [k for k in found if k]
        if found:
            related += 1
            kinds[found[0]] = kinds.get(found[0], 0) + 1
        names = _plain_names(ex)
        if names:
            plain += 1
            if len(plain_examples) < 20:
                plain_examples.append(f"{ex.id}: {', '.join(names)}")
    n = len(examples)
    report: dict = {"questions": n, "documents": len(documents)}
    for name in BASELINES:
        report[name] = _accuracy(examples, name)
    report["entities_per_document"] = (
        round(sum(documents.values()) / len(documents), 1) if documents else 0.0
    )
    report["questions_per_document"] = round(n / len(documents), 2) if documents else 0.0
    report["related_second_marker"] = round(100.0 * related / n, 1) if n else 0.0
    report["related_kinds"] = dict(sorted(kinds.items(), key=lambda kv: -kv[1]))
    report["plain_name_queries"] = round(100.0 * plain / n, 1) if n else 0.0
    report["plain_name_examples"] = plain_examples
    report["intervals"] = {
        key: interval(report[key], n)
        for key in (*BASELINES, "related_second_marker", "plain_name_queries")
    }
    return report
