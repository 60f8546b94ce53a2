"""Answers whose marker stands directly beside another marker in the context.

Two markers side by side (``@entity3 @entity7``) are either two names the text writes side
by side (a photo caption that lost its full stop, "Goodison Park Wayne Rooney"; a demonym
before a name, "American Jordan Spieth") or one name that NER or the grouping cut in two
("Youssouf" + "Mulumbu", "Newcastle" + "United") or a mention that is no name
("strawberry"). An answer that is one piece of a split name is harder for every baseline
and reader, so the share of questions whose answer stands beside another marker, and what
those pairs are, is a direct look at what the grouping still gets wrong.

``adjacent_report(examples)`` lists them. Each pair gets a *kind* from the two names alone
(``adjacent_kind``), a rough sorting to read them by, not a verdict:

- ``related``: the names are related (``eval.anonymization.related_kind``: an alias, a
  surname, a first name of the other), most likely one entity split;
- ``lowercase``: a name holds a lowercase word that is no particle of names ("strawberry",
  "Ibe for the incident"), most likely no name at all;
- ``place or demonym``: a name is a known place or demonym ("American", "England"), most
  often two real names;
- ``names``: anything else (two names glued in a caption, or one name cut in two).

Pure functions over ``ClozeExample`` records; ``attentive-reader anonymization
--adjacent`` prints them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Literal

from attentive_reader.common.markers import is_entity_marker
from attentive_reader.corpus.names import is_known_form, is_place
from attentive_reader.corpus.records import ClozeExample
from attentive_reader.eval.anonymization import cluster_interval, related_kind

AdjacentKind = Literal["related", "lowercase", "place or demonym", "names"]
ADJACENT_KINDS: tuple[AdjacentKind, ...] = ("related", "lowercase", "place or demonym", "names")

# Lowercase words that belong inside names ("Bank of England", "Leonardo da Vinci").
_PARTICLES = frozenset(
    "of the and for on in at to a an de da di del della der den van von du le la al el bin "
    "ibn y &".split()
)


@dataclass(frozen=True)
class AdjacentPair:
    """An answer's marker directly beside another marker in the context (first such place).

    Attributes:
        example: the question's id.
        story: its story's id.
        left: the name of the first marker of the pair.
        right: the name of the second.
        answer_left: whether the answer is the first marker.
        kind: ``adjacent_kind(left, right)``.
        context: the context from four tokens before the pair to four after.
    """

    example: str
    story: str
    left: str
    right: str
    answer_left: bool
    kind: AdjacentKind
    context: str


def adjacent_kind(left: str, right: str) -> AdjacentKind:
    """The kind of a pair of names side by side (module docstring).

    >>> adjacent_kind("Mary Pat", "Christie"), adjacent_kind("United States", "strawberry")
    ('names', 'lowercase')
    >>> adjacent_kind("American", "Jordan Spieth"), adjacent_kind("Giggs", "Ryan Giggs")
    ('place or demonym', 'related')
    """
    if related_kind(left, right) is not None:
        return "related"
    words = [w for name in (left, right) for w in name.split()]
    if any(w.isalpha() and w.islower() and w not in _PARTICLES for w in words):
        return "lowercase"
    for name in (left, right):
        key = tuple(name.replace("-", " - ").split())
        if is_known_form(key) or is_place(key):
            return "place or demonym"
    return "names"


def adjacent_pair(example: ClozeExample) -> AdjacentPair | None:
    """The first place where the answer's marker has another marker right beside it."""
    context = example.context
    for i, token in enumerate(context):
        if token != example.answer:
            continue
        for j in (i - 1, i + 1):
            if 0 <= j < len(context) and context[j] != token and is_entity_marker(context[j]):
                first, second = sorted((i, j))
                names = [example.entities.get(context[k], "") for k in (first, second)]
                return AdjacentPair(
                    example=example.id,
                    story=example.story_id,
                    left=names[0],
                    right=names[1],
                    answer_left=first == i,
                    kind=adjacent_kind(names[0], names[1]),
                    context=" ".join(context[max(0, first - 4) : second + 5]),
                )
    return None


def adjacent_report(examples: Iterable[ClozeExample]) -> dict:
    """The answers beside another marker, as a JSON-ready dict.

    Returns:
        ``questions``, ``adjacent_marker`` (% of questions whose answer's marker stands
        beside another marker somewhere in the context) with ``interval`` (half the 95%
        cluster-bootstrap interval over documents, points), ``kinds`` (counts by
        ``adjacent_kind``, every kind listed) and ``pairs`` (every such question's
        ``AdjacentPair`` as a dict, in the examples' order).
    """
    examples = list(examples)
    pairs = [adjacent_pair(ex) for ex in examples]
    found = [p for p in pairs if p is not None]
    scores: Sequence[float] = [0.0 if p is None else 1.0 for p in pairs]
    share = round(100.0 * len(found) / len(examples), 1) if examples else 0.0
    kinds = {kind: sum(p.kind == kind for p in found) for kind in ADJACENT_KINDS}
    return {
        "questions": len(examples),
        "adjacent_marker": share,
        "interval": cluster_interval(scores, [ex.story_id for ex in examples]),
        "kinds": kinds,
        "pairs": [asdict(p) for p in found],
    }
