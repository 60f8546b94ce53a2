"""The story generator: one seeded story from fact kinds, entities and filler sentences.

A story is made in five steps, each a small function below: plan the facts (which kinds, how
often), cast the entities into their slots, add filler sentences until every entity has its
mention count, render the article, restate some facts as highlights. Every random draw comes
from one ``random.Random`` seeded by ``(seed, number)`` and the draws happen in a fixed order,
so story ``n`` of seed ``s`` is the same on every machine and in every corpus size.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from attentive_reader.common.checks import check_positive
from attentive_reader.corpus.records import Story
from attentive_reader.corpus.synthetic.shapes import (
    DEFAULT_SHAPE,
    Entity,
    Mention,
    StoryShape,
    SyntheticStory,
    split_of,
    story_url,
)
from attentive_reader.corpus.synthetic.words import (
    AMOUNTS,
    CITIES,
    COUNTRIES,
    FACT_KINDS,
    FILLERS_NONE,
    FILLERS_ONE,
    FILLERS_TWO,
    FIRST_NAMES,
    ORG_STEMS,
    ORG_SUFFIXES,
    ROLES,
    SURNAMES,
    WHEN,
    FactKind,
    Label,
)

# ------------------------------------------------------------------------- the sentences


@dataclass(frozen=True)
class _Fact:
    """A fact of the story: its kind and the entity filling each slot."""

    kind: FactKind
    args: dict[str, int]


@dataclass(frozen=True)
class FactSentence:
    """The article sentence stating fact number ``fact``."""

    fact: int


@dataclass(frozen=True)
class OneEntityFiller:
    """A filler sentence that mentions one entity."""

    entity: int


@dataclass(frozen=True)
class TwoEntityFiller:
    """A filler sentence naming two people or organisations side by side, unrelated."""

    first: int
    second: int


@dataclass(frozen=True)
class PlainFiller:
    """A filler sentence without entities."""

    text: str


Sentence = FactSentence | OneEntityFiller | TwoEntityFiller | PlainFiller
Surface = Callable[[int], str]


class _Writer:
    """Builds a text from pieces while recording the character span of every mention."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.length = 0
        self.mentions: list[Mention] = []

    def text(self, piece: str) -> None:
        self.parts.append(piece)
        self.length += len(piece)

    def mention(self, entity: int, surface: str) -> None:
        self.mentions.append(Mention(entity, self.length, self.length + len(surface)))
        self.text(surface)

    def fill(
        self, template: str, args: dict[str, int], words: dict[str, str], surface: Surface
    ) -> None:
        """Write ``template`` with entity slots from ``args`` (rendered by ``surface``)."""
        # Split "{O} has named {P} as ..." into literal text and {slot} fields.
        rest = template
        while rest:
            open_at = rest.find("{")
            if open_at < 0:
                self.text(rest)
                break
            close_at = rest.index("}", open_at)
            self.text(rest[:open_at])
            slot = rest[open_at + 1 : close_at]
            if slot in args:
                entity = args[slot]
                self.mention(entity, surface(entity))
            else:
                self.text(words[slot])
            rest = rest[close_at + 1 :]

    def value(self) -> str:
        return "".join(self.parts)


def _words(rng: random.Random) -> dict[str, str]:
    """The plain words of one sentence (drawn whether its template uses them or not)."""
    return {
        "role": rng.choice(ROLES),
        "when": rng.choice(WHEN),
        "years": rng.choice(("two", "three", "four", "five")),
        "thousands": str(rng.randint(2, 40)),
        "amount": rng.choice(AMOUNTS),
    }


# ------------------------------------------------------------------------- the five steps


def _plan(rng: random.Random, shape: StoryShape) -> tuple[list[FactKind], list[FactKind]]:
    """Step 1: the fact kinds of the story and the plan (each kind stated >= twice), so every
    highlighted fact has a distractor of the same kind in the article."""
    num_kinds, repeat_choices = shape.plans[int(rng.random() * len(shape.plans))]
    kinds = rng.sample(FACT_KINDS, num_kinds)
    plan = [kind for kind in kinds for _ in range(_repeats(rng, repeat_choices))]
    rng.shuffle(plan)
    return kinds, plan


def _repeats(rng: random.Random, choices: tuple[int, ...]) -> int:
    # A single choice draws nothing, so the default shape's random stream is unchanged.
    return choices[0] if len(choices) == 1 else rng.choice(choices)


