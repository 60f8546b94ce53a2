"""The names (aliases) by which an entity of a story is found again in other text.

``alias_table`` holds every key of every entity plus the unambiguous trailing sub-spans
of ``PERSON`` names (so a highlight's "Clinton" finds "Hillary Clinton" even when the
article never says "Clinton" alone; sub-spans of other labels are generic words like
"City" or "House" and are not used). ``match_aliases`` / ``find_aliases`` find these names
in a token list, case-insensitively, longest match first. Highlights use the article's
grouping this way, and so does the article itself (``cloze``): a name of one of its
entities that NER missed somewhere in the article ("Snow makes $168,000" after "Tony
Snow") is a mention of that entity, so a name is anonymized everywhere. A match whose words
are all lowercase is only taken when the article also wrote that name in lowercase, so
"us" never matches the entity "US" and "may" never matches "May".
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from spacy.tokens import Doc

from attentive_reader.corpus.entities import (
    ACRONYM_SKIP,
    GROUP_LABELS,
    NAME_LABELS,
    Entity,
    Key,
    glued_prefix,
    initials_of,
    is_prefixed,
)
from attentive_reader.corpus.names import canonical_form, form_key, forms_of, word_form


@dataclass(frozen=True)
class Alias:
    """A name that refers to an entity when found in other text.

    Attributes:
        entity: the entity id.
        lowercase_ok: whether an all-lowercase occurrence counts (the article itself wrote
            the name in lowercase).
    """

    entity: int
    lowercase_ok: bool


def alias_table(entities: Sequence[Entity]) -> dict[Key, Alias]:
    """Every name by which the entities can be found in highlights (module docstring).

    Returns:
        key (lowercased tokens) -> alias: the keys of every entity, plus the trailing
        sub-spans of ``PERSON`` keys that end no other entity's key, start with a
        capitalized word and are not keys themselves.
    """
    table: dict[Key, Alias] = {}
    for entity in entities:
        for mention in entity.mentions:
            lower = mention.text == mention.text.lower()
            old = table.get(_alias_key(mention.words))
            table[_alias_key(mention.words)] = Alias(
                entity.id, lower or (old is not None and old.lowercase_ok)
            )

    owners: dict[Key, set[int]] = {}
    capitalized: set[Key] = set()
    for entity in entities:
        if "PERSON" not in entity.labels:
            continue
        for mention in entity.mentions:
            for cut in range(1, len(mention.words)):
                sub = mention.key[cut:]
                owners.setdefault(sub, set()).add(entity.id)
                if mention.words[cut][:1].isupper():
                    capitalized.add(sub)
    # A sub-span also ending a key of an entity of another label is ambiguous too.
    for entity in entities:
        if "PERSON" in entity.labels:
            continue
        for key in entity.keys:
            for cut in range(1, len(key)):
                if key[cut:] in owners:
                    owners[key[cut:]].add(entity.id)
    for sub in sorted(owners):
        if sub not in table and sub in capitalized and len(owners[sub]) == 1:
            table[_alias_key(sub)] = Alias(next(iter(owners[sub])), lowercase_ok=False)

    # Other forms of a name: table forms, plurals, acronyms.
    other: dict[Key, set[int]] = {}
    for entity in entities:
        if set(entity.labels) <= NAME_LABELS:
            continue
        for key in entity.keys:
            if is_prefixed(key):
                continue
            forms = set(forms_of(canonical_form(key)))
            # plural demonyms: "Iranians", "Israelis" (a highlight's form of "Iran")
            forms |= {(*f[:-1], f[-1] + "s") for f in forms if f[-1].endswith(("an", "i"))}
            if not key[-1].endswith("s") and set(entity.labels) & GROUP_LABELS:
                forms.add((*form_key(key)[:-1], form_key(key)[-1] + "s"))
            words = next(m.words for m in entity.mentions if m.key == key)
            if (
                "ORG" in entity.labels
                and len(key) >= 2
                and all(w[:1].isupper() for w in words if w.lower() not in ACRONYM_SKIP)
            ):
                initials = initials_of(words)
                if len(initials) >= 2:
                    forms.add((initials.lower(),))
            for form in forms:
                other.setdefault(form, set()).add(entity.id)
    for form in sorted(other):
        if form not in table and len(other[form]) == 1:
            table[form] = Alias(next(iter(other[form])), lowercase_ok=False)
    return table


def _alias_key(words: Sequence[str]) -> Key:
    return tuple(word_form(w) for w in words)


def match_aliases(
    words: Sequence[str], table: dict[Key, Alias], blocked: Iterable[int] = ()
) -> list[tuple[int, int, int]]:
    """Find entity names in a word list, case-insensitively, longest match first.

    Matches are taken by decreasing length, then from left to right, never overlapping one
    already taken or a blocked word. A match whose words are all lowercase is dropped
    unless the alias allows it (see ``Alias.lowercase_ok``).

    Args:
        words: token texts without whitespace tokens.
        table: from ``alias_table``.
        blocked: indices of words that no match may cover.

    Returns:
        ``(start, end, entity id)`` per match, in word order.
    """
    if not table or not words:
        return []
    lowered = [word_form(w) for w in words]
    longest = max(len(k) for k in table)
    taken = [False] * len(words)
    for i in blocked:
        taken[i] = True
    matches = []
    for length in range(min(longest, len(words)), 0, -1):
        for start in range(len(words) - length + 1):
            alias = table.get(tuple(lowered[start : start + length]))
            if alias is None or any(taken[start : start + length]):
                continue
            span = words[start : start + length]
            if not alias.lowercase_ok and all(w == w.lower() for w in span):
                continue
            taken[start : start + length] = [True] * length
            matches.append((start, start + length, alias.entity))
    return sorted(matches)


def find_aliases(
    doc: Doc, table: dict[Key, Alias], blocked: Iterable[int] = ()
) -> list[tuple[int, int, int]]:
    """``match_aliases`` over a Doc, skipping whitespace tokens.

    Args:
        doc: any Doc (a tokenizer-only Doc is enough).
        table: from ``alias_table``.
        blocked: token indices that no match may cover (e.g. the NER mentions).

    Returns:
        ``(start, end, entity id)`` per match, as token indices of ``doc``, in order.
    """
    positions = [t.i for t in doc if not t.is_space]
    word_of = {p: w for w, p in enumerate(positions)}
    # Never a name right after "anti-" / "non-" (rule 9): "anti-Saudi" is not Saudi Arabia.
    after_prefix = [t.i for t in doc if glued_prefix(doc, t.i)]
    blocked_words = [word_of[i] for i in [*blocked, *after_prefix] if i in word_of]
    words = [doc[i].text for i in positions]
    return [
        (positions[s], positions[e - 1] + 1, entity)
        for s, e, entity in match_aliases(words, table, blocked_words)
    ]
