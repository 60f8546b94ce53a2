"""Entity spans -> anonymized tokens (``@entityN``), pure functions without I/O.

The input is a token list (spaCy's tokenizer output, whitespace tokens included) and the
entity spans found in it, each carrying an entity id. Every span becomes one marker token;
markers are numbered by the first occurrence of their entity (``assign_markers``), and the
entity map keeps, for each marker, the longest surface name seen (``entity_map``).

Conventions:

* Whitespace-only tokens (the ``"\\n\\n"`` between paragraphs, double spaces) are dropped.
* With ``lowercase=True`` (the default, as in the DeepMind data) every word is lowercased;
  markers and ``@placeholder`` are never lowercased.
* A word of the raw text that would read as a marker (a literal ``@entity3`` or
  ``@placeholder`` in an article) loses its leading ``@`` so that markers stay unambiguous.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from attentive_reader.common.markers import PLACEHOLDER, entity_marker, is_entity_marker


@dataclass(frozen=True)
class EntitySpan:
    """One mention of an entity in a token list.

    Attributes:
        start: index of the first token (into the full token list, whitespace included).
        end: index one past the last token.
        entity: the entity this mention belongs to (any integer id; markers are assigned by
            ``assign_markers``).
        text: the surface text of the mention (used for the entity map).
    """

    start: int
    end: int
    entity: int
    text: str = ""


def is_whitespace(token: str) -> bool:
    """Whether a token is whitespace only (dropped from anonymized output)."""
    return not token.strip()


def normalize_name(text: str) -> str:
    """A surface name with runs of whitespace (newlines included) collapsed to one space."""
    return " ".join(text.split())


def assign_markers(spans: Sequence[EntitySpan]) -> dict[int, str]:
    """Markers by first occurrence: the entity of the earliest span gets ``@entity0``, ...

    Args:
        spans: entity spans in any order.

    Returns:
        entity id -> marker, in marker order.
    """
    markers: dict[int, str] = {}
    for span in sorted(spans, key=lambda s: (s.start, s.end)):
        if span.entity not in markers:
            markers[span.entity] = entity_marker(len(markers))
    return markers


def entity_map(spans: Sequence[EntitySpan], markers: Mapping[int, str]) -> dict[str, str]:
    """Marker -> the longest surface name of its entity (whitespace normalized).

    Ties go to the name seen first (spans in token order). Entities without a marker are
    left out; the result is ordered as ``markers``.
    """
    names: dict[int, str] = {}
    for span in sorted(spans, key=lambda s: (s.start, s.end)):
        if span.entity not in markers:
            continue
        name = normalize_name(span.text)
        if len(name) > len(names.get(span.entity, "")):
            names[span.entity] = name
    return {marker: names.get(entity, "") for entity, marker in markers.items()}


def _escape(word: str) -> str:
    if word == PLACEHOLDER or is_entity_marker(word):
        return word[1:]
    return word


def anonymize(
    tokens: Sequence[str],
    spans: Sequence[EntitySpan],
    markers: Mapping[int, str],
    *,
    lowercase: bool = True,
    placeholder: int | None = None,
) -> list[str]:
    """Replace each entity span by its one marker token.

    Args:
        tokens: the token texts (whitespace tokens included; they are dropped).
        spans: non-overlapping entity spans (any order) with ``0 <= start < end <= len(tokens)``.
        markers: entity id -> marker for every entity in ``spans`` (see ``assign_markers``).
        lowercase: lowercase the words (never the markers).
        placeholder: index into ``spans`` of the one span that becomes ``@placeholder``
            instead of its marker (for cloze queries), or ``None``.

    Returns:
        The anonymized tokens.

    Raises:
        ValueError: if spans overlap, fall outside ``tokens``, are empty, name an entity
            without a marker, or ``placeholder`` is not a valid span index.
    """
    if placeholder is not None and not 0 <= placeholder < len(spans):
        raise ValueError(f"placeholder index {placeholder} is not one of the {len(spans)} spans")
    order = sorted(range(len(spans)), key=lambda i: spans[i].start)
    out: list[str] = []
    position = 0
    for i in order:
        span = spans[i]
        if not 0 <= span.start < span.end <= len(tokens):
            raise ValueError(
                f"entity span [{span.start}, {span.end}) is empty or outside the "
                f"{len(tokens)} tokens"
            )
        if span.start < position:
            raise ValueError(f"entity span [{span.start}, {span.end}) overlaps the span before")
        if span.entity not in markers:
            raise ValueError(f"entity {span.entity} has no marker; pass it in `markers`")
        out.extend(
            _word(t, lowercase) for t in tokens[position : span.start] if not is_whitespace(t)
        )
        out.append(PLACEHOLDER if i == placeholder else markers[span.entity])
        position = span.end
    out.extend(_word(t, lowercase) for t in tokens[position:] if not is_whitespace(t))
    return out


def _word(token: str, lowercase: bool) -> str:
    # Escape after lowercasing: "@Entity3" only reads as a marker once lowercased.
    return _escape(token.lower() if lowercase else token)
