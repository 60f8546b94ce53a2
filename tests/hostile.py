"""Hypothesis strategies of hostile input to the answering API and the local server
(``tests/test_api_hostile.py``, ``tests/serve/test_hostile.py``): random Unicode, control
characters, huge tokens, thousands of blanks, ``.story`` markers; and the error codes the
reader may answer with."""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from attentive_reader.common.query import BLANK

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
READER_CODES = QUERY_CODES | DOCUMENT_CODES | {"no_entity"}

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
