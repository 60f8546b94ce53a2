"""Tests of corpus.anonymize: spans -> @entityN, numbering, entity map, lowercasing."""

import pytest

from attentive_reader.corpus.anonymize import (
    EntitySpan,
    anonymize,
    assign_markers,
    entity_map,
    normalize_name,
)

# "Barack Obama met the US team .\n\nObama 's day" with entity 7 = Obama, 3 = US.
TOKENS = ["Barack", "Obama", "met", "the", "US", "team", ".", "\n\n", "Obama", "'s", "day"]
SPANS = [
    EntitySpan(8, 9, 7, "Obama"),  # given out of order on purpose
    EntitySpan(0, 2, 7, "Barack Obama"),
    EntitySpan(4, 5, 3, "US"),
]


def test_markers_follow_first_occurrence_not_entity_ids_or_span_order():
    assert assign_markers(SPANS) == {7: "@entity0", 3: "@entity1"}
    assert assign_markers([]) == {}


def test_anonymize_lowercases_words_not_markers_and_drops_whitespace():
    markers = assign_markers(SPANS)
    assert anonymize(TOKENS, SPANS, markers) == [
        "@entity0",
        "met",
        "the",
        "@entity1",
        "team",
        ".",
        "@entity0",
        "'s",
        "day",
    ]


def test_anonymize_can_keep_case():
    out = anonymize(
        ["The", "US", "Team", " "], [EntitySpan(1, 2, 0)], {0: "@entity0"}, lowercase=False
    )
    assert out == ["The", "@entity0", "Team"]


def test_placeholder_replaces_exactly_the_chosen_span():
    markers = assign_markers(SPANS)
    # SPANS[0] is the second Obama mention.
    out = anonymize(TOKENS, SPANS, markers, placeholder=0)
    assert out == ["@entity0", "met", "the", "@entity1", "team", ".", "@placeholder", "'s", "day"]
    out = anonymize(TOKENS, SPANS, markers, placeholder=2)
    assert out.count("@placeholder") == 1 and out[3] == "@placeholder"


def test_no_spans_gives_the_words():
    assert anonymize(["A", "\n", "B"], [], {}) == ["a", "b"]
    assert anonymize([], [], {}) == []


def test_literal_markers_in_the_text_are_escaped():
    tokens = ["@entity3", "@placeholder", "@Entity4", "@entityX", "@home"]
    assert anonymize(tokens, [], {}) == ["entity3", "placeholder", "entity4", "@entityx", "@home"]
    # Without lowercasing "@Entity4" is no marker and stays.
    assert anonymize(tokens, [], {}, lowercase=False)[2] == "@Entity4"


@pytest.mark.parametrize(
    ("spans", "placeholder", "message"),
    [
        ([EntitySpan(0, 2, 0), EntitySpan(1, 3, 1)], None, "overlaps"),
        ([EntitySpan(2, 9, 0)], None, "outside"),
        ([EntitySpan(1, 1, 0)], None, "empty"),
        ([EntitySpan(0, 1, 5)], None, "no marker"),
        ([EntitySpan(0, 1, 0)], 1, "placeholder index"),
    ],
)
def test_bad_spans_are_rejected(spans, placeholder, message):
    with pytest.raises(ValueError, match=message):
        anonymize(["a", "b", "c"], spans, {0: "@entity0", 1: "@entity1"}, placeholder=placeholder)


def test_entity_map_keeps_the_longest_name_first_on_ties_in_marker_order():
    spans = [
        EntitySpan(0, 1, 3, "Clinton"),
        EntitySpan(5, 7, 8, "Paris"),
        EntitySpan(2, 4, 3, "Hillary\nClinton"),
        EntitySpan(9, 10, 3, "H. Clinton"),  # shorter than "Hillary Clinton"
        EntitySpan(11, 12, 8, "PARIS"),  # same length: the first one wins
    ]
    markers = assign_markers(spans)
    names = entity_map(spans, markers)
    assert names == {"@entity0": "Hillary Clinton", "@entity1": "Paris"}
    assert list(names) == ["@entity0", "@entity1"]
    # Entities without a marker are left out.
    assert entity_map(spans, {8: "@entity0"}) == {"@entity0": "Paris"}


def test_normalize_name_collapses_whitespace():
    assert normalize_name("  Bob \n\n Barker ") == "Bob Barker"
