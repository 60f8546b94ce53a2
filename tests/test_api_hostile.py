"""Hostile input to the answering API, tried by Hypothesis: random Unicode, control
characters, huge tokens, thousands of blanks, ``.story`` markers. ``api_prepare`` and
``Reader.answer`` give an answer that holds together or a ``UserError`` with a known code,
never another exception."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attentive_reader.api_prepare import BLANK, document_text, parse_query
from attentive_reader.errors import UserError
from tests.trained_reader import CONTEXT_CAP

# Few examples, the same ones each run: the suite stays fast and a failure reproduces.
FEW = settings(
    max_examples=30,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

QUERY_CODES = {"empty_query", "nul_character", "no_blank", "many_blanks"}
DOCUMENT_CODES = {"empty_document", "bad_story"}
READER_CODES = QUERY_CODES | DOCUMENT_CODES | {"no_entity", "too_many_entities"}

# Names the synthetic corpus's entity ruler tags, blanks, markers and troublemakers.
PIECES = [
    "Susan Kennedy", "Kennedy", "Greystone Bank", "Lisbon", "Alderton Pharmaceuticals",
    "@placeholder", "___", "XXX", "@entity0", "@entity99", "@highlight", "\n@highlight\n",
    "\x00", "\x07", "\u202e", "\ufeff", "\u200b", "<script>", "&amp;", "'s", "\r\n", "\t",
    ".", "Mr.", "x" * 3_000, "said", "ÄÖÜ", "東京", "🙂",
]  # fmt: skip


NO_BLANKS = [p for p in PIECES if not BLANK.search(p)]


def hostile_text(max_pieces: int = 30, pieces: list[str] = PIECES) -> st.SearchStrategy[str]:
    """Text made of ``pieces`` and random Unicode (control characters included)."""
    piece = st.one_of(st.sampled_from(pieces), st.text(max_size=12))
    return st.lists(piece, max_size=max_pieces).flatmap(
        lambda pieces: st.lists(
            st.sampled_from([" ", "", "\n", "  "]), min_size=len(pieces), max_size=len(pieces)
        ).map(lambda gaps: "".join(p + g for p, g in zip(pieces, gaps)))
    )


NAMES = ["Susan Kennedy", "Greystone Bank", "Lisbon", "Alderton Pharmaceuticals"]
# Mostly a document with a name in it, between hostile words.
NAMED = st.tuples(hostile_text(40), st.sampled_from(NAMES), hostile_text(20)).map(" ".join)
DOCUMENTS = st.one_of(
    NAMED,
    NAMED,
    hostile_text(60),
    st.text(),
)
MANY_BLANKS = st.sampled_from(["@placeholder ", "___ ", "XXX "]).map(lambda b: b * 2_000)
# Mostly one blank between hostile words (whose pieces may hold more blanks).
ONE_BLANK = st.tuples(
    hostile_text(6, NO_BLANKS),
    st.sampled_from(["@placeholder", "___", "XXX"]),
    hostile_text(6, NO_BLANKS),
).map(" ".join)
QUERIES = st.one_of(
    ONE_BLANK,
    ONE_BLANK,
    hostile_text(8),
    MANY_BLANKS,
)


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
    if "@highlight" not in document:
        assert article == document


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
