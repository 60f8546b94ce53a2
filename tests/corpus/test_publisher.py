"""``--publisher cnn|dailymail``: one publisher kept, as the url lists tell; the other counted.

The records' ids are the SHA-1 of their url; the url lists give that url and its host the
publisher (a Wayback Machine url: the host of the archived url). No NER runs here: the
filter acts on the input stream (``shards.iter_items``), and the end-to-end run reads
``.question`` archives.
"""

from __future__ import annotations

import json
from collections import Counter

import datasets

from attentive_reader.cli import main
from attentive_reader.corpus.preprocess import PreprocessOptions
from attentive_reader.corpus.records import Skip
from attentive_reader.corpus.shards import input_kinds, iter_items
from attentive_reader.corpus.sources import UrlLists, publisher_of_url, url_sha1
from tests.corpus.fixtures import write_csv
from tests.downloads import write_question_archive

CNN = "http://web.archive.org/web/20150401100102id_/http://www.cnn.com:80/2015/04/01/x/"
DM = "http://web.archive.org/web/20150403223948id_/http://www.dailymail.co.uk/news/a.html"


def test_publisher_of_url_reads_the_archived_host():
    assert publisher_of_url(CNN) == "cnn"
    assert publisher_of_url(DM) == "dailymail"
    assert publisher_of_url("http://us.cnn.com/2007/US/07/13/x/index.html") == "cnn"
    assert publisher_of_url("http://notcnn.com/x") is None
    assert publisher_of_url("http://web.archive.org/web/2015/") is None


def _reasons(items) -> Counter:
    return Counter(
        i.record.reason if isinstance(i.record, Skip) else f"kept:{i.split}" for i in items
    )


def test_real_test_stories_split_by_publisher(shared_data):
    folder = shared_data / "cnn_dm_test_stories"
    lists = str(folder / "url_lists")
    inputs = [str(folder / "cnn"), str(folder / "dailymail")]
    for publisher, kept, other in (("cnn", 24, 226), ("dailymail", 226, 24)):
        options = PreprocessOptions(url_lists=lists, publisher=publisher)
        items = iter_items(inputs, input_kinds(inputs), options, UrlLists.from_dir(lists))
        assert _reasons(items) == {"kept:test": kept, "other_publisher": other}


def test_hub_style_rows_keep_one_publisher(tmp_path):
    (tmp_path / "lists").mkdir()
    (tmp_path / "lists" / "all_train.txt").write_text(f"{CNN}\n{DM}\n")
    rows = [
        {"id": url_sha1(CNN), "article": "A.", "highlights": "a"},
        {"id": url_sha1(DM), "article": "B.", "highlights": "b"},
        {"id": url_sha1("http://www.cnn.com/unlisted"), "article": "C.", "highlights": "c"},
    ]
    inputs = [str(write_csv(tmp_path / "train.csv", rows))]
    options = PreprocessOptions(url_lists=str(tmp_path / "lists"), publisher="dailymail")
    lists = UrlLists.from_dir(tmp_path / "lists")
    items = list(iter_items(inputs, input_kinds(inputs), options, lists))
    assert [i.record.id for i in items if not isinstance(i.record, Skip)] == [url_sha1(DM)]
    assert _reasons(items) == {"kept:train": 1, "other_publisher": 1, "not_in_url_lists": 1}
    assert items[0].record.detail == f"story {url_sha1(CNN)}: cnn, not dailymail"
    assert "publisher is unknown (--publisher dailymail)" in items[2].record.detail


def test_preprocess_keeps_one_publisher_and_counts_the_other(tmp_path, capsys):
    cnn = write_question_archive(tmp_path / "cnn.tgz", {"train": 4, "test": 2}, top="cnn")
    dm = write_question_archive(tmp_path / "dailymail.tgz", {"train": 3}, top="dailymail")
    lists = tmp_path / "url_lists"
    lists.mkdir()
    urls = {e.url for examples in (*cnn.values(), *dm.values()) for e in examples}
    (lists / "all_train.txt").write_text("".join(f"{u}\n" for u in sorted(urls)))
    args = ["preprocess", str(tmp_path / "cnn.tgz"), str(tmp_path / "dailymail.tgz"), "--quiet"]
    assert main([*args, "--output", str(tmp_path / "all")]) == 0
    kept = [*args, "--url-lists", str(lists), "--publisher", "cnn"]
    assert main([*kept, "--output", str(tmp_path / "cnn")]) == 0
    manifest = json.loads((tmp_path / "cnn" / "manifest.json").read_text())
    assert manifest["options"]["publisher"] == "cnn"
    assert manifest["counts"]["skipped"] == {"other_publisher": 3}
    assert manifest["counts"]["read"] == 9 and manifest["examples"] == {
        "train": 4,
        "validation": 0,
        "test": 2,
    }
    before = json.loads((tmp_path / "all" / "manifest.json").read_text())
    assert before["options"]["publisher"] is None and before["run_key"] != manifest["run_key"]
    dataset = datasets.load_from_disk(str(tmp_path / "cnn"))
    assert {row["url"] for row in dataset["train"]} == {e.url for e in cnn["train"]}


def test_publisher_without_url_lists_is_one_line(tmp_path, capsys):
    write_question_archive(tmp_path / "cnn.tgz")
    args = ["preprocess", str(tmp_path / "cnn.tgz"), "--output", str(tmp_path / "o")]
    assert main([*args, "--publisher", "cnn"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "--publisher cnn needs --url-lists DIR" in err
    assert "attentive-reader download url_lists" in err
    assert not (tmp_path / "o").exists()
    assert main([*args, "--publisher", "bbc"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
