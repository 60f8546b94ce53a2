import json

import datasets
import pytest

from attentive_reader.cli import main
from attentive_reader.common.errors import UserError
from attentive_reader.corpus.questions import (
    export_questions,
    format_question,
    iter_questions,
    parse_question,
)
from attentive_reader.corpus.records import CLOZE_FEATURES, ClozeExample, Skip
from attentive_reader.corpus.sources import detect_kind, url_sha1
from tests.downloads import write_question_archive

from .fixtures import cloze_example, question_text, write_bytes, write_question, write_tgz

URL = "http://web.archive.org/web/20150401/http://www.cnn.com/2015/04/01/world/x/index.html"
CONTEXT = "( @entity1 ) -- @entity0 visited @entity2 , and @entity0 spoke ."
QUERY = "@placeholder visited @entity2"
ENTITIES = {"@entity0": "Obama", "@entity1": "CNN", "@entity2": "Paris"}


def good_text(**changes) -> str:
    entities = changes.pop("entities", ENTITIES)
    fields = {"url": URL, "context": CONTEXT, "query": QUERY, "answer": "@entity0", **changes}
    return question_text(entities=entities, **fields)


def test_parse_a_deepmind_question():
    example = parse_question(good_text(), example_id="q1", source="q1.question")
    assert example == ClozeExample(
        id="q1",
        story_id=url_sha1(URL),
        context=tuple(CONTEXT.split()),
        query=("@placeholder", "visited", "@entity2"),
        answer="@entity0",
        candidates=("@entity1", "@entity0", "@entity2"),  # by first occurrence
        entities=ENTITIES,
        url=URL,
    )


def test_entity_names_may_hold_colons_and_crlf_is_accepted():
    text = good_text(entities={"@entity0": "Obama: the man", "@entity1": "x", "@entity2": ""})
    example = parse_question(text.replace("\n", "\r\n"), example_id="q", source="q")
    assert example.entities["@entity0"] == "Obama: the man"
    assert example.entities["@entity2"] == "" and example.url == URL


def test_pseudo_urls_carry_the_story_id():
    plain = parse_question(
        good_text(url="urn:attentive-reader:story:abc_1"), example_id="q", source="q"
    )
    assert (plain.story_id, plain.url) == ("abc_1", None)
    with_url = parse_question(
        good_text(url="urn:attentive-reader:story:abc_1:http://x/y?a=1"),
        example_id="q",
        source="q",
    )
    assert (with_url.story_id, with_url.url) == ("abc_1", "http://x/y?a=1")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "missing the url (line 1)"),
        (f"{URL}\n", "missing the context (line 3)"),
        (f"{URL}\n\n{CONTEXT}\n", "missing the query (line 5)"),
        (f"{URL}\n\n{CONTEXT}\n\n{QUERY}\n\n", "missing the answer (line 7)"),
        (f"{URL}\n{CONTEXT}\n\n{QUERY}\n\n@entity0\n\n", "line 2 should be blank"),
        (good_text(answer="Obama"), "the answer (line 7) 'Obama' is not an @entityN marker"),
        (good_text(answer="@entity7"), "the answer @entity7 (line 7) is not in the entity map"),
        (good_text(query="@entity0 visited @entity2"), "has 0 @placeholder, expected exactly one"),
        (good_text(query="@placeholder met @placeholder"), "has 2 @placeholder"),
        (good_text() + "Obama\n", "line 12 is not an entity map line"),
        (good_text() + "@entity1:again\n", "line 12: @entity1 is already in the entity map"),
    ],
)
def test_bad_questions_are_skipped_saying_what_and_where(text, expected):
    skip = parse_question(text, example_id="q", source="dir/q.question")
    assert isinstance(skip, Skip)
    assert skip.reason == "bad_question" and skip.source == "dir/q.question"
    assert expected in skip.detail


def test_iter_questions_splits_from_folders_sorted_and_skips(tmp_path):
    write_question(tmp_path / "cnn" / "questions" / "validation" / "v1.question", good_text())
    write_question(tmp_path / "cnn" / "questions" / "training" / "t2.question", good_text())
    write_question(tmp_path / "cnn" / "questions" / "training" / "t1.question", good_text())
    write_question(tmp_path / "cnn" / "questions" / "test" / "deep" / "x.question", good_text())
    write_question(tmp_path / "cnn" / "other" / "o.question", good_text())
    write_question(tmp_path / "cnn" / "questions" / "training" / "t0.question", "http://u\n")
    write_bytes(tmp_path / "cnn" / "questions" / "training" / "t3.question", b"\xff\xfe@")
    (tmp_path / "cnn" / "questions" / "training" / "README").write_text("ignored")
    items = list(iter_questions(tmp_path / "cnn"))
    got = [i if isinstance(i, Skip) else (i[0], i[1].id) for i in items]
    training = tmp_path / "cnn" / "questions" / "training"
    assert got[:1] == [(None, "o")]
    assert got[1] == ("test", "x")
    assert got[2].source == str(training / "t0.question")
    assert got[2].reason == "bad_question" and "missing the context (line 3)" in got[2].detail
    assert got[3:5] == [("train", "t1"), ("train", "t2")]
    assert got[5].reason == "not_utf8" and got[5].source == str(training / "t3.question")
    assert got[6] == ("validation", "v1")
    assert len(got) == 7
    # the input folder's own name counts, and a single file reads alone
    assert {s for s, _ in iter_questions(training / "t1.question")} == {"train"}
    with pytest.raises(UserError, match=r"t0\.question: missing the context \(line 3\)"):
        list(iter_questions(training, strict=True))
    with pytest.raises(UserError, match="no such file"):
        list(iter_questions(tmp_path / "nothing"))


