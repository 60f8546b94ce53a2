"""Hostile input to the answering API, tried by Hypothesis: random Unicode, control
characters, huge tokens, thousands of blanks, ``.story`` markers. ``api_prepare`` and
``Reader.answer`` give an answer that holds together or a ``UserError`` with a known code,
never another exception."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from attentive_reader.api_prepare import document_text
from attentive_reader.common.errors import UserError
from attentive_reader.common.query import BLANK, parse_query
from attentive_reader.corpus.article import normalize_article
from tests.hostile import (
    DOCUMENT_CODES,
    DOCUMENTS,
    FEW,
    NAMED,
    ONE_BLANK,
    QUERIES,
    QUERY_CODES,
    READER_CODES,
    hostile_text,
)
from tests.trained_reader import CONTEXT_CAP


@FEW
@given(st.one_of(QUERIES, st.text()))
def test_parse_query_finds_one_blank_or_says_why(query):
    try:
        parsed = parse_query(query)
    except UserError as error:
        assert error.code in QUERY_CODES and "\n" not in str(error)
        return
    (blank,) = BLANK.finditer(query)
    assert parsed.before == query[: blank.start()] and parsed.after == query[blank.end() :]
    assert parsed.filled("Lisbon") == parsed.before + "Lisbon" + parsed.after


@FEW
@given(st.one_of(hostile_text(), st.text()))
def test_document_text_keeps_the_article_or_says_why(document):
    try:
        article = document_text(document)
    except UserError as error:
        assert error.code in DOCUMENT_CODES
        return
    assert article.strip()
    if "@highlight" not in document:  # a plain text, normalized as a .story's article
        assert article == normalize_article(document)


def answered_or_refused(reader, document: str, query: str) -> bool:
    """Whether ``reader`` answered (an answer that holds together) rather than refused (with
    a known code and one line)."""
    try:
        answer = reader.answer(document, query)
    except UserError as error:
        assert error.code in READER_CODES, (error.code, str(error))
        assert "\n" not in str(error)
        return False
    probabilities = [c.probability for c in answer.candidates]
    assert probabilities == sorted(probabilities, reverse=True)
    assert sum(probabilities) == pytest.approx(1.0, abs=1e-4)
    assert answer.filled == parse_query(query).filled(answer.prediction.name)
    assert len(answer.context) <= CONTEXT_CAP
    assert answer.question.count("@placeholder") == 1
    assert {c.marker for c in answer.candidates} <= set(answer.entities)
    assert all(answer.entities[c.marker] for c in answer.candidates)
    return True


@pytest.mark.slow
@FEW
@given(document=NAMED, query=ONE_BLANK)
def test_reader_answers_a_named_document_among_hostile_words(reader, document, query):
    answered_or_refused(reader, document, query)


@pytest.mark.slow
@FEW
@given(document=DOCUMENTS, query=QUERIES)
def test_reader_answers_or_refuses_any_text_with_a_known_code(reader, document, query):
    answered_or_refused(reader, document, query)


@pytest.mark.slow
def test_a_huge_token_and_thousands_of_blanks(reader):
    answer = reader.answer(
        "Lisbon " + "y" * 200_000 + " Susan Kennedy smiled.", "@placeholder smiled"
    )
    assert answer.prediction.name in ("Lisbon", "Susan Kennedy")
    with pytest.raises(UserError) as many:
        reader.answer("Lisbon grew.", "@placeholder " * 5_000)
    assert many.value.code == "many_blanks" and len(str(many.value)) < 400
