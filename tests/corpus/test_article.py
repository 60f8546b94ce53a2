"""``corpus.article``: the one normalization of an article's text, by hand-made cases."""

from __future__ import annotations

import pytest

from attentive_reader.corpus.article import close_paragraph, normalize_article


@pytest.mark.parametrize(
    ("line", "closed"),
    [
        ("Goodison Park", "Goodison Park ."),
        ("He won.", "He won."),
        ("Why?", "Why?"),
        ("He said: 'No.'", "He said: 'No.'"),
        ("(CNN)", "(CNN)"),
        ("\u201cYes\u201d", "\u201cYes\u201d"),
        ("Rooney 2-1", "Rooney 2-1 ."),
    ],
)
def test_a_paragraph_is_closed_only_when_it_ends_no_sentence(line, closed):
    assert close_paragraph(line) == closed


@pytest.mark.parametrize(
    ("text", "normal"),
    [
        ("Caption\nBody.", "Caption .\n\nBody."),
        ("  Caption  \r\n\r\n\r\n  Body.  \r\n", "Caption .\n\nBody."),
        ("One line.", "One line."),
        ("Caption .\n\nBody.", "Caption .\n\nBody."),  # normalized text is left as it is
        (" \n\t\n", ""),
    ],
)
def test_paragraphs_are_lines_stripped_closed_and_joined_by_blank_lines(text, normal):
    assert normalize_article(text) == normal
    assert normalize_article(normal) == normal
