import hashlib
import time
from collections import Counter

import datasets
import huggingface_hub.constants
import pytest

from attentive_reader.common.errors import UserError
from attentive_reader.corpus.records import Skip, Story, safe_id
from attentive_reader.corpus.sources import (
    UrlLists,
    detect_kind,
    hash_split,
    huggingface,
    iter_stories,
    parse_story,
    url_sha1,
)

from .fixtures import (
    random_stories,
    story_text,
    write_bytes,
    write_csv,
    write_jsonl,
    write_parquet,
    write_question,
    write_story,
    write_tgz,
)

# ------------------------------------------------------------------------------- parse_story


def test_parse_story_splits_article_and_highlights():
    text = "First para.\r\n\r\n\r\nSecond  para.\n\n@highlight\n\nOne.\n\n@highlight\n\n\nTwo.\n"
    story = parse_story(text, story_id="abc", source="x.story", url="http://u")
    assert story == Story(
        id="abc",
        article="First para.\n\nSecond  para.",
        highlights=("One.", "Two."),
        url="http://u",
        source="x.story",
    )


def test_a_paragraph_that_ends_no_sentence_gets_a_full_stop():
    # A caption line without a stop, as in the real stories: it would run on into the next
    # paragraph. Every ending of the reference script's list is kept as written; the
    # highlights (the queries) are not changed.
    endings = ["One.", "Two!", "Three?", "Four...", "'Five'", "`Six`", '"Seven"']
    endings += ["\u2018Eight\u2019", "\u201cNine\u201d", "Ten (left)"]
    text = "\n\n".join(["Defeat at Goodison Park", "Wayne Rooney waits", *endings])
    story = parse_story(text + "\n\n@highlight\n\nRooney waits", story_id="s", source="s")
    assert story.article.split("\n\n") == [
        "Defeat at Goodison Park .",
        "Wayne Rooney waits .",
        *endings,
    ]
    assert story.highlights == ("Rooney waits",)


def test_parse_story_bad_inputs_are_counted_skips():
    no_marker = parse_story("Just an article.\n\nMore.\n", story_id="a", source="a.story")
    assert no_marker == Skip("a.story", "no_highlights", no_marker.detail)
    assert "@highlight" in no_marker.detail
    assert parse_story(" \n\n", story_id="e", source="e.story").reason == "empty"
    dangling = parse_story("Article.\n\n@highlight\n\n", story_id="d", source="d.story")
    assert dangling.reason == "no_highlights" and "line 3" in dangling.detail
    headless = parse_story("@highlight\n\nOnly a highlight.", story_id="h", source="h.story")
    assert headless.reason == "no_article"


# ------------------------------------------------------------------------------- .story files


def test_story_folder_is_read_recursively_in_sorted_order(tmp_path):
    write_story(tmp_path / "b" / "deep", "s3", ["Three."], ["h3"])
    write_story(tmp_path / "a", "s2", ["Two."], ["h2"])
    write_story(tmp_path, "s1", ["One."], ["h1"])
    (tmp_path / "notes.txt").write_text("not a story")
    items = list(iter_stories(str(tmp_path)))
    assert [s.id for s in items] == ["s1", "s2", "s3"]
    assert all(isinstance(s, Story) and s.split is None and s.url is None for s in items)
    assert items[2].source == str(tmp_path / "b" / "deep" / "s3.story")
    assert items[2].highlights == ("h3",)