class _Cast:
    """Step 2: entities for the facts' slots, one fresh entity per slot; sometimes a place or
    organisation already used by a fact of another kind is reused, so that the relation words
    matter. No two facts share two entities: a fact's entities meet in one sentence."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.entities: list[Entity] = []
        self.used_firsts: set[str] = set()
        self.used_surnames: set[str] = set()
        self.used_names: set[str] = set()
        self.kinds_of: dict[int, set[str]] = {}
        self.together: set[tuple[int, int]] = set()

    def new_entity(self, label: Label) -> int:
        rng = self.rng
        while True:
            if label == "PERSON":
                first, last = rng.choice(FIRST_NAMES), rng.choice(SURNAMES)
                if first in self.used_firsts or last in self.used_surnames:
                    continue
                self.used_firsts.add(first)
                self.used_surnames.add(last)
                entity = Entity(f"{first} {last}", "PERSON", last)
            elif label == "GPE":
                entity = Entity(rng.choice(CITIES if rng.random() < 0.7 else COUNTRIES), "GPE")
            else:
                stem = rng.choice(ORG_STEMS)
                if any(name.startswith(stem + " ") for name in self.used_names):
                    continue
                entity = Entity(f"{stem} {rng.choice(ORG_SUFFIXES)}", "ORG")
            if entity.name not in self.used_names:
                self.used_names.add(entity.name)
                self.entities.append(entity)
                return len(self.entities) - 1

    def fact(self, kind: FactKind) -> _Fact:
        args: dict[str, int] = {}
        for slot, label in kind.slots:
            reusable = [
                i
                for i, e in enumerate(self.entities)
                if e.label == label
                and label != "PERSON"
                and kind.name not in self.kinds_of.get(i, set())
                and i not in args.values()
                and not any((min(i, j), max(i, j)) in self.together for j in args.values())
            ]
            if reusable and self.rng.random() < 0.15:
                args[slot] = self.rng.choice(reusable)
            else:
                args[slot] = self.new_entity(label)
            self.kinds_of.setdefault(args[slot], set()).add(kind.name)
        self.together |= {(a, b) for a in args.values() for b in args.values() if a < b}
        return _Fact(kind, args)


def _sentences(
    rng: random.Random,
    shape: StoryShape,
    entities: Sequence[Entity],
    facts: Sequence[_Fact],
    together: set[tuple[int, int]],
) -> list[Sentence]:
    """Step 3: the article's sentences, shuffled. Each entity gets a total mention count drawn
    independently of its facts; the missing mentions come from fillers naming one entity, or
    two people or organisations side by side. Plain filler pads short stories."""
    in_facts = Counter(e for fact in facts for e in fact.args.values())
    extra: list[int] = []
    for index in range(len(entities)):
        total = rng.choices(shape.mention_counts, shape.mention_weights)[0]
        extra += [index] * max(0, total - in_facts[index])
    rng.shuffle(extra)
    sentences: list[Sentence] = [FactSentence(i) for i in range(len(facts))]
    # Pairs already side by side (in a fact, or an earlier filler) are not paired again, so a
    # fact's entities occur together in exactly one sentence.
    pairs = set(together)
    while extra:
        first = extra.pop()
        partner = next(
            (
                e
                for e in extra
                if e != first
                and entities[e].label != "GPE"
                and entities[first].label != "GPE"
                and (min(e, first), max(e, first)) not in pairs
            ),
            None,
        )
        if partner is not None and rng.random() < 0.25:
            extra.remove(partner)
            pairs.add((min(first, partner), max(first, partner)))
            sentences.append(TwoEntityFiller(first, partner))
        else:
            sentences.append(OneEntityFiller(first))
    plain = rng.sample(FILLERS_NONE, len(FILLERS_NONE))
    budget = rng.randint(*shape.plain_fillers) + max(0, shape.min_sentences - len(sentences))
    sentences += [PlainFiller(text) for text in plain[:budget]]
    rng.shuffle(sentences)
    return sentences


class _Article:
    """Step 4: render the article, one method per kind of sentence. People are named in full
    at their first mention, then mostly by surname."""

    def __init__(
        self,
        rng: random.Random,
        entities: Sequence[Entity],
        facts: Sequence[_Fact],
        kinds: Sequence[FactKind],
    ) -> None:
        self.rng, self.entities, self.facts = rng, entities, facts
        self.writer = _Writer()
        self.introduced: set[int] = set()
        self.fact_words = [_words(rng) for _ in facts]
        # Facts of one kind get different article templates (a kind occurs at most 3 times).
        self.templates = {kind.name: rng.sample(kind.article, len(kind.article)) for kind in kinds}
        # Filler templates are used without repetition until a pool runs out.
        self.filler_pools: dict[str, list[str]] = {}

    def surface(self, entity: int) -> str:
        e = self.entities[entity]
        if e.short is None:
            return e.name
        if entity in self.introduced and self.rng.random() < 0.8:
            return e.short
        self.introduced.add(entity)
        return e.name

    def _filler(self, pool_name: str, pool: Sequence[str]) -> str:
        if not self.filler_pools.get(pool_name):
            self.filler_pools[pool_name] = self.rng.sample(pool, len(pool))
        return self.filler_pools[pool_name].pop()

    def fact(self, sentence: FactSentence) -> None:
        fact = self.facts[sentence.fact]
        template = self.templates[fact.kind.name].pop()
        self.writer.fill(template, fact.args, self.fact_words[sentence.fact], self.surface)

    def one(self, sentence: OneEntityFiller) -> None:
        label = self.entities[sentence.entity].label
        template = self._filler(label, FILLERS_ONE[label])
        self.writer.fill(template, {"X": sentence.entity}, _words(self.rng), self.surface)

    def two(self, sentence: TwoEntityFiller) -> None:
        template = self._filler("two", FILLERS_TWO)
        args = {"X": sentence.first, "Y": sentence.second}
        self.writer.fill(template, args, _words(self.rng), self.surface)

    def render(self, sentences: Sequence[Sentence]) -> tuple[str, tuple[Mention, ...]]:
        in_paragraph = 0
        for i, sentence in enumerate(sentences):
            if i > 0:
                # Paragraphs of one or two sentences, as in wire copy.
                if in_paragraph >= 2 or self.rng.random() < 0.5:
                    self.writer.text("\n\n")
                    in_paragraph = 0
                else:
                    self.writer.text(" ")
            in_paragraph += 1
            match sentence:
                case FactSentence():
                    self.fact(sentence)
                case OneEntityFiller():
                    self.one(sentence)
                case TwoEntityFiller():
                    self.two(sentence)
                case PlainFiller():
                    self.writer.text(sentence.text)
        return self.writer.value(), tuple(self.writer.mentions)


def _highlights(
    rng: random.Random,
    entities: Sequence[Entity],
    facts: Sequence[_Fact],
    fact_words: Sequence[dict[str, str]],
) -> tuple[list[int], list[str], list[tuple[Mention, ...]]]:
    """Step 5: 2-4 of the facts, restated with highlight templates (full names)."""
    chosen = sorted(rng.sample(range(len(facts)), min(len(facts), rng.randint(2, 4))))
    rng.shuffle(chosen)
    texts: list[str] = []
    mentions: list[tuple[Mention, ...]] = []
    for fact_index in chosen:
        fact = facts[fact_index]
        writer = _Writer()
        writer.fill(
            rng.choice(fact.kind.highlight),
            fact.args,
            fact_words[fact_index],
            lambda entity: entities[entity].name,
        )
        text = writer.value()
        texts.append(text[:1].upper() + text[1:])
        mentions.append(tuple(writer.mentions))
    return chosen, texts, mentions


def generate_story(seed: int, number: int, shape: StoryShape = DEFAULT_SHAPE) -> SyntheticStory:
    """Generate story ``number`` of ``seed`` (deterministic; independent of other stories).

    Args:
        seed: the corpus seed.
        number: the story number.
        shape: the story size (``DEFAULT_SHAPE``, or ``COMPACT_SHAPE`` for short stories).

    Raises:
        ValueError: if ``number`` is negative.
    """
    if number < 0:
        raise ValueError(f"story number must be >= 0, got {number}")
    rng = random.Random(f"attentive-reader-synthetic:{seed}:{number}")
    kinds, plan = _plan(rng, shape)
    cast = _Cast(rng)
    facts = [cast.fact(kind) for kind in plan]
    entities = cast.entities
    sentences = _sentences(rng, shape, entities, facts, cast.together)
    article = _Article(rng, entities, facts, kinds)
    text, article_mentions = article.render(sentences)
    chosen, highlights, highlight_mentions = _highlights(rng, entities, facts, article.fact_words)

    url = story_url(seed, number)
    story = Story(
        id=hashlib.sha1(url.encode("utf-8")).hexdigest(),
        article=text,
        highlights=tuple(highlights),
        url=url,
        source=f"synthetic:seed={seed}:story={number}",
        split=split_of(number),
    )
    return SyntheticStory(
        story=story,
        number=number,
        entities=tuple(entities),
        article_mentions=article_mentions,
        highlight_mentions=tuple(highlight_mentions),
        facts=tuple((fact.kind.name, tuple(fact.args.values())) for fact in facts),
        highlighted=tuple(chosen),
    )


def generate_corpus(
    num_stories: int, seed: int = 0, shape: StoryShape = DEFAULT_SHAPE
) -> list[SyntheticStory]:
    """Stories ``0 .. num_stories - 1`` of ``seed``, of the given ``shape``.

    Raises:
        ValueError: if ``num_stories`` is not positive.
    """
    check_positive(num_stories=num_stories)
    return [generate_story(seed, number, shape) for number in range(num_stories)]
