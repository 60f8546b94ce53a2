"""The one atomic write (``fileio.replacing``) and the one digest helper."""

from __future__ import annotations

import json

import pytest

from attentive_reader.common.fileio import (
    digest_of,
    place,
    replacing,
    write_json_atomic,
    write_text_atomic,
)


def test_replacing_swaps_in_the_whole_file_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "page.html"
    path.write_text("old", encoding="utf-8")
    with replacing(path) as tmp:
        assert tmp.parent == path.parent and tmp.name.startswith(".page.html.tmp-")
        assert tmp.suffix == ".html"  # matplotlib reads the format from the suffix
        tmp.write_text("new", encoding="utf-8")
        assert path.read_text(encoding="utf-8") == "old"  # not yet
    assert path.read_text(encoding="utf-8") == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["page.html"]


def test_a_failed_write_keeps_the_old_file_and_removes_the_temporary(tmp_path):
    path = tmp_path / "counts.json"
    write_json_atomic(path, {"a": 1})
    with pytest.raises(OSError, match="disk full"):
        with replacing(path) as tmp:
            tmp.write_text('{"a": ', encoding="utf-8")
            raise OSError(28, "disk full")
    assert json.loads(path.read_text(encoding="utf-8")) == {"a": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["counts.json"]


def test_write_text_and_json_round_trip(tmp_path):
    write_text_atomic(tmp_path / "t.txt", "Ünïcode\n")
    assert (tmp_path / "t.txt").read_text(encoding="utf-8") == "Ünïcode\n"
    write_json_atomic(tmp_path / "d.json", {"b": [1, 2], "a": "é"})
    text = (tmp_path / "d.json").read_text(encoding="utf-8")
    assert json.loads(text) == {"b": [1, 2], "a": "é"} and text.endswith("}\n") and "é" in text


def test_digest_of_ignores_key_order_and_sees_every_value():
    assert digest_of({"a": 1, "b": [1, 2]}) == digest_of({"b": [1, 2], "a": 1})
    assert digest_of({"a": 1, "b": [1, 2]}) != digest_of({"a": 1, "b": [2, 1]})
    # the sha256 of the text {"a": 1} (python -c "import hashlib; hashlib.sha256(...)")
    assert digest_of({"a": 1}) == "f9d86028c6e0d64e225186f96acb69338b2c59764df79162107f5c4bb34d1310"


def test_place_moves_a_finished_file_or_folder_in_one_rename(tmp_path):
    built = tmp_path / ".built.partial"
    built.mkdir()
    (built / "ids.npy").write_bytes(b"123")
    target = tmp_path / "encoded"
    target.mkdir()  # an empty folder is replaced
    place(built, target)
    assert (target / "ids.npy").read_bytes() == b"123" and not built.exists()
    file = tmp_path / "cnn.tgz.partial"
    file.write_bytes(b"archive")
    place(file, tmp_path / "cnn.tgz")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cnn.tgz", "encoded"]
    other = tmp_path / ".other"
    other.mkdir()
    (other / "x").write_text("x")
    with pytest.raises(OSError):  # a folder that holds files is never replaced
        place(other, target)
    assert (target / "ids.npy").exists()
