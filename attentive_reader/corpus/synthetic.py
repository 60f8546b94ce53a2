"""The built-in synthetic news corpus: seeded, news-like stories in the CNN ``.story`` format.

Every story relates a handful of people, places and organisations through *facts* (an
appointment, a contract, a meeting, a takeover, a move, ...). Each fact is stated in the
article in exactly one sentence; every fact kind that appears in a story appears at least
twice (the second instance, about other entities, is the distractor). Filler sentences add
further mentions of random entities (people later by surname) and plain news boilerplate.
The highlights restate some of the facts with paraphrase templates that share none of the
article sentence's relation words.

The corpus is built so that reading is needed and counting is not: how often an entity is
mentioned is drawn independently of whether its fact is highlighted, so the answer of a
cloze question is the most frequent entity of the article about as often as a random
candidate is (see ``frequency_baselines``), while a reader that finds the sentence stating the
highlight's fact can always answer.

Story ``n`` of seed ``s`` depends only on ``(s, n)``: a larger corpus extends a smaller one.
Splits are fixed by the story number (a repeating pattern of train / validation / test).
The generator records every entity mention it writes (``SyntheticStory``), so tests can
compute baselines without a spaCy model, and ``build_ruler_pipeline`` gives a spaCy pipeline
that recognises every name the generator can write when no statistical model is installed.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from attentive_reader.corpus.records import Story

if TYPE_CHECKING:
    from spacy.language import Language

GENERATOR_VERSION = 1
URL_PREFIX = "https://synthetic.attentive-reader.invalid"
URL_LIST_FILES = {"train": "all_train.txt", "validation": "all_val.txt", "test": "all_test.txt"}

Label = Literal["PERSON", "GPE", "ORG"]
SplitName = Literal["train", "validation", "test"]

# --------------------------------------------------------------------------------------------
# Name inventories, kept to the names that en_core_web_sm tags correctly in the generator's
# own sentences (measured on 2,500 stories: first names >= 0.97; surnames >= 0.95 after a
# first name and >= 0.93 alone; the organisation suffixes >= 0.91; places >= 0.97). First
# names, surnames, organisation stems and places are pairwise disjoint, and none of them
# occurs capitalised in the template text, so a name means one entity and the entity ruler's
# surname-only pattern fires only on names.
# --------------------------------------------------------------------------------------------

FIRST_NAMES: tuple[str, ...] = (
    "Aaron",
    "Adam",
    "Alan",
    "Albert",
    "Alice",
    "Amy",
    "Andrea",
    "Andrew",
    "Angela",
    "Anna",
    "Anthony",
    "Ashley",
    "Barbara",
    "Benjamin",
    "Betty",
    "Brenda",
    "Brian",
    "Carlos",
    "Carol",
    "Catherine",
    "Charles",
    "Claire",
    "Cynthia",
    "Daniel",
    "David",
    "Deborah",
    "Dennis",
    "Diana",
    "Donald",
    "Donna",
    "Edward",
    "Elizabeth",
    "Emma",
    "Eric",
    "Fiona",
    "Frank",
    "Gabriel",
    "Gary",
    "George",
    "Hannah",
    "Henry",
    "Jacob",
    "James",
    "Janet",
    "Jason",
    "Jeffrey",
    "Jennifer",
    "Jerry",
    "Jessica",
    "Joanna",
    "John",
    "Jonathan",
    "Joseph",
    "Joshua",
    "Joyce",
    "Julie",
    "Karen",
    "Kenneth",
    "Kevin",
    "Larry",
    "Linda",
    "Lisa",
    "Margaret",
    "Maria",
    "Mark",
    "Martin",
    "Matthew",
    "Melissa",
    "Michael",
    "Monica",
    "Nancy",
    "Nathan",
    "Nicholas",
    "Nicole",
    "Pamela",
    "Patrick",
    "Paul",
    "Peter",
    "Rachel",
    "Raymond",
    "Richard",
    "Robert",
    "Ruth",
    "Ryan",
    "Samuel",
    "Sarah",
    "Sharon",
    "Shirley",
    "Stephen",
    "Steven",
    "Susan",
    "Thomas",
    "Timothy",
    "Victoria",
    "William",
)

SURNAMES: tuple[str, ...] = (
    "Abernathy",
    "Allen",
    "Alvarez",
    "Anderson",
    "Armstrong",
    "Arnold",
    "Barrington",
    "Bennett",
    "Boyd",
    "Brennan",
    "Chavez",
    "Clark",
    "Coleman",
    "Cruz",
    "Davis",
    "Duncan",
    "Edwards",
    "Elliott",
    "Eriksen",
    "Esposito",
    "Fitzgerald",
    "Garcia",
    "Gibson",
    "Goldberg",
    "Gomez",
    "Gonzalez",
    "Gordon",
    "Graham",
    "Hamilton",
    "Harris",
    "Harrison",
    "Hayes",
    "Holmes",
    "Howard",
    "Jackson",
    "Jankowski",
    "Johnson",
    "Kelley",
    "Kelly",
    "Kennedy",
    "Kowalski",
    "Lawrence",
    "Lawson",
    "Markovic",
    "Martinez",
    "McAllister",
    "McCormick",
    "Miller",
    "Morales",
    "Moreau",
    "Murray",
    "Nakamura",
    "Nelson",
    "Nichols",
    "Olsen",
    "Owens",
    "Patterson",
    "Perez",
    "Perry",
    "Peterson",
    "Powell",
    "Quintero",
    "Ramirez",
    "Reinhardt",
    "Richardson",
    "Roberts",
    "Robinson",
    "Rosenberg",
    "Russell",
    "Silva",
    "Sorensen",
    "Steinberg",
    "Stephens",
    "Stewart",
    "Sullivan",
    "Taylor",
    "Tucker",
    "Watkins",
    "Watson",
    "Weinstein",
    "Whitaker",
    "Williams",
    "Wright",
)

CITIES: tuple[str, ...] = (
    "Amsterdam",
    "Athens",
    "Atlanta",
    "Auckland",
    "Bangkok",
    "Barcelona",
    "Beijing",
    "Berlin",
    "Birmingham",
    "Bogota",
    "Boston",
    "Brussels",
    "Cairo",
    "Chicago",
    "Cologne",
    "Dallas",
    "Denver",
    "Detroit",
    "Dubai",
    "Dublin",
    "Frankfurt",
    "Geneva",
    "Hamburg",
    "Hanoi",
    "Helsinki",
    "Houston",
    "Istanbul",
    "Jakarta",
    "Johannesburg",
    "Kyoto",
    "Lagos",
    "Lima",
    "Lisbon",
    "London",
    "Los Angeles",
    "Madrid",
    "Manila",
    "Melbourne",
    "Miami",
    "Milan",
    "Montreal",
    "Moscow",
    "Mumbai",
    "Nairobi",
    "New Delhi",
    "Osaka",
    "Ottawa",
    "Paris",
    "Philadelphia",
    "Prague",
    "Rome",
    "San Francisco",
    "Sao Paulo",
    "Seattle",
    "Seoul",
    "Shanghai",
    "Singapore",
    "Stockholm",
    "Sydney",
    "Taipei",
    "Tokyo",
    "Toronto",
    "Vancouver",
    "Venice",
    "Vienna",
    "Warsaw",
    "Zagreb",
    "Zurich",
)

COUNTRIES: tuple[str, ...] = (
    "Argentina",
    "Australia",
    "Austria",
    "Belgium",
    "Brazil",
    "Canada",
    "Chile",
    "China",
    "Colombia",
    "Denmark",
    "Egypt",
    "Finland",
    "France",
    "Germany",
    "Ghana",
    "Greece",
    "Hungary",
    "India",
    "Indonesia",
    "Ireland",
    "Italy",
    "Japan",
    "Kenya",
    "Malaysia",
    "Mexico",
    "Morocco",
    "New Zealand",
    "Norway",
    "Peru",
    "Poland",
    "Portugal",
    "Romania",
    "Spain",
    "Sweden",
    "Switzerland",
    "Thailand",
    "Vietnam",
)

ORG_STEMS: tuple[str, ...] = (
    "Alderton",
    "Avalon",
    "Beacon",
    "Blackmoor",
    "Bramwell",
    "Brightwater",
    "Carrow",
    "Castleton",
    "Dunmore",
    "Greystone",
    "Lockwood",
    "Newbury",
    "Norcross",
    "Northgate",
    "Norwood",
    "Oakhurst",
    "Pinewood",
    "Redfern",
    "Sandford",
    "Thornbury",
    "Underhill",
    "Waverley",
    "Whitmore",
    "Wyndham",
)

ORG_SUFFIXES: tuple[str, ...] = (
    "Airlines",
    "Airways",
    "Bank",
    "Communications",
    "Group",
    "Industries",
    "Logistics",
    "Motors",
    "Pharmaceuticals",
)

ROLES: tuple[str, ...] = (
    "chief executive",
    "finance director",
    "chairman",
    "head of operations",
    "chief technology officer",
    "general counsel",
    "head of research",
    "managing director",
)

WHEN: tuple[str, ...] = (
    "on Monday",
    "on Tuesday",
    "on Wednesday",
    "on Thursday",
    "on Friday",
    "last week",
    "earlier this month",
    "this week",
    "late on Sunday",
)

# --------------------------------------------------------------------------------------------
# Fact kinds. Each kind has a signature (the labels of its arguments, named by slot), article
# templates (one is used, in one sentence) and highlight templates that paraphrase them with
# other words. Slots: P/Q persons, O/R organisations, G places; {role}, {when}, {years},
# {amount} are plain words. Arguments are referenced as {P}, {Q}, {O}, {R}, {G}.
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FactKind:
    """One kind of fact: its argument slots and its article and highlight wordings."""

    name: str
    slots: tuple[tuple[str, Label], ...]
    article: tuple[str, ...]
    highlight: tuple[str, ...]


FACT_KINDS: tuple[FactKind, ...] = (
    FactKind(
        "appointment",
        (("P", "PERSON"), ("O", "ORG")),
        (
            "{O} has named {P} as its new {role}, the board said {when}.",
            "{P} was appointed {role} of {O} {when} after a lengthy search.",
            "The board of {O} confirmed {when} that {P} will serve as {role}.",
        ),
        (
            "{P} becomes the new {role} of {O}",
            "{O} picks {P} for the top job of {role}",
            "{P} is handed the {role} post at {O}",
        ),
    ),
    FactKind(
        "contract",
        (("P", "PERSON"), ("O", "ORG")),
        (
            "{P} signed a {years}-year contract with {O} {when}.",
            "{O} said {when} that {P} had agreed a {years}-year deal worth {amount}.",
            "{P} agreed {when} to a {years}-year extension with {O}.",
        ),
        (
            "{P} commits to {O} for {years} more years",
            "{O} secures the services of {P} on a long-term deal",
            "New {years}-year arrangement ties {P} to {O}",
        ),
    ),
    FactKind(
        "meeting",
        (("P", "PERSON"), ("Q", "PERSON"), ("G", "GPE")),
        (
            "{P} held talks with {Q} in {G} {when}.",
            "{P} and {Q} met behind closed doors in {G} {when}.",
            "In {G}, {P} sat down with {Q} for more than two hours.",
        ),
        (
            "{Q} and {P} discuss their differences face to face in {G}",
            "{G} hosts a private summit between {P} and {Q}",
            "{P} confers with {Q} during a visit to {G}",
        ),
    ),
    FactKind(
        "takeover",
        (("O", "ORG"), ("R", "ORG")),
        (
            "{O} has agreed to buy {R} for {amount}.",
            "{O} completed its takeover of {R} {when}.",
            "Shareholders of {R} voted {when} to accept an offer from {O}.",
        ),
        (
            "{R} is taken over by {O}",
            "{O} snaps up its rival {R} in a deal worth {amount}",
            "{R} falls into the hands of {O}",
        ),
    ),
    FactKind(
        "relocation",
        (("O", "ORG"), ("G", "GPE")),
        (
            "{O} announced {when} that it would move its headquarters to {G}.",
            "{O} is shifting its main office to {G}, according to a statement.",
            "Staff at {O} were told {when} that the head office will relocate to {G}.",
        ),
        (
            "{G} will become the new home of {O}",
            "{O} transfers its base of operations to {G}",
            "{O} sets up its new base in {G}",
        ),
    ),
    FactKind(
        "visit",
        (("P", "PERSON"), ("G", "GPE")),
        (
            "{P} is due to travel to {G} {when} for a series of meetings.",
            "{P} arrived in {G} {when} for a three-day trip.",
            "{P} flew to {G} {when} at short notice.",
        ),
        (
            "{G} welcomes {P} on an official tour",
            "{P} makes the journey to {G}",
            "{P} lands in {G} ahead of key negotiations",
        ),
    ),
    FactKind(
        "lawsuit",
        (("O", "ORG"), ("P", "PERSON")),
        (
            "{O} has filed a lawsuit against {P} over unpaid fees.",
            "Court papers show that {P} is being sued by {O}.",
            "{O} accused {P} of breaching a confidentiality agreement in a complaint filed {when}.",
        ),
        (
            "{P} faces legal action brought by {O}",
            "{O} takes {P} to court",
            "{P} is the target of a claim from {O}",
        ),
    ),
    FactKind(
        "transfer",
        (("P", "PERSON"), ("O", "ORG"), ("R", "ORG")),
        (
            "{P} left {O} {when} to join {R}.",
            "{R} has hired {P}, who spent the last {years} years at {O}.",
            "After {years} years with {O}, {P} is moving to {R}.",
        ),
        (
            "{R} lures {P} away from {O}",
            "{P} quits {O} and heads to {R}",
            "{O} loses {P} to {R}",
        ),
    ),
    FactKind(
        "plant",
        (("O", "ORG"), ("G", "GPE")),
        (
            "{O} will open a new factory in {G} next year.",
            "{O} said {when} that it plans to build a plant in {G}.",
            "Construction of a new {O} facility in {G} is set to begin in the spring.",
        ),
        (
            "{O} to create hundreds of jobs with a site in {G}",
            "{G} chosen as the site of a production line for {O}",
            "{O} invests in manufacturing in {G}",
        ),
    ),
)

# Fillers: sentences that mention one or two entities without relating them, or none.
FILLERS_ONE: dict[Label, tuple[str, ...]] = {
    "PERSON": (
        "{X} did not respond to a request for comment.",
        "A spokesperson for {X} declined to give further details.",
        "{X} has worked in the industry for more than {years} years.",
        "Colleagues describe {X} as careful and private.",
        "{X} said the decision had not been an easy one.",
        "Speaking to reporters, {X} said more would be said in due course.",
    ),
    "ORG": (
        "Shares in {X} rose slightly after the news.",
        "{X} has faced questions about its finances in recent months.",
        "A statement from {X} gave no further details.",
        "{X} employs around {thousands},000 people.",
        "Analysts have long watched {X} closely.",
    ),
    "GPE": (
        "Officials in {X} described the mood as calm.",
        "Heavy rain in {X} delayed several events on the same day.",
        "{X} has seen a number of similar announcements this year.",
        "Hotels in {X} were reported to be fully booked.",
    ),
}
# Two people or organisations side by side, without a relation between them.
FILLERS_TWO: tuple[str, ...] = (
    "{X} declined to comment, as did {Y}.",
    "A source close to {X} said there had been no contact with {Y}.",
    "{X} would not comment, and {Y} did not respond to messages.",
)
FILLERS_NONE: tuple[str, ...] = (
    "The announcement came after weeks of speculation.",
    "Analysts said the news had been widely expected.",
    "Further details are expected to be released in the coming days.",
    "The figures were not made public.",
    "Reporters gathered outside the building throughout the afternoon.",
    "Several people familiar with the matter confirmed the account.",
    "The timing of the announcement surprised some observers.",
    "It was not immediately clear what would happen next.",
    "A press conference had been planned but was later called off.",
    "Some investors had pushed for a decision before the end of the quarter.",
    "The negotiations were described as difficult but constructive.",
    "Details of the arrangement were first reported by local newspapers.",
    "Many in the industry said the outcome could shape the sector for years.",
    "A formal statement is expected once the paperwork has been completed.",
    "Critics questioned whether the plan had been properly thought through.",
    "The news was welcomed by staff, according to an internal memo.",
)

AMOUNTS: tuple[str, ...] = (
    "an undisclosed sum",
    "about $40 million",
    "roughly $1.2 billion",
    "$350 million",
    "nearly $900 million",
)

# How many times an entity is mentioned in the article, drawn independently of whether its
# fact is highlighted (so that frequency says nothing about the answer).
_MENTION_COUNTS = (1, 2, 3, 4)
_MENTION_WEIGHTS = (0.3, 0.35, 0.25, 0.1)


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
DEFAULT_SHAPE = StoryShape(
    name="default",
    plans=((3, (2,)), (2, (2, 3))),
    mention_counts=_MENTION_COUNTS,
    mention_weights=_MENTION_WEIGHTS,
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
SHAPES: dict[str, StoryShape] = {shape.name: shape for shape in (DEFAULT_SHAPE, COMPACT_SHAPE)}

_SPLIT_PATTERN: tuple[SplitName, ...] = ("train",) * 8 + ("validation", "test")


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


class _Writer:
    """Builds a text from pieces while recording the character span of every mention."""

    def __init__(self, entities: Sequence[Entity]) -> None:
        self.entities = entities
        self.parts: list[str] = []
        self.length = 0
        self.mentions: list[Mention] = []

    def text(self, piece: str) -> None:
        self.parts.append(piece)
        self.length += len(piece)

    def mention(self, entity: int, surface: str) -> None:
        self.mentions.append(Mention(entity, self.length, self.length + len(surface)))
        self.text(surface)

    def fill(self, template: str, args: dict[str, int], words: dict[str, str], surface) -> None:
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


def _capitalize_first(sentence: str) -> str:
    return sentence[:1].upper() + sentence[1:]


def _repeats(rng: random.Random, choices: tuple[int, ...]) -> int:
    # A single choice draws nothing, so the default shape's random stream is unchanged.
    return choices[0] if len(choices) == 1 else rng.choice(choices)


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

    # 1. Fact kinds (default: 4-6 facts of 2-3 distinct kinds), each kind stated at least
    #    twice, so every highlighted fact has a distractor of the same kind in the article.
    num_kinds, repeat_choices = shape.plans[int(rng.random() * len(shape.plans))]
    kinds = rng.sample(FACT_KINDS, num_kinds)
    plan = [kind for kind in kinds for _ in range(_repeats(rng, repeat_choices))]
    rng.shuffle(plan)

    # 2. Entities, one fresh entity per slot; sometimes a place or organisation already used
    #    by a fact of another kind is reused, so that the relation words matter.
    entities: list[Entity] = []
    used_surnames: set[str] = set()
    used_firsts: set[str] = set()
    used_names: set[str] = set()
    kinds_of: dict[int, set[str]] = {}
    together: set[tuple[int, int]] = set()

    def new_entity(label: Label) -> int:
        while True:
            if label == "PERSON":
                first, last = rng.choice(FIRST_NAMES), rng.choice(SURNAMES)
                if first in used_firsts or last in used_surnames:
                    continue
                used_firsts.add(first)
                used_surnames.add(last)
                entity = Entity(f"{first} {last}", "PERSON", last)
            elif label == "GPE":
                entity = Entity(rng.choice(CITIES if rng.random() < 0.7 else COUNTRIES), "GPE")
            else:
                stem = rng.choice(ORG_STEMS)
                if any(name.startswith(stem + " ") for name in used_names):
                    continue
                entity = Entity(f"{stem} {rng.choice(ORG_SUFFIXES)}", "ORG")
            if entity.name not in used_names:
                used_names.add(entity.name)
                entities.append(entity)
                return len(entities) - 1

    facts: list[tuple[FactKind, dict[str, int]]] = []
    for kind in plan:
        args: dict[str, int] = {}
        for slot, label in kind.slots:
            reusable = [
                i
                for i, e in enumerate(entities)
                if e.label == label
                and label != "PERSON"
                and kind.name not in kinds_of.get(i, set())
                and i not in args.values()
                # No two facts share two entities: a fact's entities meet in one sentence.
                and not any((min(i, j), max(i, j)) in together for j in args.values())
            ]
            if reusable and rng.random() < 0.15:
                args[slot] = rng.choice(reusable)
            else:
                args[slot] = new_entity(label)
            kinds_of.setdefault(args[slot], set()).add(kind.name)
        together |= {(a, b) for a in args.values() for b in args.values() if a < b}
        facts.append((kind, args))

    # 3. Extra mentions: each entity gets a total mention count drawn independently of its
    #    facts; the missing mentions come from filler sentences naming one entity, or two
    #    people or organisations side by side. Plain filler pads short stories.
    in_facts = Counter(e for _, args in facts for e in args.values())
    extra: list[int] = []
    for index in range(len(entities)):
        total = rng.choices(shape.mention_counts, shape.mention_weights)[0]
        extra += [index] * max(0, total - in_facts[index])
    rng.shuffle(extra)
    sentences: list[tuple[str, object]] = [("fact", i) for i in range(len(facts))]
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
            sentences.append(("two", (first, partner)))
        else:
            sentences.append(("one", first))
    plain = rng.sample(FILLERS_NONE, len(FILLERS_NONE))
    budget = rng.randint(*shape.plain_fillers) + max(0, shape.min_sentences - len(sentences))
    sentences += [("none", text) for text in plain[:budget]]
    rng.shuffle(sentences)

    # 4. Render the article: people by full name at first mention, then mostly by surname.
    introduced: set[int] = set()

    def surface(entity: int) -> str:
        e = entities[entity]
        if e.short is None:
            return e.name
        if entity in introduced and rng.random() < 0.8:
            return e.short
        introduced.add(entity)
        return e.name

    def words() -> dict[str, str]:
        return {
            "role": rng.choice(ROLES),
            "when": rng.choice(WHEN),
            "years": rng.choice(("two", "three", "four", "five")),
            "thousands": str(rng.randint(2, 40)),
            "amount": rng.choice(AMOUNTS),
        }

    writer = _Writer(entities)
    fact_words = [words() for _ in facts]
    # Facts of one kind get different article templates (a kind occurs at most 3 times).
    article_templates = {kind.name: rng.sample(kind.article, len(kind.article)) for kind in kinds}
    # Filler templates are used without repetition until a pool runs out.
    filler_pools: dict[str, list[str]] = {}

    def filler(pool_name: str, pool: Sequence[str]) -> str:
        if not filler_pools.get(pool_name):
            filler_pools[pool_name] = rng.sample(pool, len(pool))
        return filler_pools[pool_name].pop()

    sentences_in_paragraph = 0
    for i, (kind_of_sentence, payload) in enumerate(sentences):
        if i > 0:
            # Paragraphs of one or two sentences, as in wire copy.
            if sentences_in_paragraph >= 2 or rng.random() < 0.5:
                writer.text("\n\n")
                sentences_in_paragraph = 0
            else:
                writer.text(" ")
        sentences_in_paragraph += 1
        if kind_of_sentence == "fact":
            kind, args = facts[payload]  # type: ignore[index]
            template = article_templates[kind.name].pop()
            writer.fill(template, args, fact_words[payload], surface)  # type: ignore[index]
        elif kind_of_sentence == "one":
            entity = payload  # type: ignore[assignment]
            label = entities[entity].label  # type: ignore[index]
            template = filler(label, FILLERS_ONE[label])
            writer.fill(template, {"X": entity}, words(), surface)  # type: ignore[dict-item]
        elif kind_of_sentence == "two":
            x, y = payload  # type: ignore[misc]
            writer.fill(filler("two", FILLERS_TWO), {"X": x, "Y": y}, words(), surface)
        else:
            writer.text(str(payload))
    article = writer.value()
    article_mentions = tuple(writer.mentions)

    # 5. Highlights: 2-4 of the facts, restated with highlight templates (full names).
    chosen = sorted(rng.sample(range(len(facts)), min(len(facts), rng.randint(2, 4))))
    rng.shuffle(chosen)
    highlights: list[str] = []
    highlight_mentions: list[tuple[Mention, ...]] = []
    for fact_index in chosen:
        kind, args = facts[fact_index]
        h = _Writer(entities)
        h.fill(
            rng.choice(kind.highlight),
            args,
            fact_words[fact_index],
            lambda entity: entities[entity].name,
        )
        text = h.value()
        highlights.append(_capitalize_first(text))
        highlight_mentions.append(tuple(h.mentions))

    url = story_url(seed, number)
    story = Story(
        id=hashlib.sha1(url.encode("utf-8")).hexdigest(),
        article=article,
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
        facts=tuple((kind.name, tuple(args.values())) for kind, args in facts),
        highlighted=tuple(chosen),
    )


def generate_corpus(
    num_stories: int, seed: int = 0, shape: StoryShape = DEFAULT_SHAPE
) -> list[SyntheticStory]:
    """Stories ``0 .. num_stories - 1`` of ``seed``, of the given ``shape``.

    Raises:
        ValueError: if ``num_stories`` is not positive.
    """
    if num_stories < 1:
        raise ValueError(f"num_stories must be at least 1, got {num_stories}")
    return [generate_story(seed, number, shape) for number in range(num_stories)]


def format_story(story: Story) -> str:
    """The CNN ``.story`` text: article paragraphs, then one ``@highlight`` block each."""
    blocks = [story.article]
    for highlight in story.highlights:
        blocks += ["@highlight", highlight]
    return "\n\n".join(blocks) + "\n"


def write_corpus(
    out_dir: str | Path,
    stories: Sequence[SyntheticStory],
    seed: int,
    shape: StoryShape = DEFAULT_SHAPE,
) -> dict:
    """Write ``out_dir/stories/<id>.story``, ``out_dir/url_lists/all_{train,val,test}.txt``
    and ``out_dir/synthetic.json`` (generator version, seed, counts per split, and the shape's
    name when it is not the default).

    The url lists fix the splits for ``attentive-reader preprocess --url-lists``. Existing
    files with the same names are overwritten.

    Returns:
        The contents of ``synthetic.json``.
    """
    out = Path(out_dir)
    (out / "stories").mkdir(parents=True, exist_ok=True)
    (out / "url_lists").mkdir(parents=True, exist_ok=True)
    urls: dict[str, list[str]] = {split: [] for split in URL_LIST_FILES}
    for item in stories:
        story = item.story
        (out / "stories" / f"{story.id}.story").write_text(
            format_story(story), encoding="utf-8", newline="\n"
        )
        urls[story.split or "train"].append(story.url or "")
    for split, name in URL_LIST_FILES.items():
        lines = "".join(url + "\n" for url in urls[split])
        (out / "url_lists" / name).write_text(lines, encoding="utf-8", newline="\n")
    info = {
        "generator": "attentive_reader.corpus.synthetic",
        "generator_version": GENERATOR_VERSION,
        "seed": seed,
        "stories": len(stories),
        "splits": {split: len(urls[split]) for split in URL_LIST_FILES},
    }
    if shape != DEFAULT_SHAPE:
        info["shape"] = shape.name
    (out / "synthetic.json").write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    return info


# --------------------------------------------------------------------------------------------
# Ground-truth cloze questions and the frequency baselines.
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FrequencyBaselines:
    """How much counting tells about the answer, on the generator's own ground truth.

    Questions are made as the pipeline makes them: one per entity mention in a highlight whose
    entity also occurs in the article.

    Attributes:
        questions: number of questions.
        max_frequency: accuracy of predicting the most frequent entity of the article (ties
            broken by first occurrence, as ``Counter.most_common`` does).
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
    """Measure the frequency baselines on the generator's ground truth (no spaCy needed)."""
    n = max_hits = exclusive_hits = among_top = 0
    chance = candidates_total = 0.0
    for item in stories:
        counts = Counter(m.entity for m in item.article_mentions)  # insertion = first occurrence
        ranked = counts.most_common()
        top = ranked[0][1]
        top_set = {e for e, c in ranked if c == top}
        for answer, others in ground_truth_questions(item):
            n += 1
            max_hits += ranked[0][0] == answer
            exclusive = [e for e, _ in ranked if e not in others]
            exclusive_hits += bool(exclusive) and exclusive[0] == answer
            among_top += answer in top_set
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


