"""Name forms as data: which words name the same place or organisation, and which are places.

Four tables, each loaded once per process (``name_forms``, ``first_name_gender``):

* the package ``countryinfo`` (MIT): for each of ~250 countries its common name, its
  alternative spellings ("United States of America", "USA", "Holland"), its demonym
  ("Iranian", "American"), its capital and its provinces. Codes of two or three capitals
  ("IR", "SAU") are left out, except those news writes as words (``KEPT_CODES``): "IT" or
  "CAN" must never name Italy or Canada;
* ``name_genders.json`` beside this file: first names, and the sex they are almost only
  given to, from the US Social Security Administration's baby-name counts (public domain;
  ``python -m attentive_reader.corpus.name_genders_build`` rebuilds it), for the title guard of ``grouping``
  ("Mrs Saunders" is not "Pete Saunders");
* ``name_forms.json`` beside this file, curated for this toolkit from real CNN / Daily Mail
  stories: what countryinfo lacks (plural and short demonyms such as "Saudis", "Brits";
  continents; "U.N." / "United Nations", "ISIS" / "Islamic State");
* ``region_forms.json`` beside this file: the demonyms of the US states ("Californian",
  "Texan", "New Yorker"), from the U.S. Government Printing Office Style Manual (public
  domain). These *regional forms* (``is_regional_form``) join their place only for mentions
  NER calls a nationality or a place (``grouping_keys.canonical_key``): "the Bakersfield
  Californian" is a newspaper, "the Houston Texans" a team.

Every form is compared as a *form key* (``form_key``): lowercased, without hyphen tokens and
without the dots of an acronym, so "U.S." = "US", "al-Qaeda" = "al Qaeda". Plural demonyms
not listed are found by ``grouping``'s plural rule ("Iranians" -> "Iranian").
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Literal

Key = tuple[str, ...]

# Country codes that news writes as names (the other codes are left out, see above).
KEPT_CODES = frozenset({"us", "usa", "uk", "uae", "drc", "dprk"})


def form_key(words: Iterable[str]) -> Key:
    """The key on which name forms are compared: lowercase, no ``-`` tokens, no acronym dots.

    >>> form_key(["U.S."]), form_key(["al", "-", "Qaeda"])
    (('us',), ('al', 'qaeda'))
    """
    return tuple(word_form(w) for w in words if w not in HYPHENS)


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
            "officer detective det constable inspector chief coach commissioner ambassador "
            "admiral brigadier commodore corporal"
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
        # ranks of the armed forces in two or three words ("Air Commodore Andrew Lambert")
        ("air", "commodore"),
        ("air", "marshal"),
        ("air", "vice", "marshal"),
        ("air", "chief", "marshal"),
        ("wing", "commander"),
        ("group", "captain"),
        ("squadron", "leader"),
        ("flight", "lieutenant"),
        ("rear", "admiral"),
        ("vice", "admiral"),
        ("lieutenant", "colonel"),
        ("lieutenant", "general"),
        ("major", "general"),
        ("brigadier", "general"),
        ("lance", "corporal"),
        ("staff", "sergeant"),
    }
)
LONGEST_TITLE = max(len(title) for title in TITLES)
# Words before a first name that belong to the name (titles, royal and religious ranks,
# kin): never cut as a bad leading word ("Prince George" must not become "George").
KEPT_LEADING_WORDS = frozenset(
    (
        "prince princess king queen duke duchess earl count countess baron baroness pope "
        "saint st cardinal archbishop bishop father sister brother uncle aunt imam sheikh "
        "rabbi pastor emperor empress tsar sultan"
    ).split()
)
HYPHENS = frozenset({"-", "–", "—"})
# Typographic variants of the apostrophe, written as the plain one: "O’Toole" = "O'Toole".
_PLAIN_QUOTES = str.maketrans({"’": "'", "‘": "'", "`": "'", "ʼ": "'"})


def word_form(word: str) -> str:
    """One word as compared: lowercase, typographic apostrophes made plain ("O’Toole" ->
    "o'toole"), an acronym's dots dropped ("U.N." -> "un")."""
    lower = word.lower().translate(_PLAIN_QUOTES)
    undotted = lower.replace(".", "")
    # Only an acronym's dots go ("U.S.", "U.N."); "St." keeps its dot.
    if lower.count(".") > 1 and undotted.isalpha() and len(undotted) <= 5:
        return undotted
    return lower


def is_title_or_rank(word: str) -> bool:
    """Whether ``word`` is a one-word title ("Mr", "Dr.", "President") or a royal, religious
    or family rank ("Prince", "Bishop", "Uncle") before a person's name."""
    bare = word.lower().rstrip(".")
    return bare in KEPT_LEADING_WORDS or (bare,) in TITLES


