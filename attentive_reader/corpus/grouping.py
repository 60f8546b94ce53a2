"""Grouping the mentions of one story into entities (coreference-lite).

``group_mentions`` groups the mentions (``corpus.entities.find_mentions``) of one story on
the mention's *key* (its lowercased tokens):

1. Exact match: mentions with the same key are one entity, whatever their labels (the same
   string always gets the same marker). "Obama" and "OBAMA" are one entity.
2. Trailing sub-span: a shorter key that ends a longer key ("Obama" ends "Barack Obama",
   "Barack Obama" ends "President Barack Obama") joins the entity of the longer key when
   it is unambiguous, i.e. exactly one entity among the longer keys ends with it. Keys are
   visited longest first, so "President Barack Obama", "Barack Obama" and "Obama" all end
   up as one entity.
3. Ambiguity: with two candidate entities ("Bill Clinton" and "Hillary Clinton", then
   "Clinton") the shorter mention stays an entity of its own.
4. Labels: rule 2 only links a shorter key to an entity whose labels agree with it (share
   a label) or that is a ``PERSON``. The exception is there because the small English
   models often label a lone surname ``ORG`` or ``GPE`` ("Barker" ORG after "Bob Barker"
   PERSON); the cost is that a place "Washington" joins "George Washington" when a story
   names both. Otherwise labels keep apart what only looks alike: "America" (GPE) does not
   join "Without America" (WORK_OF_ART). Entities that fail this test are not candidates
   either, so they cannot make a mention ambiguous.

Later rules (issue 14; docs/anonymization.md has an example of each): demonyms, aliases,
plurals and acronyms (``canonical_key``), first names and middle names (rule 4), a title
before a name is ignored ("Mr Yeaman" is "Yeaman", rule 10, with a guard for a relative of
the other gender), and a mention that is two names glued together by a lost full stop, or a
name with a possessive inside, is cut (``corpus.entities._split_glued``). The
labels GPE, LOC and FAC agree with each other. Version 4: a gendered title never joins a
full name whose first name is of the other gender ("Mrs Saunders" / "Pete Saunders", by
``names.first_name_gender``); a known place, or a word NER mostly calls a place, is a first
name only when the first-name list knows it; a place's demonym never joins a longer name
that is no place; a surname named twice goes to the story's lead when the other full names
are named half as often; a name after a hyphen is no trailing part ("Williams-Mercedes");
the short name of one organisation joins it (rule 11: "Southwest" ~ "Southwest Airlines").
Version 5: a place joins a longer name only when NER calls that name a place in most of its
mentions or its other words are place words (``PLACE_WORDS``: the city "Madrid" stays apart
from the club "Real Madrid", "Wales" joins "New South Wales"); ``find_mentions`` extends a
mention NER cut short of a longer name of the story ("Real Madrid striker", where NER read
"Madrid") and cuts a person's name glued before a longer name ("Atletico Real Madrid").

Version 6: ``find_mentions`` joins two mentions side by side that are one name NER cut in
two (``corpus.joins``), drops a mention all in lowercase ("strawberry") and trims one that ran
on into lowercase words ("Ibe for the incident"); a state's demonym is a form of the state
("Californian", ``names.is_regional_form``) for mentions NER calls a nationality or a place
(``REGION_LABELS``); and a place of the tables never joins a longer place of the tables
("Australia" stays apart from "Western Australia", "Wales" from "New South Wales").

Entities are numbered (``Entity.id``) by their first NER mention in the document.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

from attentive_reader.corpus.entities import (
    GROUP_LABELS,
    NAME_LABELS,
    PLACE_LABELS,
    Entity,
    Key,
    Mention,
    initials_of,
    is_prefixed,
)
from attentive_reader.corpus.names import (
    FEMALE_TITLES,
    HYPHENS,
    MALE_TITLES,
    TITLES,
    canonical_form,
    first_name_gender,
    form_key,
    is_first_name,
    is_place,
    is_regional_form,
)

# Bumped whenever a grouping rule or name table changes the entities of some story, so that
# datasets made before and after are told apart (manifest.json, resume keys). 1: exact
# match, trailing sub-span, ambiguity, labels; 2: the rules of issue 14 (rules 4-9); 3:
# titles, glued captions, inner possessives, middle names, a first name before the full
# name, typographic apostrophes, place labels agreeing (rules 4, 10, 11); 4: first names
# and their gender (name_genders.json) in the title and first-name guards, a word that is no
# first name before someone else's surname cut, a demonym never joining a non-place; 5: a
# place joins a longer name only when that is mostly a place to NER or its other words are
# place words, a mention NER cut short of a longer name of the story is extended to it, a
# person's name glued before a name of several words is cut; 6: two mentions side by side
# that are one name are joined (``corpus.joins``: "Mary Pat" + "Christie", "Newcastle" +
# "United"), a mention all in lowercase is dropped and one that ran on into lowercase words
# trimmed, state demonyms join their state (region_forms.json), and two places of the tables
# stay two ("Australia", "Western Australia").
GROUPING_RULES_VERSION = 6


def grouping_info() -> dict:
    """The grouping rules' version and the name tables' sources, for the manifest."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        countryinfo = version("countryinfo")
    except PackageNotFoundError:
        countryinfo = None
    return {
        "rules_version": GROUPING_RULES_VERSION,
        "name_tables": {
            "countryinfo": countryinfo,
            "curated": "corpus/name_forms.json",
            "first_names": "corpus/name_genders.json (US SSA baby names, public domain)",
            "regions": "corpus/region_forms.json (US GPO Style Manual, public domain)",
        },
    }


