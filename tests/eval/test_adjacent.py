"""The answers beside another marker (``eval.adjacent``), on hand-checked questions."""

from __future__ import annotations

from attentive_reader.corpus.records import ClozeExample
from attentive_reader.eval.adjacent import adjacent_kind, adjacent_pair, adjacent_report


def question(story: str, n: int, context: str, answer: str, names: dict[str, str]) -> ClozeExample:
    tokens = tuple(context.split())
    return ClozeExample(
        id=f"{story}_0_{n}",
        story_id=story,
        context=tokens,
        query=("@placeholder", "won"),
        answer=answer,
        candidates=tuple(dict.fromkeys(t for t in tokens if t.startswith("@entity"))),
        entities=names,
    )


def test_adjacent_kind_sorts_pairs_of_names():
    assert adjacent_kind("Rhodri", "Giggs") == "names"
    assert adjacent_kind("Giggs", "Ryan Giggs") == "related"  # a surname of the other
    assert adjacent_kind("United States", "strawberry") == "lowercase"
    assert adjacent_kind("Ibe for the incident", "Jordon Ibe") == "lowercase"
    assert adjacent_kind("Bank of England", "Mark Carney") == "names"  # "of" is no noun
    assert adjacent_kind("England", "Kevin Keegan") == "place or demonym"
    assert adjacent_kind("American", "Jordan Spieth") == "place or demonym"
    assert adjacent_kind("Crystal Palace", "Manchester City") == "names"


def test_the_report_counts_answers_beside_another_marker():
    names = {"@entity0": "Rhodri", "@entity1": "Giggs", "@entity2": "Manchester"}
    # Story a: @entity1 stands after @entity0 once; @entity2 stands alone. Story b: the
    # answer's marker twice in a row is no pair, and a marker two tokens away is none.
    a = "@entity0 @entity1 was fined in @entity2 . @entity1 spoke"
    first = question("a", 0, a, "@entity1", names)
    second = question("a", 1, a, "@entity2", names)
    third = question("b", 0, "@entity1 @entity1 and @entity0 left", "@entity1", names)
    pair = adjacent_pair(first)
    assert pair is not None
    assert (pair.left, pair.right, pair.answer_left, pair.kind) == (
        "Rhodri",
        "Giggs",
        False,
        "names",
    )
    assert pair.context == "@entity0 @entity1 was fined in @entity2"
    assert adjacent_pair(second) is None and adjacent_pair(third) is None
    report = adjacent_report([first, second, third])
    # 1 of 3 questions; documents a (1 of 2) and b (0 of 1) drawn with replacement give
    # 0% (b twice), 33% or 50% (a twice): the interval's half-width is 25 points.
    assert report["questions"] == 3 and report["adjacent_marker"] == 33.3
    assert report["interval"] == 25.0
    assert report["kinds"] == {"related": 0, "lowercase": 0, "place or demonym": 0, "names": 1}
    assert [p["example"] for p in report["pairs"]] == ["a_0_0"]
    assert adjacent_report([])["adjacent_marker"] == 0.0