@dataclass(frozen=True)
class NameForms:
    """The merged name tables.

    Attributes:
        canonical: form key -> the form key of its canonical name ("iranians" ->
            ("iran",), ("us",) -> ("united", "states")); canonical names map to themselves.
        places: form keys of places (countries, their capitals and provinces, continents,
            and every form of them, demonyms included).
        forms: canonical form key -> all its form keys (itself first).
        regional: the form keys that only ``region_forms.json`` knows (state demonyms).
    """

    canonical: dict[Key, Key]
    places: frozenset[Key]
    forms: dict[Key, tuple[Key, ...]]
    regional: frozenset[Key] = frozenset()


def _split(name: str) -> Key:
    # The tokenizer splits hyphens and keeps acronym dots inside a word; mirror that.
    return form_key(name.replace("-", " - ").split())


def _countryinfo_records() -> list[dict]:
    try:  # countryinfo >= 1.0
        from countryinfo import all_countries

        return [c.info() for c in all_countries()]
    except ImportError:  # countryinfo 0.1
        from countryinfo import CountryInfo

        return list(CountryInfo().all().values())


@lru_cache(maxsize=1)
def name_forms() -> NameForms:
    """The name tables (loaded once per process; see the module docstring)."""
    canonical: dict[Key, Key] = {}
    places: set[Key] = set()

    def add(
        name: str, forms: Iterable[str], *, place: bool, demonym: Iterable[str] = ()
    ) -> list[Key]:
        """Add a name and its forms; returns the form keys no table knew before."""
        target = _split(name)
        if not target:
            return []
        canonical.setdefault(target, target)
        if place:
            places.add(target)
        new = []
        for form in [*forms, *demonym]:
            key = _split(form)
            if not key or key in canonical and canonical[key] != target:
                continue  # first source wins; never chain two canonical names
            if len(key) == 1 and len(key[0]) <= 3 and key[0] not in KEPT_CODES:
                continue  # an ISO code ("IR", "SAU") or a short word
            if key not in canonical:
                new.append(key)
            canonical[key] = target
            if place:
                places.add(key)
        return new

    data = json.loads(resources.files(__package__).joinpath("name_forms.json").read_text("utf-8"))
    for name, forms in data["places"].items():
        add(name, forms, place=True)
    for name, forms in data["organisations"].items():
        add(name, forms, place=False)
    for record in _countryinfo_records():
        name = record.get("name")
        if not name:
            continue
        spellings = [s for s in record.get("altSpellings") or () if "," not in s]
        demonym = [record["demonym"]] if record.get("demonym") else []
        add(name, spellings, place=True, demonym=demonym)
        for other in [record.get("capital"), *(record.get("provinces") or ())]:
            if isinstance(other, str) and other:
                places.add(_split(other))
    regions = json.loads(
        resources.files(__package__).joinpath("region_forms.json").read_text("utf-8")
    )
    regional = [
        key for name, forms in regions["places"].items() for key in add(name, forms, place=True)
    ]
    by_target: dict[Key, list[Key]] = {}
    for key, target in canonical.items():
        by_target.setdefault(target, [target])
        if key != target:
            by_target[target].append(key)
    forms = {t: tuple(ks) for t, ks in by_target.items()}
    return NameForms(canonical, frozenset(places), forms, frozenset(regional))


def canonical_form(key: Key) -> Key:
    """The form key of the canonical name of ``key`` (itself when no table knows it)."""
    forms = name_forms()
    k = form_key(key)
    return forms.canonical.get(k, k)


def is_known_form(key: Key) -> bool:
    """Whether a table knows ``key`` as a name or a form of one ("United States", "Iranian")."""
    return form_key(key) in name_forms().canonical


def is_place(key: Key) -> bool:
    """Whether a table names ``key`` as a place (a country, capital, province, continent)."""
    return form_key(key) in name_forms().places


def is_regional_form(key: Key) -> bool:
    """Whether ``key`` is a form only the regional table knows ("Californian", "Texans" is
    not: a plural is found by the grouping)."""
    return form_key(key) in name_forms().regional


def forms_of(canonical: Key) -> list[Key]:
    """Every known form key whose canonical name is ``canonical`` (itself included)."""
    return list(name_forms().forms.get(canonical, (canonical,)))


Gender = Literal["m", "f"]


@lru_cache(maxsize=1)
def _first_names() -> dict[str, Gender | None]:
    data = json.loads(resources.files(__package__).joinpath("name_genders.json").read_text("utf-8"))
    table: dict[str, Gender | None] = dict.fromkeys(data["either"])
    table.update(dict.fromkeys(data["female"], "f"))
    table.update(dict.fromkeys(data["male"], "m"))
    return table


def is_first_name(word: str) -> bool:
    """Whether ``word`` is a known first name (``name_genders.json``: US baby names).

    Names from outside the US are often missing, so ``False`` is weak evidence.
    """
    return word_form(word) in _first_names()


def first_name_gender(word: str) -> Gender | None:
    """``"m"`` or ``"f"`` for a first name given almost only to men or to women, else ``None``.

    >>> first_name_gender("Pete"), first_name_gender("Cheryl"), first_name_gender("Jamie")
    ('m', 'f', None)
    """
    return _first_names().get(word_form(word))
