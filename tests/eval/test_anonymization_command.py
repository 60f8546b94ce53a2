"""``attentive-reader anonymization --adjacent`` on a tiny stored dataset: hand-computed
figures, and its mistakes in one line."""

from __future__ import annotations

import json

import datasets
import pytest

from attentive_reader.cli import main
from attentive_reader.corpus.records import CLOZE_FEATURES, ClozeExample


def _example(story: str, context: str, query: str, answer: str) -> ClozeExample:
    tokens = tuple(context.split())
    names = {"@entity0": "Rhodri", "@entity1": "Giggs", "@entity2": "Manchester"}
    return ClozeExample(
        id=f"{story}_0_0",
        story_id=story,
        context=tokens,
        query=tuple(query.split()),
        answer=answer,
        candidates=tuple(dict.fromkeys(t for t in tokens if t.startswith("@entity"))),
        entities=names,
    )


def _examples() -> list[ClozeExample]:
    # Story a: the answer @entity1 stands right after @entity0. Word distance: @entity1 at
    # 1 finds "was" and "fined" where the query expects them (0); @entity0 at 0 pays 1 + 1,
    # @entity2 at 6 pays 5 + 5: right, with or without alignment through the grouping.
    # Story b: no marker beside another. @entity0 at 6 scores 0 ("@entity2" expected at 4,
    # "met" at 5), @entity1 and @entity2 score 4: right. Without alignment the query's
    # "@entity2" pays 8 everywhere, and "met" 0 after @entity0 at 6 and @entity1 at 2
    # (cap 8 each), 2 after @entity2 at 4: a tie of two, credit 1/2.
    return [
        _example(
            "a", "@entity0 @entity1 was fined in @entity2 .", "@placeholder was fined", "@entity1"
        ),
        _example(
            "b",
            "@entity0 met @entity1 . @entity2 met @entity0 .",
            "@entity2 met @placeholder",
            "@entity0",
        ),
    ]


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """Run ``attentive-reader anonymization`` in this process and return its output."""
    capsys.readouterr()
    assert main(["anonymization", *args]) == 0
    return capsys.readouterr().out


def test_the_report_lists_adjacent_answers_and_word_distance_readings(tmp_path, capsys):
    examples = _examples()
    rows = datasets.Dataset.from_list([ex.to_row() for ex in examples], features=CLOZE_FEATURES)
    datasets.DatasetDict({"test": rows}).save_to_disk(str(tmp_path / "data"))
    out = _run(
        capsys,
        str(tmp_path / "data"),
        "--adjacent",
        "--json",
        str(tmp_path / "report.json"),
    )
    # 1 of 2 questions; documents drawn with replacement give 0%, 50% or 100%.
    assert "answer's marker beside another marker: 50.0% ± 50.0 of 2 questions" in out
    assert (
        "  a_0_0  Rhodri | *Giggs*  [names]  ... @entity0 @entity1 was fined in @entity2 ." in out
    )
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert [p["example"] for p in report["adjacent"]["pairs"]] == ["a_0_0"]


def test_mistakes_are_one_line(tmp_path, capsys):
    examples = _examples()
    rows = datasets.Dataset.from_list([ex.to_row() for ex in examples], features=CLOZE_FEATURES)
    datasets.DatasetDict({"test": rows}).save_to_disk(str(tmp_path / "data"))
    cases = [
        ([str(tmp_path)], "is not a preprocessed dataset (no dataset_dict.json)"),
        ([str(tmp_path / "data"), "--split", "train"], "has no train split (it has test)"),
        ([str(tmp_path / "data"), "--split", "dev"], "argument --split: invalid choice"),
    ]
    for args, message in cases:
        capsys.readouterr()
        assert main(["anonymization", *args]) == 2, args
        captured = capsys.readouterr()
        (line,) = captured.err.splitlines()
        assert line.startswith("attentive-reader anonymization: error: ") and message in line, line
