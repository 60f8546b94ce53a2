"""The word lists and sentence templates of the synthetic corpus, read from package data.

``words.json`` holds the name inventories and plain words, ``templates.json`` the fact kinds
and filler sentences. Both are data, not code: the generator draws from them by index, so
their order is part of the corpus (reordering or editing a list changes every story; bump
``GENERATOR_VERSION`` when you do).

The name inventories are kept to the names that en_core_web_sm tags correctly in the
generator's own sentences (docs/synthetic.md, "Names spaCy knows"), so that preprocessing
finds the entities the generator wrote.
First names, surnames, organisation stems and places are pairwise disjoint, and none of them
occurs capitalised in the template text, so a name means one entity and the entity ruler's
surname-only pattern fires only on names.

Fact kinds: each has a signature (the labels of its arguments, named by slot), article
templates (one is used, in one sentence) and highlight templates that paraphrase them with
other words. Slots: ``P``/``Q`` persons, ``O``/``R`` organisations, ``G`` places, referenced
as ``{P}``, ...; ``{role}``, ``{when}``, ``{years}``, ``{amount}``, ``{thousands}`` are plain
words. Fillers mention one entity (``{X}``), two people or organisations side by side
(``{X}``, ``{Y}``) without relating them, or none.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from typing import Literal, cast, get_args

Label = Literal["PERSON", "GPE", "ORG"]
LABELS: tuple[Label, ...] = get_args(Label)


@dataclass(frozen=True)
class FactKind:
    """One kind of fact: its argument slots and its article and highlight wordings.

    Attributes:
        name: the kind's name (``appointment``, ``takeover``, ...).
        slots: ``(slot, label)`` of each argument, in the order they are filled.
        article: article templates (a story uses each at most once).
        highlight: highlight templates, sharing none of the article's relation words.
    """

    name: str
    slots: tuple[tuple[str, Label], ...]
    article: tuple[str, ...]
    highlight: tuple[str, ...]


def _load(name: str) -> dict:
    text = resources.files(__package__).joinpath(name).read_text(encoding="utf-8")
    return json.loads(text)


def _label(value: str) -> Label:
    if value not in LABELS:
        raise ValueError(f"templates.json: unknown label {value!r}; use one of {LABELS}")
    return cast(Label, value)


_WORDS = _load("words.json")
_TEMPLATES = _load("templates.json")

FIRST_NAMES: tuple[str, ...] = tuple(_WORDS["first_names"])
SURNAMES: tuple[str, ...] = tuple(_WORDS["surnames"])
CITIES: tuple[str, ...] = tuple(_WORDS["cities"])
COUNTRIES: tuple[str, ...] = tuple(_WORDS["countries"])
ORG_STEMS: tuple[str, ...] = tuple(_WORDS["org_stems"])
ORG_SUFFIXES: tuple[str, ...] = tuple(_WORDS["org_suffixes"])
ROLES: tuple[str, ...] = tuple(_WORDS["roles"])
WHEN: tuple[str, ...] = tuple(_WORDS["when"])
AMOUNTS: tuple[str, ...] = tuple(_WORDS["amounts"])

FACT_KINDS: tuple[FactKind, ...] = tuple(
    FactKind(
        name=kind["name"],
        slots=tuple((slot, _label(label)) for slot, label in kind["slots"].items()),
        article=tuple(kind["article"]),
        highlight=tuple(kind["highlight"]),
    )
    for kind in _TEMPLATES["fact_kinds"]
)
FILLERS_ONE: dict[Label, tuple[str, ...]] = {
    _label(label): tuple(texts) for label, texts in _TEMPLATES["fillers_one"].items()
}
FILLERS_TWO: tuple[str, ...] = tuple(_TEMPLATES["fillers_two"])
FILLERS_NONE: tuple[str, ...] = tuple(_TEMPLATES["fillers_none"])
