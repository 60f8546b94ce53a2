"""Entity mentions within a story (the names by which an entity is found again:
``corpus.aliases``).

Mentions (``find_mentions``) are the document's entities whose label is kept, trimmed at
the edges of a leading ``the`` and of punctuation, whitespace and a possessive ``'s`` /
``'`` (spaCy's NER often includes them: "the United States", "Obama's"). The trimmed
tokens stay ordinary words ("the @entity1", "@entity2 's"). A mention that ran on into
lowercase words is cut back to the name ("Ibe for the incident" is "Ibe"), one all in
lowercase is no name ("strawberry"), and two side by side that are one name NER cut in two
are one mention (``corpus.joins``: "Mary Pat" + "Christie", "Newcastle" + "United").

Grouping the mentions into entities (``Entity``) is ``corpus.grouping``; loading the spaCy
pipeline is ``corpus.pipeline``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from spacy.tokens import Doc, Span

from attentive_reader.corpus.anonymize import normalize_name
from attentive_reader.corpus.joins import join_label, story_names, title_words_before
from attentive_reader.corpus.names import (
    HYPHENS,
    canonical_form,
    form_key,
    is_first_name,
    is_known_form,
    is_place,
    is_title_or_rank,
)

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

_LEADING_WORDS = frozenset({"the"})
_TRAILING_TITLES = frozenset({"mr", "mrs", "ms", "miss", "dr"})
_POSSESSIVES = frozenset({"'s", "’s", "'", "’"})

Key = tuple[str, ...]


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
ACRONYM_SKIP = frozenset({"of", "the", "and", "for", "de", "on", "in", "&"})


def is_prefixed(key: Key) -> bool:
    """Whether a key starts with a prefix and a hyphen ("anti", "-", "saudi")."""
    return len(key) >= 3 and key[0] in PREFIXES and key[1] in HYPHENS


def glued_prefix(doc: Doc, start: int) -> bool:
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


def _trim(span: Span, lowercase_words: frozenset[str] = frozenset()) -> tuple[int, int]:
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
    end = _run_on_trimmed(doc, start, end)
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
            elif (
                end - start >= 3
                and (word.is_upper or word.lower_ in lowercase_words)
                and word.is_alpha
                and not is_first_name(word.text)
                and not is_title_or_rank(word.text)
                and doc[start + 1].text[:1].isupper()
                and is_first_name(doc[start + 1].text)
            ):
                # A caption's word before a first name and a surname: "RIP Stan Freberg",
                # "Shocked Terry Cooper" (when the article writes "shocked" in lowercase).
                start += 1
            else:
                break
    if start < end and glued_prefix(doc, start):  # "anti-Saudi": the prefix is part of it
        start -= 2
    return start, end


def _run_on_trimmed(doc: Doc, start: int, end: int) -> int:
    """The end of a name that ran on into lowercase words ("Ibe for the incident", "Dam
    and") or into the title of the next name ("outside the Court of Appeal Mr Beavis").
    Guards: a word after a hyphen is part of the name ("Ban Ki-moon", "Latter-day"), and so
    is any word of a name the tables know ("United states")."""
    if is_known_form(tuple(t.text for t in doc[start:end])):
        return end
    while end - start >= 2:
        last = doc[end - 1]
        after_hyphen = doc[end - 2].text in HYPHENS and not doc[end - 2].whitespace_
        if (last.is_alpha and last.is_lower and not after_hyphen) or (
            last.is_space or last.is_punct or last.lower_.rstrip(".") in _TRAILING_TITLES
        ):
            end -= 1
        else:
            break
    return end


def find_mentions(doc: Doc, labels: Iterable[str]) -> list[Mention]:
    """The trimmed mentions of ``doc.ents`` whose label is in ``labels``, in order."""
    keep = set(labels)
    mentions = []
    lowercase_words = frozenset(t.text for t in doc if t.is_lower and t.is_alpha)
    for ent in doc.ents:
        if ent.label_ not in keep:
            continue
        start, end = _trim(ent, lowercase_words)
        if start == end or (mentions and start < mentions[-1].end):
            continue
        mentions.append(_mention(doc, start, end, ent.label_))
    # A mention all in lowercase is a common noun ("strawberry", "septum", "Texas state
    # Senator"), unless the story also writes it as a name.
    written = {m.key for m in mentions if not _lowercase(m.text)}
    mentions = [m for m in mentions if m.key in written or not _lowercase(m.text)]
    return _join_split_names(doc, _extend_cut_short(doc, _split_glued(doc, mentions)))


def _lowercase(text: str) -> bool:
    return text == text.lower() and any(c.isalpha() for c in text)


def _join_split_names(doc: Doc, mentions: list[Mention]) -> list[Mention]:
    """One mention of two side by side that are one name NER cut in two (``corpus.joins``:
    "Mary Pat" + "Christie", "Newcastle" + "United", "Islamic" + "State"). Either may be
    plain words that the story names elsewhere: NER read "Rhodri Giggs" as no name at all
    four times, and "Rhodri" and "Giggs" elsewhere."""
    ner = {(m.start, m.end) for m in mentions}
    found = sorted([*mentions, *_plain_names(doc, mentions)], key=lambda m: m.start)
    names = story_names(mentions, found)
    result: list[Mention] = []
    i = 0
    while i < len(found):
        left = found[i]
        right = found[i + 1] if i + 1 < len(found) else None
        label, start = None, left.start
        if right is not None and right.start == left.end:
            label = join_label(left, right, names)
            start -= _title_words(doc, left, right, result[-1].end if result else 0)
            label = "PERSON" if start < left.start else label
        if right is not None and label is not None:
            result.append(_mention(doc, start, right.end, label))
            i += 2
            continue
        if (left.start, left.end) in ner:
            result.append(left)
        i += 1
    return result


def _title_words(doc: Doc, left: Mention, right: Mention, floor: int) -> int:
    """How many tokens before ``left`` (after ``floor``, all words) make a title with it
    before the person ``right`` ("Secretary of" + "State" + "John Kerry")."""
    before = [t.text for t in doc[max(floor, left.start - 3) : left.start]]
    while before and not all(t.strip() and t[:1].isalpha() for t in before):
        before.pop(0)
    return title_words_before(before, left, right)


def _plain_names(doc: Doc, mentions: list[Mention]) -> list[Mention]:
    """The places outside the mentions where up to three words are, word for word, a
    mention of the story (as mentions with its label), longest first, left to right."""
    whole: dict[tuple[str, ...], str] = {}
    for mention in mentions:
        whole.setdefault(mention.words, mention.label)
    covered = [False] * len(doc)
    for mention in mentions:
        covered[mention.start : mention.end] = [True] * (mention.end - mention.start)
    found = []
    i = 0
    while i < len(doc):
        for end in range(min(i + 3, len(doc)), i, -1):
            label = whole.get(tuple(t.text for t in doc[i:end]))
            if label is not None and not any(covered[i:end]):
                found.append(_mention(doc, i, end, label))
                i = end
                break
        else:
            i += 1
    return found


def _place_or_team(key: Key, labels: set[str]) -> bool:
    return is_place(key) or "ORG" in labels


def _mention(doc: Doc, start: int, end: int, label: str) -> Mention:
    span = doc[start:end]
    words = tuple(t.text for t in span if not t.is_space)
    return Mention(start, end, normalize_name(span.text), label, words)


def _split_glued(doc: Doc, mentions: list[Mention]) -> list[Mention]:
    """Cut a mention that is two of the story's names glued together (docs: "Mentions").

    A caption or heading that lost its full stop runs into the next sentence about a person:
    "... against Valencia Enrique said", "for McLaren Fernando Alonso starts 18th". NER reads
    one name; it is two when the mention occurs once, its head ("Valencia", "McLaren") is
    elsewhere a whole name, and its tail ("Enrique", "Fernando Alonso") is elsewhere a whole
    name that NER calls a person. Guards: a tail that is no person keeps the name whole
    ("New York" and "the Post" elsewhere do not cut "New York Post"), and a two-word name is
    only cut after a known place, a name NER calls an organisation, or a word that is no
    known first name before the surname of another person of the story ("at Aintree
    Treadwell's contented look" beside "Liam Treadwell"): "Ronnie" and "O'Sullivan"
    elsewhere do not cut "Ronnie O'Sullivan", nor does a maid "Natalia" (GPE to NER) cut
    "Natalia Moon".

    Likewise a mention with a possessive inside ("Crystal Palace's XI") is cut to its owner
    when the owner is elsewhere a whole name ("Crystal Palace"); "People's Republic of
    China" stays whole unless the story names "People" alone.
    """
    names = _GluedNames.of(mentions)
    result = []
    for mention in mentions:
        key = mention.key
        positions = [i for i in range(mention.start, mention.end) if not doc[i].is_space]
        owner = _possessive_owner(key, names)
        if owner is not None:  # "Crystal Palace's XI" after "Crystal Palace": the owner
            result.append(_mention(doc, mention.start, positions[owner - 1] + 1, mention.label))
            continue
        cut = next((n for n in range(1, len(key)) if _glued_at(mention, n, names)), None)
        if cut is None:
            result.append(mention)
            continue
        head_label = sorted(names.labels[key[:cut]])[0]
        result.append(_mention(doc, mention.start, positions[cut - 1] + 1, head_label))
        result.append(_mention(doc, positions[cut], mention.end, mention.label))
    return result


@dataclass(frozen=True)
class _GluedNames:
    """The story's mention keys, as ``_split_glued`` needs them.

    Attributes:
        count: key -> how many mentions have it.
        labels: key -> their NER labels.
        first_words: surname -> the first words of the story's two-word person names
            ("treadwell" -> {"liam"}).
    """

    count: dict[Key, int]
    labels: dict[Key, set[str]]
    first_words: dict[Key, set[str]]

    @classmethod
    def of(cls, mentions: Sequence[Mention]) -> _GluedNames:
        count: dict[Key, int] = {}
        labels: dict[Key, set[str]] = {}
        for mention in mentions:
            count[mention.key] = count.get(mention.key, 0) + 1
            labels.setdefault(mention.key, set()).add(mention.label)
        first_words: dict[Key, set[str]] = {}
        for key, key_labels in labels.items():
            if len(key) == 2 and "PERSON" in key_labels:
                first_words.setdefault(key[1:], set()).add(key[0])
        return cls(count, labels, first_words)


def _possessive_owner(key: Key, names: _GluedNames) -> int | None:
    """The length of the owner before a possessive inside ``key`` when the owner is elsewhere
    a whole name ("crystal palace 's xi" -> 2), else ``None``."""
    return next(
        (n for n in range(1, len(key) - 1) if key[n] in _POSSESSIVES and key[:n] in names.count),
        None,
    )


def _glued_at(mention: Mention, n: int, names: _GluedNames) -> bool:
    """Whether ``mention`` is two names glued after its ``n``-th word: it occurs once, both
    parts are elsewhere whole names, the tail names someone, the head stands alone, and the
    tail has no prefix ("anti-Saudi")."""
    key = mention.key
    head, tail = key[:n], key[n:]
    return (
        names.count[key] == 1
        and head in names.count
        and tail in names.count
        and _tail_names_someone(mention, n, names)
        and _head_stands_alone(key, n, names)
        and not is_prefixed(tail)
    )


def _tail_names_someone(mention: Mention, n: int, names: _GluedNames) -> bool:
    """The tail is a person to NER, or the mention is a person's name glued before a name of
    two or more words that is no place ("rivals Atletico Real Madrid attacking midfielder
    Isco", a PERSON to NER, beside the teams "Atletico" and "Real Madrid")."""
    key = mention.key
    head, tail = key[:n], key[n:]
    return "PERSON" in names.labels[tail] or (
        mention.label in NAME_LABELS
        and len(tail) >= 2
        and not is_place(head)
        and not names.labels[head] & PLACE_LABELS
    )


def _head_stands_alone(key: Key, n: int, names: _GluedNames) -> bool:
    """A two-word name is only cut after a known place, a name NER calls an organisation, or
    someone else's surname (``_someone_elses_surname``); longer names always."""
    head = key[:n]
    return (
        n >= 2
        or len(key) - n >= 2
        or _place_or_team(head, names.labels[head])
        or _someone_elses_surname(key, names)
    )


def _someone_elses_surname(key: Key, names: _GluedNames) -> bool:
    """ "Aintree Treadwell": "Aintree" is no first name, "Treadwell" is "Liam Treadwell"."""
    head = key[0]
    if not head.isalpha() or is_first_name(head):  # initials ("B.B. King") stay whole
        return False
    return bool(names.first_words.get(key[1:], set()) - {head})


def _extend_cut_short(doc: Doc, mentions: list[Mention]) -> list[Mention]:
    """Extend a mention that NER cut short of a longer name the story writes elsewhere.

    In "Real Madrid striker Karim Benzema" NER may read only "Madrid" (GPE), leaving "Real"
    a word and the club's name a place's. When the words right before such a mention,
    together with it, are word for word (case included) another mention of the story
    ("Real Madrid", ORG elsewhere), the mention is that longer name, with its label. The
    longest such name wins. Guards: the added words must not start in lowercase ("a State
    Party" elsewhere leaves "a" before "State Party" a word), and a mention never grows over
    the mention before it.
    """
    # Each proper ending of a mention's words -> the longer names that end so, with labels.
    longer: dict[tuple[str, ...], dict[tuple[str, ...], str]] = {}
    for mention in mentions:
        words = mention.words
        for n in range(1, len(words)):
            if not words[0].islower():  # "a State Party" gives no "a" to "State Party"
                longer.setdefault(words[n:], {}).setdefault(words, mention.label)
    result: list[Mention] = []
    for mention in mentions:
        floor = result[-1].end if result else 0
        best: tuple[int, str] | None = None  # (start, label) of the longest fit
        for words, label in longer.get(mention.words, {}).items():
            extra = len(words) - len(mention.words)
            start = mention.start - extra
            if (
                start >= floor
                and (best is None or start < best[0])
                and tuple(t.text for t in doc[start : mention.start]) == words[:extra]
            ):
                best = (start, label)
        if best is None:
            result.append(mention)
        else:
            result.append(_mention(doc, best[0], mention.end, best[1]))
    return result


def initials_of(words: Sequence[str]) -> str:
    """The first letters of the words that count in an acronym ("FBI" of "Federal Bureau of
    Investigation")."""
    return "".join(w[0] for w in words if w.lower() not in ACRONYM_SKIP and w[:1].isalpha())
