"""Grouping the mentions of one story into entities (coreference-lite).

``group_mentions`` groups the mentions (``corpus.entities.find_mentions``) of one story on
the mention's *canonical key* (``corpus.grouping_keys``): its lowercased words, without a
title before a person's name (rule 10), mapped to the name tables' form (rules 5 to 7).
Mentions with the same canonical key are one entity (rule 1, exact match). The other keys are visited longest first; each is offered to the rules of
``RULES`` in their declared order, and the first rule that decides places it: in the
entity (``Group``) it chooses, or in an entity of its own (``ALONE``). A rule is one
function of the key and the grouping so far (``Grouping``), its guard first; adding or
reordering a rule is one line of ``RULES``.

Rule numbers are those of docs/anonymization.md ("Grouping mentions into entities"), which
has an example of each rule and guard and the history of ``GROUPING_RULES_VERSION``.
Entities are numbered (``Entity.id``) by their first NER mention in the document.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

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
from attentive_reader.corpus.grouping_keys import StoryKeys, story_keys
from attentive_reader.corpus.names import HYPHENS, is_first_name, is_place

# Bumped whenever a grouping rule, a name table or the reading of a story's text changes the
# entities of some story, so that datasets made before and after are told apart
# (manifest.json, resume keys). What each version changed: docs/anonymization.md, "Rule
# versions".
GROUPING_RULES_VERSION = 7


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
    candidates: Sequence[int], weight: Sequence[int], first: Sequence[int] = ()
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


@dataclass
class Group:
    """One entity while the rules build it.

    Attributes:
        labels: the NER labels of its mentions.
        count: how many mentions it has.
        places: how many of them NER calls a place (GPE, LOC, FAC).
        first: the index of its first mention in the document.
    """

    labels: set[str]
    count: int
    places: int
    first: int


@dataclass
class Grouping:
    """The groups of the keys placed so far.

    Attributes:
        keys: the story's keys.
        group_of: each placed canonical key -> its group (an index of ``groups``).
        groups: the groups, in the order they were made.
    """

    keys: StoryKeys
    group_of: dict[Key, int] = field(default_factory=dict)
    groups: list[Group] = field(default_factory=list)

    def candidates(self, fits: Callable[[Key, Group], bool]) -> list[int]:
        """The groups, sorted, of the placed keys ``longer`` for which ``fits(longer, group)``."""
        return sorted({g for longer, g in self.group_of.items() if fits(longer, self.groups[g])})

    def counts(self) -> list[int]:
        return [group.count for group in self.groups]

    def place(self, key: Key, chosen: int | None) -> None:
        """Put ``key`` in group ``chosen``, or in a new group of its own when ``None``."""
        keys = self.keys
        if chosen is None:
            self.group_of[key] = len(self.groups)
            group = Group(set(keys.labels[key]), keys.count[key], keys.places[key], keys.first[key])
            self.groups.append(group)
            return
        self.group_of[key] = chosen
        group = self.groups[chosen]
        group.labels |= keys.labels[key]
        group.count += keys.count[key]
        group.places += keys.places[key]
        group.first = min(group.first, keys.first[key])


# What a rule returns to put a key in a group of its own, with no later rule asked.
ALONE = -1
# A rule: (key, grouping so far) -> the group the key joins, ``ALONE``, or ``None`` when the
# rule does not decide (its guard fails, or no group fits); then the next rule is asked.
Rule = Callable[[Key, Grouping], int | None]


def _only(candidates: Sequence[int]) -> int | None:
    return candidates[0] if len(candidates) == 1 else None


def _a_place(group: Group, longer: Key, n: int) -> bool:
    """Whether ``longer``'s group is a place: NER calls it one in more than half of its
    mentions, or the words before the last ``n`` are place words ("New South Wales")."""
    if 2 * group.places > group.count:
        return True
    return all(w in PLACE_WORDS or is_place((w,)) for w in longer[:-n])


def _labels_agree(key: Key, longer: Key, group: Group, keys: StoryKeys) -> bool:
    """Rules 4 and 9: whether ``key`` may be a trailing part of ``longer`` in ``group``."""
    own, theirs = keys.labels[key], group.labels
    if is_place(key) and own <= PLACE_LABELS | {"NORP"} and not _a_place(group, longer, len(key)):
        # "Seoul" never joins "Dark Seoul", nor "Scottish" / "Scotland" the pollster
        # "Ipsos MORI Scotland", nor the city "Madrid" the club "Real Madrid", which NER
        # calls a facility once and an organisation five times (rule 9)
        return False
    if is_place(key) and is_place(longer):
        return False  # two places of the tables: "Australia" and "Western Australia"
    if longer in keys.kept_titles:
        return False  # "Robertson" joins "Summer Robertson", not her father "Mr Robertson"
    return bool(
        own & theirs
        or (own & PLACE_LABELS and theirs & PLACE_LABELS)  # "Palace" GPE, "Crystal Palace" FAC
        or "PERSON" in theirs
        # "Tomasz Lazar" mislabelled WORK_OF_ART, then "Lazar" PERSON (rule 4)
        or ("PERSON" in own and theirs == {"WORK_OF_ART"} and _name_shaped(keys.words[longer]))
    )


def trailing_part(key: Key, grouping: Grouping) -> int | None:
    """Rules 2, 3 and 9: a key that ends longer keys joins their one group, or the dominant
    one (``_dominant``); with several and none dominant it stays alone. Guards: no longer key
    with a prefix ("anti-Saudi") or after a hyphen ("Williams-Mercedes"), labels agreeing."""
    keys = grouping.keys

    def ends(longer: Key, group: Group) -> bool:
        return (
            len(longer) > len(key)
            and longer[-len(key) :] == key
            and not is_prefixed(longer)
            and not _after_hyphen(keys.words.get(longer, ()), len(key))
            and _labels_agree(key, longer, group, keys)
        )

    trailing = grouping.candidates(ends)
    if not trailing:
        return None
    chosen = _dominant(trailing, grouping.counts(), [g.first for g in grouping.groups])
    return ALONE if chosen is None else chosen


def first_name(key: Key, grouping: Grouping) -> int | None:
    """Rule 4: a first name joins the one full name it starts ("Richie" ~ "Richie Benaud",
    "Donna" in "his parents, Donna and Peter Lane" ~ "Donna Lane"), one named before it
    first. Guards: never a surname after a title ("Mr Lane"); a known place, or a word NER
    calls a place, facility or organisation in more than two thirds of its mentions, only
    when the name list knows it ("Aintree" never joins "Aintree Treadwell"; "Jordan" joins
    "Jordan Henderson"); a later full name only for a name NER always calls a person (the
    team "McLaren" stays apart from a later "McLaren Smith")."""
    keys = grouping.keys
    if len(key) != 1 or "PERSON" not in keys.labels[key] or key in keys.titled:
        return None
    placelike = is_place(key) or 3 * keys.persons[key] < keys.count[key]
    if placelike and not is_first_name(key[0]):
        return None

    def starts(longer: Key, group: Group) -> bool:
        return (
            2 <= len(longer) <= 3
            and longer[0] == key[0]
            and longer not in keys.kept_titles
            and "PERSON" in group.labels
            and _name_shaped(keys.words.get(longer, ()))
        )

    leading = grouping.candidates(starts)
    earlier = [g for g in leading if grouping.groups[g].first < keys.first[key]]
    if not earlier and keys.labels[key] <= NAME_LABELS:
        earlier = leading
    return _dominant(earlier, grouping.counts())


def middle_name(key: Key, grouping: Grouping) -> int | None:
    """Rule 4: a name without the middle name joins the one full name ("Joshua Burns" ~
    "Joshua Quincy Burns"). Guard: both names look like a person's."""
    keys = grouping.keys
    if len(key) != 2 or "PERSON" not in keys.labels[key]:
        return None
    if not _name_shaped(keys.words.get(key, ())):
        return None
    return _only(
        grouping.candidates(
            lambda longer, group: (
                3 <= len(longer) <= 4
                and (longer[0], longer[-1]) == key
                and "PERSON" in group.labels
                and _name_shaped(keys.words.get(longer, ()))
            )
        )
    )


