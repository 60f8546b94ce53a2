"""The records of the synthetic corpus: story shapes, entities, mentions, generated stories."""

from __future__ import annotations

from dataclasses import dataclass

from attentive_reader.corpus.records import Split, Story
from attentive_reader.corpus.synthetic.words import FACT_KINDS, Label

URL_PREFIX = "https://synthetic.attentive-reader.invalid"

SplitName = Split  # the one split type (corpus.records), under its old name here
_SPLIT_PATTERN: tuple[SplitName, ...] = ("train",) * 8 + ("validation", "test")


@dataclass(frozen=True)
class StoryShape:
    """How big a story is: its fact plans, mention counts and plain filler.

    Attributes:
        name: the shape's name (``default``, ``compact``), recorded in ``synthetic.json``.
        plans: the fact plans, drawn uniformly: ``(number of kinds, repeat choices)``; each
            of the kinds is stated a number of times drawn from the repeat choices (>= 2, so
            that every fact has a distractor of its kind).
        mention_counts: total mention counts an entity can get, drawn independently of its
            facts with ``mention_weights``.
        mention_weights: the weights of ``mention_counts``.
        plain_fillers: ``(low, high)``: how many entity-free filler sentences are added.
        min_sentences: stories with fewer sentences get plain filler up to this many.
    """

    name: str
    plans: tuple[tuple[int, tuple[int, ...]], ...]
    mention_counts: tuple[int, ...]
    mention_weights: tuple[float, ...]
    plain_fillers: tuple[int, int]
    min_sentences: int

    def __post_init__(self) -> None:
        if not self.plans:
            raise ValueError("StoryShape.plans must hold at least one plan")
        for kinds, repeats in self.plans:
            if not 1 <= kinds <= len(FACT_KINDS) or not repeats or min(repeats) < 2:
                raise ValueError(
                    f"StoryShape plan {(kinds, repeats)} is invalid: use 1..{len(FACT_KINDS)} "
                    "kinds, each repeated at least twice"
                )
        if len(self.mention_counts) != len(self.mention_weights) or min(self.mention_counts) < 1:
            raise ValueError(
                "StoryShape.mention_counts must be positive and as many as mention_weights"
            )
        low, high = self.plain_fillers
        if not 0 <= low <= high or self.min_sentences < 0:
            raise ValueError(
                "StoryShape.plain_fillers must be 0 <= low <= high, min_sentences >= 0"
            )


# The default shape: ~220-token stories, 4-6 facts of 2-3 kinds, ~12 candidates per question.
# Mention counts are drawn independently of whether a fact is highlighted, so that frequency
# says nothing about the answer.
DEFAULT_SHAPE = StoryShape(
    name="default",
    plans=((3, (2,)), (2, (2, 3))),
    mention_counts=(1, 2, 3, 4),
    mention_weights=(0.3, 0.35, 0.25, 0.1),
    plain_fillers=(2, 4),
    min_sentences=10,
)
# The compact shape (the demo's): ~75-word stories (~80 tokens anonymized), 2-3 facts of one
# kind or 2 x 2 facts, at most two mentions per entity and little filler, ~7.5 candidates per
# question (maximum-frequency baseline ~0.15).
COMPACT_SHAPE = StoryShape(
    name="compact",
    plans=((1, (2, 3)), (2, (2,))),
    mention_counts=(1, 2),
    mention_weights=(0.6, 0.4),
    plain_fillers=(0, 1),
    min_sentences=4,
)
# The long shape: ~850-token stories (anonymized), as long as real news stories, 12-21 facts
# of 6-8 kinds and ~35 candidates per question: a reader must first find the sentence the
# question is about among many of the same kind (the glimpse readers' problem on real news).
LONG_SHAPE = StoryShape(
    name="long",
    plans=((7, (2, 3)), (8, (2,)), (6, (3,))),
    mention_counts=(1, 2, 3, 4, 5),
    mention_weights=(0.2, 0.3, 0.25, 0.15, 0.1),
    plain_fillers=(10, 16),
    min_sentences=40,
)
SHAPES: dict[str, StoryShape] = {
    shape.name: shape for shape in (DEFAULT_SHAPE, COMPACT_SHAPE, LONG_SHAPE)
}


@dataclass(frozen=True)
class Entity:
    """One entity of a story.

    Attributes:
        name: the full name (first and last name for people).
        label: the spaCy label the name should get (PERSON, GPE, ORG).
        short: the surname for people (used for later mentions), else ``None``.
    """

    name: str
    label: Label
    short: str | None = None


@dataclass(frozen=True)
class Mention:
    """One entity mention written by the generator: ``text[start:end]`` names ``entity``."""

    entity: int
    start: int
    end: int


@dataclass(frozen=True)
class SyntheticStory:
    """A generated story with the ground truth of what it says.

    Attributes:
        story: the story (its ``split`` is set).
        number: the story number ``n`` within its seed.
        entities: the story's entities; mentions index into it.
        article_mentions: every entity mention in ``story.article``, in order.
        highlight_mentions: for each highlight, every entity mention in it, in order.
        facts: ``(kind name, entity indices)`` for every fact stated in the article.
        highlighted: for each highlight, the index in ``facts`` of the fact it restates.
    """

    story: Story
    number: int
    entities: tuple[Entity, ...]
    article_mentions: tuple[Mention, ...]
    highlight_mentions: tuple[tuple[Mention, ...], ...]
    facts: tuple[tuple[str, tuple[int, ...]], ...]
    highlighted: tuple[int, ...]


def story_url(seed: int, number: int) -> str:
    """The made-up url of story ``number`` of ``seed`` (its SHA-1 hex is the story id)."""
    return f"{URL_PREFIX}/{seed}/{number}"


def split_of(number: int) -> SplitName:
    """The split of story ``number``: 8 of every 10 train, then one validation, one test."""
    return _SPLIT_PATTERN[number % len(_SPLIT_PATTERN)]
