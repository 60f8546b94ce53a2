"""The key a mention is grouped on, and what the grouping rules know of a story's keys.

A mention's *canonical key* (``canonical_key``) is its lowercased words, without a title
before a person's name (rule 10, ``_untitled_keys``), mapped to the name tables' form (rules
5 to 7). ``story_keys`` gives every mention of a story its canonical key and counts what the
rules of ``corpus.grouping`` read of each: labels, mentions, first position, titles. Rule
numbers are those of docs/anonymization.md ("Grouping mentions into entities").
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from attentive_reader.corpus.entities import NAME_LABELS, PLACE_LABELS, Key, Mention, is_prefixed
from attentive_reader.corpus.names import (
    FEMALE_TITLES,
    LONGEST_TITLE,
    MALE_TITLES,
    TITLES,
    canonical_form,
    first_name_gender,
    form_key,
    is_regional_form,
)

# The labels of a mention whose state demonym names its place (rule 5).
REGION_LABELS = frozenset({"NORP", "GPE", "LOC"})


def canonical_key(key: Key, labels: Iterable[str] = (), known: Iterable[Key] = ()) -> Key:
    """The key a mention is grouped on (rules 1 and 5 to 7 of the module docstring).

    Args:
        key: the mention's key (lowercased words).
        labels: its NER labels (a plural of a ``PERSON`` is a surname: "Williams").
        known: canonical keys of the story's other mentions (a plural joins its singular).
    """
    if is_prefixed(key):
        return key
    labels = set(labels)
    if labels and labels <= NAME_LABELS:
        return form_key(key)  # a person's "Holland" is no country
    canonical = _table_form(key, labels)
    if canonical != form_key(key) or not canonical:
        return canonical
    last = canonical[-1]
    if len(last) > 3 and last.endswith("s") and not last.endswith("ss"):
        singular = (*canonical[:-1], last[:-1])
        target = _table_form(singular, labels)
        if target != singular or singular in set(known):
            return target
    return canonical


def _table_form(key: Key, labels: set[str]) -> Key:
    """``canonical_form``, but a state's demonym names its place only for a mention NER
    calls a nationality or a place: "the Bakersfield Californian" (a newspaper) and "the
    Houston Texans" (a team) are no Californians or Texans."""
    if labels and not labels <= REGION_LABELS and is_regional_form(key):
        return form_key(key)
    return canonical_form(key)


def _title_length(key: Key) -> int:
    """How many leading words of ``key`` are a title ("mr", "prime minister"), else 0."""
    bare = tuple(w.rstrip(".") for w in key[:LONGEST_TITLE])
    for n in range(min(LONGEST_TITLE, len(key) - 1), 0, -1):
        if bare[:n] in TITLES and key[n][:1].isalpha():
            return n
    return 0


def _untitled_keys(mentions: Sequence[Mention], labels: dict[Key, set[str]]) -> dict[Key, Key]:
    """Each key without the title before a person's name (rule 10), or the key itself.

    A gendered title is kept when the story gives the same surname the other gender's title
    more than half as often ("Miss Robertson" four times and her father "Mr Robertson" twice:
    "Miss" goes, "Mr" stays), or when every full name with that surname has a first name
    of the other gender (``names.first_name_gender``: "Mrs Saunders" beside "Pete
    Saunders" only), so two relatives are never made one person.
    """
    gender_count: dict[tuple[Key, str], int] = {}
    cut: dict[Key, int] = {}
    for mention in mentions:
        key = mention.key
        n = _title_length(key) if "PERSON" in labels[key] else 0
        if not n:
            continue
        cut[key] = n
        gender = _title_gender(key[0])
        if gender is not None:
            slot = (key[n:], gender)
            gender_count[slot] = gender_count.get(slot, 0) + 1
    # Full names by surname, with the genders of their first names ("pete saunders": m).
    first_genders: dict[Key, set[str | None]] = {}
    for key in labels:
        bare = key[_title_length(key) :] if "PERSON" in labels[key] else key
        if "PERSON" in labels[key] and 2 <= len(bare) <= 3:
            first_genders.setdefault(bare[-1:], set()).add(first_name_gender(bare[0]))
    result = {key: key for key in labels}
    for key, n in cut.items():
        gender = _title_gender(key[0])
        if gender is not None:
            other = "f" if gender == "m" else "m"
            mine = gender_count.get((key[n:], gender), 0)
            if 2 * gender_count.get((key[n:], other), 0) > mine:
                continue
            if len(key) - n == 1 and first_genders.get(key[n:]) == {other}:
                continue  # "Mrs Saunders" is not the story's only Saunders, "Pete Saunders"
        result[key] = key[n:]
    return result


def _title_gender(word: str) -> Literal["m", "f"] | None:
    title = word.rstrip(".")
    return "m" if title in MALE_TITLES else "f" if title in FEMALE_TITLES else None


@dataclass
class StoryKeys:
    """What the rules know of the canonical keys of one story (``story_keys``).

    Attributes:
        canonical: each mention key -> the key it is grouped on.
        first: canonical key -> the index of its first mention.
        labels: canonical key -> the NER labels of its mentions.
        count: canonical key -> how many mentions it has.
        words: canonical key -> the words of its first mention.
        persons: canonical key -> how many of its mentions NER calls a person.
        places: canonical key -> how many of its mentions NER calls a place.
        titled: canonical keys of a name after a title ("Mr Lane" -> "lane": a surname).
        kept_titles: canonical keys of a name whose title stayed (rule 10's guards).
    """

    canonical: dict[Key, Key]
    first: dict[Key, int] = field(default_factory=dict)
    labels: dict[Key, set[str]] = field(default_factory=dict)
    count: dict[Key, int] = field(default_factory=dict)
    words: dict[Key, tuple[str, ...]] = field(default_factory=dict)
    persons: dict[Key, int] = field(default_factory=dict)
    places: dict[Key, int] = field(default_factory=dict)
    titled: set[Key] = field(default_factory=set)
    kept_titles: set[Key] = field(default_factory=set)


def story_keys(mentions: Sequence[Mention]) -> StoryKeys:
    """The canonical key of each mention (rules 5 to 7 and 10) and what is known of each."""
    raw_labels: dict[Key, set[str]] = {}
    for mention in mentions:
        raw_labels.setdefault(mention.key, set()).add(mention.label)
    untitled = _untitled_keys(mentions, raw_labels)
    plain = {k: canonical_key(untitled[k], raw_labels[k]) for k in raw_labels}
    canon = {k: canonical_key(untitled[k], raw_labels[k], plain.values()) for k in raw_labels}
    keys = StoryKeys(
        canonical=canon,
        titled={canon[k] for k in raw_labels if untitled[k] != k},
        kept_titles={canon[k] for k in raw_labels if _title_length(k) and untitled[k] == k},
    )
    for i, mention in enumerate(mentions):
        key = canon[mention.key]
        keys.persons[key] = keys.persons.get(key, 0) + (mention.label in NAME_LABELS)
        keys.places[key] = keys.places.get(key, 0) + (mention.label in PLACE_LABELS)
        keys.first.setdefault(key, i)
        keys.labels.setdefault(key, set()).add(mention.label)
        keys.count[key] = keys.count.get(key, 0) + 1
        keys.words.setdefault(key, mention.words)
    return keys