# --------------------------------------------------------------------------------------------
# A spaCy pipeline that knows the generator's names, for machines without a statistical model.
# --------------------------------------------------------------------------------------------


def ruler_patterns() -> list[dict]:
    """Entity ruler patterns for every name the generator can write.

    People: any first name followed by any surname, and a surname alone (later mentions);
    organisations: any stem followed by any suffix; places: each city and country.
    """
    patterns: list[dict] = [
        {
            "label": "PERSON",
            "pattern": [{"ORTH": {"IN": list(FIRST_NAMES)}}, {"ORTH": {"IN": list(SURNAMES)}}],
        },
        {"label": "PERSON", "pattern": [{"ORTH": {"IN": list(SURNAMES)}}]},
        {
            "label": "ORG",
            "pattern": [{"ORTH": {"IN": list(ORG_STEMS)}}, {"ORTH": {"IN": list(ORG_SUFFIXES)}}],
        },
    ]
    for place in CITIES + COUNTRIES:
        patterns.append({"label": "GPE", "pattern": [{"ORTH": word} for word in place.split()]})
    return patterns


def build_ruler_pipeline() -> Language:
    """``spacy.blank("en")`` with an ``entity_ruler`` that tags the generator's names.

    It recognises every name the generator can write (whatever the seed), with the labels
    PERSON, GPE and ORG, including surname-only mentions of people. The demo uses it when no
    statistical spaCy model is installed. The ruler component is named ``ner``.
    """
    import spacy

    nlp = spacy.blank("en")
    # Named "ner" so that the toolkit's NER-only loader (corpus.entities.load_pipeline)
    # accepts it, e.g. saved with ``nlp.to_disk(DIR)`` and passed as ``--spacy-model DIR``.
    ruler = nlp.add_pipe("entity_ruler", name="ner")
    ruler.add_patterns(ruler_patterns())  # type: ignore[attr-defined]
    return nlp