@pytest.mark.parametrize(
    "example",
    [
        cloze_example("e1", url_sha1("http://cnn.com/a"), url="http://cnn.com/a"),
        cloze_example("s_0_1", "s"),
        cloze_example("s_0_2", "s", url="http://cnn.com/not-the-sha1-source"),
        cloze_example(
            "dm.1",
            "sid",
            context="no markers here",
            query="@placeholder alone",
            answer="@entity4",
            entities={"@entity4": "Zed"},
        ),
    ],
)
def test_format_then_parse_is_the_identity(example):
    text = format_question(example)
    assert parse_question(text, example_id=example.id, source="x") == example


def test_format_question_layout():
    example = cloze_example("e1", "s")
    assert format_question(example) == (
        "urn:attentive-reader:story:s\n\n"
        "@entity0 met @entity1 in @entity2 . @entity1 smiled .\n\n"
        "@placeholder met @entity1\n\n"
        "@entity0\n\n"
        "@entity0:Ada Lovelace\n@entity1:Babbage\n@entity2:London\n"
    )


def test_format_question_refuses_what_it_cannot_write_faithfully():
    good = cloze_example("e1", "s")
    with pytest.raises(ValueError, match="not filename-safe"):
        format_question(cloze_example("a/b", "s"))
    with pytest.raises(ValueError, match="context token 1 .* holds whitespace"):
        format_question(ClozeExample(**{**vars(good), "context": ("@entity0", "\n\n")}))
    with pytest.raises(ValueError, match="candidates"):
        format_question(ClozeExample(**{**vars(good), "candidates": ("@entity2", "@entity0")}))
    with pytest.raises(ValueError, match="no entity name"):
        format_question(ClozeExample(**{**vars(good), "entities": {"@entity1": "B"}}))


def save_dataset(folder, splits: dict[str, list[ClozeExample]]) -> str:
    dataset = datasets.DatasetDict(
        {
            split: datasets.Dataset.from_list([e.to_row() for e in rows], features=CLOZE_FEATURES)
            for split, rows in splits.items()
        }
    )
    dataset.save_to_disk(str(folder))
    return str(folder)


SPLIT_EXAMPLES = {
    "train": [cloze_example("s1_0_0", "s1"), cloze_example("s1_1_0", "s1", answer="@entity1")],
    "validation": [
        cloze_example(
            "v_0_0",
            url_sha1("http://cnn.com/v"),
            url="http://cnn.com/v",
            entities={"@entity0": "A", "@entity1": "B", "@entity2": "C", "@entity9": "Q"},
        )
    ],
    "test": [cloze_example("t_0_0", "t", url="http://cnn.com/mismatch")],
}


def test_export_round_trip(tmp_path):
    dataset_dir = save_dataset(tmp_path / "processed", SPLIT_EXAMPLES)
    counts = export_questions(dataset_dir, tmp_path / "out")
    assert counts == {"train": 2, "validation": 1, "test": 1}
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "test",
        "training",
        "validation",
    ]
    assert (tmp_path / "out" / "training" / "s1_0_0.question").is_file()
    back: dict[str, list[ClozeExample]] = {}
    for item in iter_questions(tmp_path / "out"):
        assert not isinstance(item, Skip), item
        split, example = item
        back.setdefault(split, []).append(example)
    assert back == SPLIT_EXAMPLES
    assert not list(tmp_path.glob(".*partial"))


def test_export_refuses_duplicates_and_a_full_output(tmp_path):
    dataset_dir = save_dataset(tmp_path / "dup", {"train": [cloze_example("x", "s")] * 2})
    with pytest.raises(UserError, match="two examples share the id x"):
        export_questions(dataset_dir, tmp_path / "out")
    assert not (tmp_path / "out").exists()  # an interrupted export never looks complete
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine")
    with pytest.raises(UserError, match="exists and is not an empty folder"):
        export_questions(dataset_dir, tmp_path / "full")