def acronym(key: Key, grouping: Grouping) -> int | None:
    """Rule 7: an acronym joins the one longer name whose initials it is ("FBI", "U.N.")."""
    if len(key) != 1:
        return None
    words = grouping.keys.words
    word = words.get(key, ("",))[0].replace(".", "")
    if not (2 <= len(word) <= 6 and word.isalpha() and word.isupper()):
        return None
    return _only(
        grouping.candidates(
            lambda longer, group: (
                len(longer) >= 2
                and initials_of(words.get(longer, longer)).upper() == word
                and not is_prefixed(longer)
            )
        )
    )


_ORGANISATION_LABELS = GROUP_LABELS | {"PRODUCT", "FAC"}


def short_organisation(key: Key, grouping: Grouping) -> int | None:
    """Rule 11: the short name of the one organisation or craft it starts, followed only by
    words such as "Airlines", "University" or a number ("Southwest" ~ "Southwest Airlines",
    "Progress" ~ "Progress 59"). Guards: a place never ("Atlanta" is not "Atlanta
    Falcons"), nor a longer name of another kind ("Duke" joins "Duke University", not "Duke
    Chapel")."""
    labels = grouping.keys.labels[key]
    if len(key) != 1 or not labels & (_ORGANISATION_LABELS | {"PERSON"}) or is_place(key):
        return None
    return _only(
        grouping.candidates(
            lambda longer, group: (
                2 <= len(longer) <= 3
                and longer[0] == key[0]
                and all(w in ORGANISATION_WORDS or w.isdigit() for w in longer[1:])
                and bool(group.labels & _ORGANISATION_LABELS)
            )
        )
    )


