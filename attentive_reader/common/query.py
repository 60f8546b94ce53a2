"""A cloze query's one blank (floor 0: no spaCy, no torch, so that a command checks a query
before it loads a reader).

A query is written with real names and one blank: ``@placeholder`` (the DeepMind marker),
three or more underscores, or ``XXX``. ``parse_query`` splits it there, or says in one line
why it cannot.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from attentive_reader.common.errors import UserError
from attentive_reader.common.markers import PLACEHOLDER

# How a query may write its one blank: the DeepMind marker, three or more underscores, XXX.
BLANK = re.compile(rf"{PLACEHOLDER}|_{{3,}}|\bXXX\b")


@dataclass(frozen=True)
class ParsedQuery:
    """A query split at its one blank.

    Attributes:
        text: the query as given.
        before: the text before the blank.
        after: the text after it.
    """

    text: str
    before: str
    after: str

    def filled(self, name: str) -> str:
        """The query with ``name`` in the blank."""
        return f"{self.before}{name}{self.after}"


def parse_query(query: str) -> ParsedQuery:
    """Find the one blank (``@placeholder``, ``___`` or ``XXX``) of a query.

    Raises:
        UserError: no blank, more than one, or an empty query.
    """
    if not isinstance(query, str) or not query.strip():
        raise UserError(
            "the query is empty: write a sentence with one blank (@placeholder)",
            code="empty_query",
        )
    if "\x00" in query:
        raise UserError("the query holds a NUL character; remove it", code="nul_character")
    blanks = list(BLANK.finditer(query))
    if not blanks:
        raise UserError(
            f"the query {_short(query)!r} has no blank: write @placeholder (or ___ or XXX) "
            "where the answer goes",
            code="no_blank",
        )
    if len(blanks) > 1:
        shown = ", ".join(repr(b.group()) for b in blanks[:3]) + (
            ", ..." if len(blanks) > 3 else ""
        )
        raise UserError(
            f"the query {_short(query)!r} has {len(blanks)} blanks ({shown}); a cloze query "
            "has exactly one",
            code="many_blanks",
        )
    blank = blanks[0]
    return ParsedQuery(query, query[: blank.start()], query[blank.end() :])


def _short(text: str, size: int = 60) -> str:
    return text if len(text) <= size else text[: size - 3] + "..."