def test_export_command(tmp_path, capsys):
    dataset_dir = save_dataset(tmp_path / "processed", SPLIT_EXAMPLES)
    out = tmp_path / "q"
    assert main(["export", dataset_dir, "--format", "question", "--output", str(out)]) == 0
    assert "wrote 4 .question files" in capsys.readouterr().out
    assert len(list(out.rglob("*.question"))) == 4


def test_export_command_rejects_a_folder_that_is_not_a_dataset(tmp_path, capsys):
    (tmp_path / "stories").mkdir()
    args = ["export", str(tmp_path / "stories"), "--format", "question", "--output"]
    assert main([*args, str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "stories is not a processed dataset" in err and "attentive-reader preprocess" in err
    assert main(["export", str(tmp_path), "--format", "csv", "--output", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "invalid choice: 'csv'" in err


# ------------------------------------------------------------------------------- archives


def test_a_question_archive_is_streamed_with_the_splits_of_its_folders(tmp_path):
    bad = {
        "cnn/questions/training/empty.question": b"",
        "cnn/questions/test/broken.question": b"http://u\n\nno query\n",
        "cnn/README": b"not a question",
    }
    archive = tmp_path / "cnn.tgz"
    written = write_question_archive(archive, extra=bad)
    assert detect_kind(str(archive)) == "question_archive"
    read: dict[str, list[ClozeExample]] = {}
    skips = []
    for item in iter_questions(archive):
        if isinstance(item, Skip):
            skips.append(item)
        else:
            read.setdefault(item[0], []).append(item[1])
    assert read == written  # every example as written, in member order, split by folder
    assert [(s.reason, s.source) for s in skips] == [
        ("empty", f"{archive}:cnn/questions/training/empty.question"),
        ("bad_question", f"{archive}:cnn/questions/test/broken.question"),
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cnn.tgz"]  # nothing unpacked
    with pytest.raises(UserError, match=r"cnn\.tgz:cnn/questions/training/empty\.question"):
        list(iter_questions(archive, strict=True))


def test_a_cut_question_archive_keeps_what_it_read_and_counts_the_rest(tmp_path):
    full = tmp_path / "full.tgz"
    write_question_archive(full, {"train": 300}, seed=3)
    data = full.read_bytes()
    cut = write_bytes(tmp_path / "cut.tgz", data[: len(data) // 2])
    *examples, last = list(iter_questions(cut))
    assert 10 < len(examples) < 300 and all(split == "train" for split, _ in examples)
    assert last.reason == "truncated_archive"
    assert last.source.startswith(f"{cut}:cnn/questions/training/")
    assert f"{len(examples)} questions were read before it" in last.detail


def test_archives_are_told_apart_by_their_first_members(tmp_path):
    stories = write_tgz(tmp_path / "s.tgz", {"cnn/README": b"x", "cnn/stories/a.story": b"A"})
    questions = write_tgz(
        tmp_path / "q.tar.gz", {"cnn/README": b"x", "cnn/questions/test/a.question": b"Q"}
    )
    neither = write_tgz(tmp_path / "n.tgz", {"README": b"x"})
    broken = write_bytes(tmp_path / "b.tgz", b"no archive")
    assert [detect_kind(str(p)) for p in (stories, questions, neither, broken)] == [
        "archive",
        "question_archive",
        "archive",  # read as stories: "no story was found", or the archive's own error
        "archive",
    ]


def test_preprocess_reads_deepmind_s_archive_as_it_is(tmp_path, capsys):
    archive = tmp_path / "cnn.tgz"
    written = write_question_archive(archive, {"train": 5, "validation": 2, "test": 3})
    out = tmp_path / "data"
    assert main(["preprocess", str(archive), "--output", str(out), "--quiet"]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["inputs"] == [{"path": str(archive.resolve()), "kind": "question_archive"}]
    assert manifest["spacy"] is None  # no NER
    assert manifest["examples"] == {"train": 5, "validation": 2, "test": 3}
    dataset = datasets.load_from_disk(str(out))
    for split, examples in written.items():
        assert [ClozeExample.from_row(r) for r in dataset[split]] == examples


def test_export_keeps_the_url_the_url_lists_gave(trained, tmp_path):
    """``.story`` files hold no url; preprocessed with url lists, their examples take the
    listed one, and ``export`` writes it (never the pseudo url)."""
    listed = set()
    for name in ("all_train.txt", "all_val.txt", "all_test.txt"):
        listed |= set((trained.corpus / "url_lists" / name).read_text().split())
    assert main(["export", str(trained.data), "--output", str(tmp_path / "out")]) == 0
    files = sorted((tmp_path / "out").glob("*/*.question"))
    assert files
    urls = {path.read_text(encoding="utf-8").split("\n", 1)[0] for path in files}
    assert urls <= listed, urls - listed