_LONGEST_TITLE = max(len(t) for t in TITLES)
# The labels of a mention whose state demonym names its place (rule 5).
REGION_LABELS = frozenset({"NORP", "GPE", "LOC"})

# The words after a short name that make it the name of an organisation, a team or a craft
# (rule 11): "Southwest" ~ "Southwest Airlines", "Amnesty" ~ "Amnesty International",
# "Fox" ~ "Fox News". Curated for this toolkit from real CNN / Daily Mail stories.
ORGANISATION_WORDS = frozenset(
    (
        "airlines airways air university college institute school academy international "
        "inc corp corporation company co ltd plc llc group holdings foundation trust bank "
        "motors news network media studios pictures records entertainment party club fc "
        "association society union federation agency"
    ).split()
)


# Words before a place that keep it a place (rule 9: "Wales" joins "New South Wales",
# "Manchester" "Greater Manchester", "Seoul" "Downtown Seoul"; a hyphen is no word of a
# grouping key, so "South-East Asia" is "south east asia"). Curated for this toolkit.
PLACE_WORDS = frozenset(
    (
        "north south east west northern southern eastern western central northeast "
        "northwest southeast southwest mid upper lower greater new old inner outer downtown "
        "uptown metropolitan metro"
    ).split()
)


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


def _name_shaped(words: Sequence[str]) -> bool:
    """2 to 4 capitalized words of letters (and ' or -: "O'Sullivan", "Waley-Cohen")."""
    words = [w for w in words if w not in HYPHENS]  # "Waley", "-", "Cohen" as tokenized
    return 2 <= len(words) <= 4 and all(
        w[:1].isupper() and w.replace("'", "").replace("’", "").replace("-", "").isalpha()
        for w in words
    )


_NAME_PARTICLES = frozenset({"al", "el", "ad", "ash", "as", "an", "bin", "ibn", "abu", "abd", "ul"})


def _after_hyphen(words: Sequence[str], n: int) -> bool:
    """Whether the last ``n`` words (hyphens not counted) follow a hyphen: "Mercedes" in the
    team "Williams-Mercedes" is another name, never a trailing part of it."""
    seen = 0
    for i in range(len(words) - 1, 0, -1):
        if words[i] in HYPHENS:
            continue
        seen += 1
        if seen == n:
            # Arabic articles stay part of the name: "Sadr" is "Muqtada al-Sadr".
            return words[i - 1] in HYPHENS and words[i - 2].lower() not in _NAME_PARTICLES
    return False


def _dominant(
    candidates: Sequence[int], weight: dict[int, int], first: Sequence[int] = ()
) -> int | None:
    """The one candidate, or the one named at least twice as often as any other (and at
    least 3 times, or twice when it is also the one named first: the story's lead, "Stan
    Freberg" twice beside his daughter "Donna Freberg" once)."""
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        return None
    ranked = sorted(candidates, key=lambda g: -weight[g])
    top, second = weight[ranked[0]], weight[ranked[1]]
    leads = bool(first) and ranked[0] == min(candidates, key=lambda g: first[g])
    return ranked[0] if top >= 2 * second and (top >= 3 or (top >= 2 and leads)) else None


def _title_length(key: Key) -> int:
    """How many leading words of ``key`` are a title ("mr", "prime minister"), else 0."""
    bare = tuple(w.rstrip(".") for w in key[:_LONGEST_TITLE])
    for n in range(min(_LONGEST_TITLE, len(key) - 1), 0, -1):
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


