"""Two mentions side by side that are one name NER cut in two.

NER sometimes reads one name as two entities with nothing between them: "Rhodri" (GPE)
"Giggs" (PERSON), "Islamic" (NORP) "State" (ORG), "Newcastle" (GPE) "United" (ORG),
"Bishop" "John Folda". Apart, they are two markers side by side, and a piece may join
another entity: the "Christie" of "Mary Pat Christie" joined her husband "Chris Christie",
and the "Abdurahman" of "Abdurahman Yasin Daud" the surname of "Zacharia Yusuf Abdurahman".
The right one may also be plain words that the story names elsewhere ("Rhodri" (GPE), then
"Giggs", which NER left a word there). ``join_label(left, right, names)`` says whether two
such mentions are one name, and with which label (``corpus.entities.find_mentions`` then
makes them one mention):

1. **The story's name**: together they are, word for word, another mention of the story
   ("Frida Kahlo"), or a name of the name tables ("Islamic State"), and neither is a known
   place or demonym ("Davis High School English teacher", read whole once, is a school and
   a subject): that mention's label, or PERSON after a person's name.
2. **A rank or title before a person** ("Bishop John Folda", "King Juan Carlos"): PERSON.
   When NER read only the title's last words as a name ("Secretary of" + "State" (ORG) +
   "John Kerry"), the title's first words join too (``title_words_before``).
3. **A club or institution of a place**: a place or its demonym, then one word such as
   United, City, Rovers, Parliament ("Newcastle United", "Scottish Parliament"): ORG.
4. **A first name before a surname** (the right mention a PERSON of one word, or of two or
   three after a lone word):

   - every word on the left is a known first name ("Mary Pat", "Sergio"), NER calls it an
     organisation, event or work in at most half of its mentions, and the surname is no
     first name, or ends a full name of the story ("Christie", beside "Chris Christie");
   - or the story writes the left word only right before the right one ("Youssouf
     Mulumbu"), or mostly and at least twice ("Rhodri Giggs" four times, "Rhodri" once),
     and NER calls it a person, a place or a nationality; before a name of two or three
     words, it must be a known first name or end another person's full name: a full name
     is never cut so that its first word joins another person.

*Guards*: a known place or demonym on the left never joins a person ("American Jordan
Spieth", "England Kevin Keegan", a caption's "Podgorica Russia head coach"); a word the
story names elsewhere alone, that is no first name, is another name ("Aintree Treadwell",
"Everton Gomis", "Valencia Enrique"); a first name before a first name is two people or a
pet ("his Jack Russell Sam"); a place before a word that is no club word stays apart
("Minnesota U.S. Attorney").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from attentive_reader.corpus.names import (
    LONGEST_TITLE,
    TITLES,
    Key,
    is_first_name,
    is_known_form,
    is_place,
    is_title_or_rank,
)


class Mention(Protocol):
    """What a rule reads of a mention (``corpus.entities.Mention``, which imports this)."""

    @property
    def start(self) -> int: ...
    @property
    def end(self) -> int: ...
    @property
    def label(self) -> str: ...
    @property
    def words(self) -> tuple[str, ...]: ...
    @property
    def key(self) -> Key: ...


# One word after a place that makes the two a club or an institution (rule 3). Curated for
# this toolkit from real CNN / Daily Mail stories ("Newcastle" GPE + "United" ORG).
CLUB_WORDS = frozenset(
    (
        "united city rovers wanderers albion athletic county town rangers hotspur villa "
        "parliament assembly government council police"
    ).split()
)
_PERSON_OR_PLACE = frozenset({"PERSON", "GPE", "NORP", "LOC"})
_NO_PERSON = frozenset({"ORG", "FAC", "EVENT", "PRODUCT", "WORK_OF_ART", "LAW"})


@dataclass(frozen=True)
class StoryNames:
    """What the story's mentions say about a name, for ``join_label``.

    Attributes:
        whole: a mention's words -> its label (the first mention with those words).
        count: mention key -> how many times the story writes it (as a mention or not).
        before: (key, key of the name right after it) -> how many times.
        labels: mention key -> its labels, counted.
        surnames: the last words of the person names of two words or more.
    """

    whole: dict[tuple[str, ...], str]
    count: Counter[Key]
    before: Counter[tuple[Key, Key]]
    labels: dict[Key, Counter[str]]
    surnames: frozenset[str]


def story_names(mentions: Sequence[Mention], occurrences: Sequence[Mention]) -> StoryNames:
    """The ``StoryNames`` of a story.

    Args:
        mentions: its NER mentions (the names and their labels).
        occurrences: every place its names occur, in document order: the mentions and the
            plain words that are word for word a mention elsewhere (how often a name is
            written, and what follows it).
    """
    whole: dict[tuple[str, ...], str] = {}
    labels: dict[Key, Counter[str]] = {}
    for mention in mentions:
        whole.setdefault(mention.words, mention.label)
        labels.setdefault(mention.key, Counter())[mention.label] += 1
    count: Counter[Key] = Counter(m.key for m in occurrences)
    before: Counter[tuple[Key, Key]] = Counter(
        (m.key, after.key) for m, after in zip(occurrences, occurrences[1:]) if after.start == m.end
    )
    surnames = frozenset(m.key[-1] for m in mentions if m.label == "PERSON" and len(m.key) >= 2)
    return StoryNames(whole, count, before, labels, surnames)


def _name_shaped(words: Sequence[str]) -> bool:
    return all(w[:1].isupper() and w.replace("'", "").replace("-", "").isalpha() for w in words)


def join_label(left: Mention, right: Mention, names: StoryNames) -> str | None:
    """The label of ``left`` and ``right`` as one name (rules of the module docstring), or
    ``None`` when they are two. ``right`` must start where ``left`` ends."""
    words = (*left.words, *right.words)
    apart = any(is_known_form(m.key) or is_place(m.key) for m in (left, right))
    if (words in names.whole or is_known_form(words)) and not apart:
        # "Davis High School English", read whole elsewhere, is a school and a subject
        return "PERSON" if right.label == "PERSON" else names.whole.get(words, right.label)
    bare = tuple(w.lower().rstrip(".") for w in left.words)
    if right.label == "PERSON" and (bare in TITLES or all(map(is_title_or_rank, left.words))):
        return "PERSON"
    if _club(left, right):
        return "ORG"
    if (
        right.label != "PERSON"
        or len(left.words) > 2
        or len(words) > 4
        or not _name_shaped(words)
        or is_known_form(left.key)
        or is_place(left.key)
    ):
        return None
    return (
        "PERSON" if _first_name(left, right, names) or _mostly_before(left, right, names) else None
    )


def title_words_before(before: Sequence[str], left: Mention, right: Mention) -> int:
    """How many of the words ``before`` the ``left`` mention (in text order, the nearest
    last) make a title with it, before the person ``right`` (rule 2): "Secretary of" before
    "State" (ORG) and "John Kerry" gives 2; 0 when they make none, or ``right`` is no person.
    ``right`` must start where ``left`` ends."""
    if right.label != "PERSON":
        return 0
    for n in range(min(len(before), LONGEST_TITLE - 1), 0, -1):
        words = tuple(w.lower().rstrip(".") for w in (*before[len(before) - n :], *left.words))
        if words in TITLES:
            return n
    return 0


def _club(left: Mention, right: Mention) -> bool:
    """Rule 3: a place or demonym, then one club word ("Newcastle United")."""
    place = is_place(left.key) or is_known_form(left.key) or left.label in {"GPE", "LOC", "NORP"}
    return (
        place
        and len(right.words) == 1
        and right.label != "PERSON"
        and right.words[0][:1].isupper()
        and right.key[0] in CLUB_WORDS
    )


def _first_name(left: Mention, right: Mention, names: StoryNames) -> bool:
    """Rule 4, first branch: known first names, then a surname ("Mary Pat" "Christie")."""
    if len(right.words) != 1 or not all(map(is_first_name, left.words)):
        return False
    labels = names.labels.get(left.key, Counter())
    if 2 * sum(labels[label] for label in _NO_PERSON) > sum(labels.values()):
        return False  # a team ("Chelsea" Hazard) or a work
    return not is_first_name(right.words[0]) or right.key[0] in names.surnames


def _mostly_before(left: Mention, right: Mention, names: StoryNames) -> bool:
    """Rule 4, second branch: a word the story writes only, or mostly and at least twice,
    right before this name ("Rhodri Giggs" four times, "Rhodri" once)."""
    together, alone = names.before[(left.key, right.key)], names.count[left.key]
    if len(left.words) != 1 or not (together == alone or 2 <= together and 2 * together > alone):
        return False
    labels = set(names.labels.get(left.key, ()))
    if len(right.words) == 1 and labels <= _PERSON_OR_PLACE:
        return True
    # "Abdurahman Yasin Daud": whole, "Abdurahman" is no surname of "Zacharia Yusuf Abdurahman"
    return is_first_name(left.words[0]) or left.key[0] in names.surnames