# The rules after exact match (rule 1), in the order they are asked.
RULES: tuple[Rule, ...] = (trailing_part, first_name, middle_name, acronym, short_organisation)


def _decide(key: Key, grouping: Grouping, rules: Sequence[Rule]) -> int | None:
    """The group the first deciding rule puts ``key`` in, or ``None`` for a new one."""
    for rule in rules:
        chosen = rule(key, grouping)
        if chosen is not None:
            return None if chosen == ALONE else chosen
    return None


def group_mentions(
    mentions: Sequence[Mention], rules: Sequence[Rule] | None = None
) -> list[Entity]:
    """Group the mentions of one document into entities (rules in the module docstring).

    Args:
        mentions: the document's mentions, in document order.
        rules: the rules after exact match, in the order they are asked; ``RULES`` when
            ``None`` (another list tries a rule out: ``(*RULES, my_rule)``).

    Returns:
        The entities, numbered (``Entity.id``) and ordered by first mention.
    """
    keys = story_keys(mentions)
    grouping = Grouping(keys)
    for key in sorted(keys.first, key=lambda k: (-len(k), keys.first[k])):
        grouping.place(key, _decide(key, grouping, RULES if rules is None else rules))
    members: dict[int, list[Mention]] = {}
    for mention in mentions:
        members.setdefault(grouping.group_of[keys.canonical[mention.key]], []).append(mention)
    ordered = sorted(members.values(), key=lambda group: min(m.start for m in group))
    return [_entity(number, group) for number, group in enumerate(ordered)]


def _entity(number: int, mentions: list[Mention]) -> Entity:
    ordered = sorted(mentions, key=lambda m: m.start)
    name = ""
    for mention in ordered:
        if len(mention.text) > len(name):
            name = mention.text
    return Entity(
        id=number,
        name=name,
        labels=tuple(sorted({m.label for m in ordered})),
        keys=tuple(dict.fromkeys(m.key for m in ordered)),
        mentions=tuple(ordered),
    )