def test_bad_story_files_are_skipped_with_file_and_position(tmp_path):
    write_story(tmp_path, "good", ["Fine."], ["h"])
    write_bytes(tmp_path / "empty.story", b"")
    write_bytes(tmp_path / "binary.story", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    latin1 = story_text(["Caf\u00e9 story."], ["h"]).encode("latin-1")
    write_bytes(tmp_path / "latin1.story", b"Line one.\n\n" + latin1)
    write_story(tmp_path, "nohl", ["No highlights here."], [])
    by_stem = {}
    for item in iter_stories(str(tmp_path)):
        key = item.id if isinstance(item, Story) else item.source.rsplit("/", 1)[-1]
        by_stem[key] = item
    assert isinstance(by_stem["good"], Story)
    assert by_stem["empty.story"].reason == "empty"
    binary = by_stem["binary.story"]
    assert binary.reason == "binary" and "byte offset 8" in binary.detail
    assert binary.source == str(tmp_path / "binary.story")
    bad_utf8 = by_stem["latin1.story"]
    # "Line one.\n\n" is 11 bytes, "Caf" 3 more: the latin-1 e-acute is byte 14, on line 3
    assert bad_utf8.reason == "not_utf8"
    assert "byte offset 14" in bad_utf8.detail and "line 3" in bad_utf8.detail
    assert by_stem["nohl.story"].reason == "no_highlights"
    assert len(by_stem) == 5  # every file accounted for


def test_strict_raises_naming_the_file(tmp_path):
    write_story(tmp_path, "a_good", ["Fine."], ["h"])
    write_bytes(tmp_path / "b_empty.story", b"")
    items = iter_stories(str(tmp_path), strict=True)
    assert next(items).id == "a_good"
    with pytest.raises(UserError, match=r"b_empty\.story: empty file"):
        next(items)


def test_single_story_file_and_unsafe_stem(tmp_path):
    path = write_story(tmp_path, "my story#1", ["Text."], ["h"])
    (story,) = iter_stories(str(path))
    assert story.id == "my_story_1" == safe_id("my story#1")


# ------------------------------------------------------------------------------- archives


def test_archive_is_streamed_in_member_order(tmp_path):
    members = {
        "cnn/stories/zz.story": story_text(["Last name first."], ["h1"]).encode(),
        "cnn/README": b"not a story",
        "cnn/stories/aa.story": story_text(["Second."], ["h2", "h3"]).encode(),
        "cnn/stories/bad.story": b"",
    }
    archive = write_tgz(tmp_path / "cnn_stories.tgz", members)
    items = list(iter_stories(str(archive)))
    assert [type(i).__name__ for i in items] == ["Story", "Story", "Skip"]
    assert [items[0].id, items[1].id] == ["zz", "aa"]
    assert items[1].highlights == ("h2", "h3")
    assert items[1].source == f"{archive}:cnn/stories/aa.story"
    assert items[2].reason == "empty" and items[2].source == f"{archive}:cnn/stories/bad.story"


def test_truncated_archive_yields_what_it_read_then_a_skip(tmp_path):
    full = write_tgz(tmp_path / "full.tgz", random_stories(20))
    data = full.read_bytes()
    cut = write_bytes(tmp_path / "cut.tar.gz", data[: len(data) // 2])
    items = list(iter_stories(str(cut)))
    *stories, last = items
    assert 3 <= len(stories) < 20
    assert [s.id for s in stories] == [f"s{i:03d}" for i in range(len(stories))]
    assert last.reason == "truncated_archive"
    assert last.source.startswith(f"{cut}:stories/s")  # names the archive and the member
    assert f"{len(stories)} stories were read" in last.detail
    with pytest.raises(UserError, match=r"cut\.tar\.gz:stories/s\d+\.story: archive ends early"):
        list(iter_stories(str(cut), strict=True))


def test_not_a_gzip_archive_is_a_user_error(tmp_path):
    bogus = write_bytes(tmp_path / "bogus.tgz", b"this is no archive at all" * 10)
    with pytest.raises(UserError, match="bogus.tgz: not a readable .tgz archive"):
        list(iter_stories(str(bogus)))


# ------------------------------------------------------------------------------- detect_kind


def test_detect_kind(tmp_path):
    write_story(tmp_path / "stories" / "x", "s", ["A."], ["h"])
    write_question(tmp_path / "questions" / "training" / "q.question", "u\n")
    for name in ("a.tgz", "b.tar.gz", "c.json", "d.jsonl", "e.csv", "f.parquet", "g.txt"):
        (tmp_path / name).write_bytes(b"")
    assert detect_kind(str(tmp_path / "stories")) == "stories"
    assert detect_kind(str(tmp_path / "stories" / "x" / "s.story")) == "stories"
    assert detect_kind(str(tmp_path / "questions")) == "questions"
    assert detect_kind(str(tmp_path / "a.tgz")) == detect_kind(str(tmp_path / "b.tar.gz"))
    assert detect_kind(str(tmp_path / "a.tgz")) == "archive"
    for name in ("c.json", "d.jsonl", "e.csv", "f.parquet"):
        assert detect_kind(str(tmp_path / name)) == "hf_files"
    assert detect_kind(f"validation={tmp_path / 'e.csv'}") == "hf_files"
    assert detect_kind("cnn_dailymail") == "hf_hub"
    assert detect_kind("abisee/cnn_dailymail") == "hf_hub"
    with pytest.raises(UserError, match="both .story and .question"):
        detect_kind(str(tmp_path))
    with pytest.raises(UserError, match="unknown input type"):
        detect_kind(str(tmp_path / "g.txt"))
    with pytest.raises(UserError, match="no such file or directory"):
        detect_kind(str(tmp_path / "missing.csv"))
    with pytest.raises(UserError, match="no such file or directory"):
        detect_kind("./not/here")
    (tmp_path / "void").mkdir()
    with pytest.raises(UserError, match="no .story or .question files"):
        detect_kind(str(tmp_path / "void"))
    with pytest.raises(UserError, match="SPLIT=PATH"):
        detect_kind(f"test={tmp_path / 'a.tgz'}")


# ------------------------------------------------------------------------------- splits


def test_url_sha1_names_the_cnn_story_files(shared_data):
    stories = shared_data / "cnn_stories"
    urls = []
    for name in ("all_train.txt", "all_val.txt"):
        urls += (stories / "url_lists" / name).read_text().split()
    assert {url_sha1(u) for u in urls} == {p.stem for p in stories.glob("*.story")}
    assert url_sha1("abc") == "a9993e364706816aba3e25717850c26c9cd0d89d"  # FIPS 180 test vector


def test_url_lists_assign_every_cnn_sample_story(shared_data):
    lists = UrlLists.from_dir(shared_data / "cnn_stories" / "url_lists")
    assert len(lists) == 20 and lists.counts() == {"train": 10, "validation": 10, "test": 0}
    splits = Counter()
    for story in iter_stories(str(shared_data / "cnn_stories")):
        assert isinstance(story, Story)
        splits[lists.split_of(story.id)] += 1
        assert url_sha1(lists.url_of(story.id)) == story.id
    assert splits == {"train": 10, "validation": 10}
    assert lists.split_of("0" * 40) is None and lists.url_of("0" * 40) is None


def test_url_lists_from_a_folder_with_some_lists(tmp_path):
    (tmp_path / "all_test.txt").write_text("http://a\n\n  http://b  \n")
    lists = UrlLists.from_dir(tmp_path)
    assert lists.split_of(url_sha1("http://b")) == "test"
    assert lists.counts() == {"train": 0, "validation": 0, "test": 2}
    (tmp_path / "all_train.txt").write_text("http://c\nhttp://b\n")
    with pytest.raises(UserError, match=r"all_test.txt:3: http://b is also in the train list"):
        UrlLists.from_dir(tmp_path)


def test_url_lists_errors(tmp_path):
    with pytest.raises(UserError, match="none of all_train.txt, all_val.txt, all_test.txt"):
        UrlLists.from_dir(tmp_path)
    with pytest.raises(UserError, match="not a directory"):
        UrlLists.from_dir(tmp_path / "missing")


def test_hash_split_by_hand():
    # sha1("abc") starts a9993e364706816a: u = 0xa9993e364706816a / 2**64 = 0.66249...
    assert hash_split("abc") == "train"
    assert hash_split("abc", (0.5, 0.2, 0.3)) == "validation"
    assert hash_split("abc", (0.5, 0.1, 0.4)) == "test"
    assert hash_split("abc", (0.6, 0.0, 0.4)) == "test"
    assert hash_split("abc", (0.7, 0.3, 0.0)) == "train"


def test_hash_split_fractions_and_edges():
    ids = [f"story-{i}" for i in range(20000)]
    counts = Counter(hash_split(i, (0.8, 0.1, 0.1)) for i in ids)
    assert abs(counts["train"] / 20000 - 0.8) < 0.015
    assert abs(counts["validation"] / 20000 - 0.1) < 0.01
    assert {hash_split(i, (1.0, 0.0, 0.0)) for i in ids[:500]} == {"train"}
    assert {hash_split(i, (0.0, 0.0, 1.0)) for i in ids[:500]} == {"test"}
    assert "validation" not in {hash_split(i, (0.5, 0.0, 0.5)) for i in ids[:500]}
    assert [hash_split(i) for i in ids[:50]] == [hash_split(i) for i in ids[:50]]


@pytest.mark.parametrize(
    "fractions", [(0.9, 0.05), (0.9, 0.1, 0.1), (1.1, -0.05, -0.05), (float("nan"), 0.5, 0.5)]
)
def test_hash_split_rejects_bad_fractions(fractions):
    with pytest.raises(ValueError, match="sum to 1"):
        hash_split("abc", fractions)


# ------------------------------------------------------------------------------- HF files


ROWS = [
    {"id": "r0", "article": "Alpha story.", "highlights": "First line\nSecond line\n"},
    {"id": "", "article": "Beta story.", "highlights": "Only line"},
    {"id": "r2", "article": "", "highlights": "Orphan highlight"},
    {"id": "r3", "article": "Gamma story.", "highlights": "  \n"},
]


def test_csv_rows_become_train_stories(tmp_path):
    path = write_csv(tmp_path / "data.csv", ROWS)
    items = list(iter_stories(str(path)))
    assert items[0] == Story(
        id="r0",
        article="Alpha story.",
        highlights=("First line", "Second line"),
        source=f"{path}:row 0",
        split="train",
    )
    assert items[1].id == hashlib.sha1(b"Beta story.").hexdigest()  # no id: SHA-1 of article
    assert items[2] == Skip(f"{path}:row 2", "no_article", "empty article")
    assert items[3] == Skip(f"{path}:row 3", "no_highlights", "no highlights")
    with pytest.raises(UserError, match=r"data\.csv:row 2: empty article"):
        list(iter_stories(str(path), strict=True))


def test_jsonl_with_urls_list_highlights_and_a_split_prefix(tmp_path):
    rows = [
        {"url": "http://x/1", "article": "One.", "highlights": ["a", "b"]},
        {"url": "http://x/2", "article": "Two.", "highlights": ["c"]},
    ]
    path = write_jsonl(tmp_path / "val.jsonl", rows)
    items = list(iter_stories(f"validation={path}"))
    assert [s.id for s in items] == [url_sha1("http://x/1"), url_sha1("http://x/2")]
    assert [s.url for s in items] == ["http://x/1", "http://x/2"]
    assert items[0].highlights == ("a", "b") and {s.split for s in items} == {"validation"}


def test_hf_highlights_lose_the_stop_the_reference_script_added(tmp_path):
    # Only a spaced " ." (the script's) goes; a stop of the text itself stays.
    rows = [{"article": "One.", "highlights": ["Rooney waits .", "In the U.S.", "Done ."]}]
    path = write_jsonl(tmp_path / "train.jsonl", rows)
    (story,) = iter_stories(str(path))
    assert story.highlights == ("Rooney waits", "In the U.S.", "Done")


def test_parquet(tmp_path):
    path = write_parquet(tmp_path / "d.parquet", ROWS[:2])
    items = list(iter_stories(str(path)))
    assert [s.article for s in items] == ["Alpha story.", "Beta story."]


def test_csv_without_article_column_names_file_and_columns(tmp_path):
    path = write_csv(tmp_path / "wrong.csv", [{"story": "x", "highlights": "y", "id": "1"}])
    with pytest.raises(UserError) as err:
        list(iter_stories(str(path)))
    message = str(err.value)
    assert str(path) in message and "'article'" in message
    assert "columns found: story, highlights, id" in message and "\n" not in message


def test_a_broken_data_file_is_a_counted_skip(tmp_path):
    path = tmp_path / "broken.jsonl"
    path.write_text('{"article": "A.", "highlights": "h"}\n{broken\n')
    (skip,) = list(iter_stories(str(path)))
    assert skip.reason == "unreadable" and skip.source == f"{path}:row 0"
    assert "cannot read the file as json" in skip.detail


def test_shared_csv_sample(shared_data):
    path = shared_data / "cnn_dailymail_csv" / "train_sample.csv"
    items = list(iter_stories(str(path)))
    assert len(items) == 100 and all(isinstance(s, Story) for s in items)
    assert all(len(s.id) == 40 and s.split == "train" for s in items)
    assert items[0].id == "0001d1afc246a7964130f43ae940af6bc6c57f01"
    # The csv's highlights end in the " ." the reference script adds to every line; read
    # without it, as the same story's .story highlights. Its articles keep their stops.
    first = "Bishop John Folda, of North Dakota, is taking time off after being diagnosed"
    assert items[0].highlights[0] == first
    assert not any(h.endswith(" .") for s in items for h in s.highlights)
    assert "Sheffield United . Up for the battle" in " ".join(s.article for s in items)
    assert sum(len(s.highlights) for s in items) / 100 > 2


# ------------------------------------------------------------------------------- HF hub


def test_unreachable_hub_is_one_fast_line(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    # both libraries read the variables at import; set what they read at call time too
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    start = time.monotonic()
    with pytest.raises(UserError) as err:
        list(iter_stories("some-user/no_such_news_dataset", hf_config="3.0.0"))
    assert time.monotonic() - start < 5
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(
        "cannot reach the Hugging Face hub for some-user/no_such_news_dataset (nor is it a "
        "local file or folder);"
    )
    assert "local json/csv/parquet files with article/highlights columns" in message


def test_hub_probe_fails_fast_without_calling_the_loader(monkeypatch):
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface, "hub_reachable", lambda timeout=3.0: False)

    def never(*args, **kwargs):
        raise AssertionError("load_dataset must not be called when the hub is unreachable")

    monkeypatch.setattr(datasets, "load_dataset", never)
    with pytest.raises(UserError, match="cannot reach the Hugging Face hub for cnn_dailymail"):
        list(iter_stories("cnn_dailymail", hf_config="3.0.0"))


def test_hub_dataset_splits(monkeypatch):
    fake = datasets.DatasetDict(
        {
            "test": datasets.Dataset.from_list([{"article": "T.", "highlights": "t", "id": "t0"}]),
            "train": datasets.Dataset.from_list(
                [{"article": "A.", "highlights": "a\nb", "id": "a0"}]
            ),
            "validation": datasets.Dataset.from_list(
                [{"article": "V.", "highlights": "v", "id": "v0"}]
            ),
        }
    )
    calls = []
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets, "load_dataset", lambda *a: calls.append(a) or fake)
    items = list(iter_stories("cnn_dailymail", hf_config="3.0.0"))
    assert calls == [("cnn_dailymail", "3.0.0")]
    assert [(s.id, s.split) for s in items] == [
        ("a0", "train"),
        ("v0", "validation"),
        ("t0", "test"),
    ]
    assert items[0].source == "cnn_dailymail[train]:row 0"
    only = list(iter_stories("cnn_dailymail", hf_splits=["val"]))
    assert [s.id for s in only] == ["v0"]
    with pytest.raises(UserError, match="no split unlabeled; it has test, train, validation"):
        list(iter_stories("cnn_dailymail", hf_splits=["unlabeled"]))


def test_archive_of_the_cnn_sample_reads_like_the_folder(shared_data, tmp_path):
    folder = shared_data / "cnn_stories"
    files = sorted(folder.glob("*.story"))
    archive = write_tgz(
        tmp_path / "cnn.tgz", {f"cnn/stories/{p.name}": p.read_bytes() for p in files}
    )
    from_folder = list(iter_stories(str(folder)))
    from_archive = list(iter_stories(str(archive)))
    assert len(from_folder) == 20 and all(isinstance(s, Story) for s in from_folder)
    strip = [(s.id, s.article, s.highlights) for s in from_folder]
    assert strip == [(s.id, s.article, s.highlights) for s in from_archive]
    for story, path in zip(from_folder, files):  # one highlight per @highlight block
        assert len(story.highlights) == path.read_text().count("@highlight\n")
    assert sum(len(s.highlights) for s in from_folder) == 59