def group_mentions(mentions: Sequence[Mention]) -> list[Entity]:
    """Group the mentions of one document into entities (rules in the module docstring).

    Args:
        mentions: the document's mentions, in document order.

    Returns:
        The entities, numbered (``Entity.id``) and ordered by first mention.
    """
    raw_labels: dict[Key, set[str]] = {}
    for mention in mentions:
        raw_labels.setdefault(mention.key, set()).add(mention.label)
    untitled = _untitled_keys(mentions, raw_labels)
    plain = {k: canonical_key(untitled[k], raw_labels[k]) for k in raw_labels}
    canon = {k: canonical_key(untitled[k], raw_labels[k], plain.values()) for k in raw_labels}
    titled = {canon[k] for k in raw_labels if untitled[k] != k}  # surnames: "Mr X" -> X
    kept_titles = {canon[k] for k in raw_labels if _title_length(k) and untitled[k] == k}

    first: dict[Key, int] = {}
    labels: dict[Key, set[str]] = {}
    count: dict[Key, int] = {}
    words: dict[Key, tuple[str, ...]] = {}
    person_count: dict[Key, int] = {}
    place_count: dict[Key, int] = {}
    for i, mention in enumerate(mentions):
        key = canon[mention.key]
        person_count[key] = person_count.get(key, 0) + (mention.label in NAME_LABELS)
        place_count[key] = place_count.get(key, 0) + (mention.label in PLACE_LABELS)
        first.setdefault(key, i)
        labels.setdefault(key, set()).add(mention.label)
        count[key] = count.get(key, 0) + 1
        if len(mention.words) >= len(words.get(key, ())):
            words.setdefault(key, mention.words)

    # Rule 1 (exact match, on canonical keys) is grouping by key; the others attach keys.
    group_of: dict[Key, int] = {}
    group_labels: list[set[str]] = []
    group_count: list[int] = []
    group_places: list[int] = []  # mentions NER calls a place (GPE, LOC, FAC)
    group_first: list[int] = []

    def a_place(group: int, longer: Key, n: int) -> bool:
        """Whether ``longer``'s group is a place: NER calls it one in more than half of its
        mentions, or the words before the last ``n`` are place words ("New South Wales")."""
        if 2 * group_places[group] > group_count[group]:
            return True
        return all(w in PLACE_WORDS or is_place((w,)) for w in longer[:-n])

    def compatible(key: Key, group: int, longer: Key) -> bool:
        own, theirs = labels[key], group_labels[group]
        if (
            is_place(key)
            and own <= PLACE_LABELS | {"NORP"}
            and not a_place(group, longer, len(key))
        ):
            # "Seoul" never joins "Dark Seoul", nor "Scottish" / "Scotland" the pollster
            # "Ipsos MORI Scotland", nor the city "Madrid" the club "Real Madrid", which NER
            # calls a facility once and an organisation five times (rule 9)
            return False
        if is_place(key) and is_place(longer):
            return False  # two places of the tables: "Australia" and "Western Australia"
        if longer in kept_titles:
            return False  # "Robertson" joins "Summer Robertson", not her father "Mr Robertson"
        return bool(
            own & theirs
            or (own & PLACE_LABELS and theirs & PLACE_LABELS)  # "Palace" GPE, "Crystal Palace" FAC
            or "PERSON" in theirs
            # "Tomasz Lazar" mislabelled WORK_OF_ART, then "Lazar" PERSON (rule 4)
            or ("PERSON" in own and theirs == {"WORK_OF_ART"} and _name_shaped(words[longer]))
        )

    for key in sorted(first, key=lambda k: (-len(k), first[k])):
        trailing = sorted(
            {
                group_of[longer]
                for longer in group_of
                if len(longer) > len(key)
                and longer[-len(key) :] == key
                and not is_prefixed(longer)
                and not _after_hyphen(words.get(longer, ()), len(key))
                and compatible(key, group_of[longer], longer)
            }
        )
        chosen = _dominant(trailing, dict(enumerate(group_count)), group_first)
        if (
            chosen is None
            and not trailing
            and len(key) == 1
            and "PERSON" in labels[key]
            and key not in titled  # "Mr Lane" -> "Lane" is a surname
        ):
            # Rule 4: a first name joins the one full name it starts ("Richie" ~ "Richie
            # Benaud", "Donna" in "his parents, Donna and Peter Lane" ~ "Donna Lane").
            # Guard: a known place, or a word NER calls a place, facility or organisation
            # in more than two thirds of its mentions, is only a first name when the name
            # list knows it ("Aintree" the racecourse never joins "Aintree Treadwell";
            # "Jordan" still joins "Jordan Henderson").
            placelike = is_place(key) or 3 * person_count[key] < count[key]
            leading = {
                group_of[longer]
                for longer in group_of
                if (not placelike or is_first_name(key[0]))
                and 2 <= len(longer) <= 3
                and longer[0] == key[0]
                and longer not in kept_titles
                and "PERSON" in group_labels[group_of[longer]]
                and _name_shaped(words.get(longer, ()))
            }
            # The full names named before it first; else, a later one, and then only for a
            # name NER always calls a person (the team "McLaren" stays apart from a later
            # "McLaren Smith").
            earlier = sorted(g for g in leading if group_first[g] < first[key])
            if not earlier and labels[key] <= NAME_LABELS:
                earlier = sorted(leading)
            chosen = _dominant(earlier, dict(enumerate(group_count)))
        if chosen is None and not trailing and len(key) == 2 and "PERSON" in labels[key]:
            # Rule 4: a name without the middle name ("Joshua Burns" ~ "Joshua Quincy Burns").
            fuller = sorted(
                {
                    group_of[longer]
                    for longer in group_of
                    if 3 <= len(longer) <= 4
                    and (longer[0], longer[-1]) == key
                    and "PERSON" in group_labels[group_of[longer]]
                    and _name_shaped(words.get(longer, ()))
                }
            )
            if _name_shaped(words.get(key, ())):
                chosen = fuller[0] if len(fuller) == 1 else None
        if chosen is None and not trailing and len(key) == 1:
            # Rule 8: an acronym of exactly one longer name ("FBI", "U.N.").
            word = words.get(key, ("",))[0].replace(".", "")
            if 2 <= len(word) <= 6 and word.isalpha() and word.isupper():
                expanding = sorted(
                    {
                        group_of[longer]
                        for longer in group_of
                        if len(longer) >= 2
                        and initials_of(words.get(longer, longer)).upper() == word
                        and not is_prefixed(longer)
                    }
                )
                chosen = expanding[0] if len(expanding) == 1 else None
        if (
            chosen is None
            and not trailing
            and len(key) == 1
            and labels[key] & (GROUP_LABELS | {"PRODUCT", "FAC", "PERSON"})
            and not is_place(key)
        ):
            # Rule 11: the short name of exactly one organisation or craft it starts,
            # followed only by words such as "Airlines", "University" or a number
            # ("Southwest" ~ "Southwest Airlines", "Progress" ~ "Progress 59"). Guards: a
            # place never ("Atlanta" is not "Atlanta Falcons"), nor a longer name of
            # another kind ("Duke" joins "Duke University", not "Duke Chapel").
            starting = sorted(
                {
                    group_of[longer]
                    for longer in group_of
                    if 2 <= len(longer) <= 3
                    and longer[0] == key[0]
                    and all(w in ORGANISATION_WORDS or w.isdigit() for w in longer[1:])
                    and group_labels[group_of[longer]] & (GROUP_LABELS | {"PRODUCT", "FAC"})
                }
            )
            chosen = starting[0] if len(starting) == 1 else None
        if chosen is not None:
            group_of[key] = chosen
            group_labels[chosen] |= labels[key]
            group_count[chosen] += count[key]
            group_places[chosen] += place_count[key]
            group_first[chosen] = min(group_first[chosen], first[key])
        else:
            group_of[key] = len(group_labels)
            group_labels.append(set(labels[key]))
            group_count.append(count[key])
            group_places.append(place_count[key])
            group_first.append(first[key])

    members: dict[int, list[Mention]] = {}
    for mention in mentions:
        members.setdefault(group_of[canon[mention.key]], []).append(mention)
    entities = []
    for number, group in enumerate(sorted(members, key=lambda g: min(m.start for m in members[g]))):
        ordered = sorted(members[group], key=lambda m: m.start)
        name = ""
        for mention in ordered:
            if len(mention.text) > len(name):
                name = mention.text
        entities.append(
            Entity(
                id=number,
                name=name,
                labels=tuple(sorted({m.label for m in ordered})),
                keys=tuple(dict.fromkeys(m.key for m in ordered)),
                mentions=tuple(ordered),
            )
        )
    return entities
