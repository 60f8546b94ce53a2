"""``attentive-reader download`` against a real HTTP server on 127.0.0.1 (tests/downloads.py).

Resuming, Range ignored, a checksum or size that does not match, 404, no network, a server
that stalls, Google Drive's confirm pages, ``--mirror`` and ``--url/--sha256``. No test
touches the internet.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

from attentive_reader.cli import main
from attentive_reader.commands.download import build_parser
from attentive_reader.common.errors import UserError
from attentive_reader.corpus import drive
from attentive_reader.corpus.catalog import CATALOG, DMQA_PAGE
from attentive_reader.corpus.download import custom, download
from attentive_reader.corpus.fetch import FetchOptions
from tests.downloads import (
    TOKEN,
    LoopbackServer,
    closed_port_url,
    serve_folder,
    use_stand_ins,
    write_question_archive,
)

# Incompressible bytes, so that cut and stalled transfers stop at known offsets.
DATA = hashlib.shake_256(b"attentive-reader").digest(300_000)
SHA = hashlib.sha256(DATA).hexdigest()


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["download", *args, "--quiet"])
    out, err = capsys.readouterr()
    return code, out, err


def files_in(folder) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def one_line(err: str) -> str:
    assert err.count("\n") == 1 and err.startswith("attentive-reader download: error: "), err
    return err


# ------------------------------------------------------------------------------- resuming


def test_an_interrupted_download_resumes_to_the_identical_file(tmp_path, capsys):
    with LoopbackServer({"/big.bin": DATA}) as server:
        server.behaviour.cut["/big.bin"] = 120_000
        url = server.url("/big.bin")
        code, _, err = run(
            capsys, "--url", url, "--sha256", SHA, "--dest", str(tmp_path), "--retries", "0"
        )
        assert code == 2
        assert "the connection closed after 120,000 of 300,000 bytes" in one_line(err)
        assert "kept in big.bin.part: the next run resumes them" in err
        assert files_in(tmp_path) == ["big.bin.part"]
        assert (tmp_path / "big.bin.part").read_bytes() == DATA[:120_000]

        code, out, _ = run(capsys, "--url", url, "--sha256", SHA, "--dest", str(tmp_path))
        assert code == 0 and "matches the given checksum" in out
        assert server.seen("/big.bin")[1].headers["Range"] == "bytes=120000-"
    assert (tmp_path / "big.bin").read_bytes() == DATA
    assert files_in(tmp_path) == ["big.bin"]  # no partial, no lock file left


def test_a_cut_connection_is_retried_from_where_it_stopped_in_one_run(tmp_path):
    with LoopbackServer({"/big.bin": DATA}) as server:
        server.behaviour.cut["/big.bin"] = 50_000
        options = FetchOptions(retries=1, backoff=0)
        (done,) = download([custom(server.url("/big.bin"), SHA)], tmp_path, options=options)
        ranges = [r.headers.get("Range") for r in server.seen("/big.bin")]
    assert ranges == [None, "bytes=50000-"]
    assert done.fetched and done.checked and done.sha256 == SHA
    assert (tmp_path / "big.bin").read_bytes() == DATA


def test_a_server_that_ignores_range_sends_the_whole_file_again(tmp_path, capsys):
    (tmp_path / "big.bin.part").write_bytes(b"x" * 1000)  # not even the right bytes
    with LoopbackServer({"/big.bin": DATA}) as server:
        server.behaviour.ranges = False
        code, _, _ = run(
            capsys, "--url", server.url("/big.bin"), "--sha256", SHA, "--dest", str(tmp_path)
        )
        assert server.seen("/big.bin")[0].headers["Range"] == "bytes=1000-"
    assert code == 0 and (tmp_path / "big.bin").read_bytes() == DATA


def test_a_complete_partial_is_checked_without_fetching_it_again(tmp_path, capsys):
    (tmp_path / "big.bin.part").write_bytes(DATA)
    with LoopbackServer({"/big.bin": DATA}) as server:
        code, out, _ = run(capsys, "--url", server.url("/big.bin"), "--dest", str(tmp_path))
        assert len(server.seen("/big.bin")) == 1  # answered 416: nothing after the partial
    assert code == 0 and (tmp_path / "big.bin").read_bytes() == DATA
    # Without --sha256 the digest is printed, to compare.
    assert f"SHA-256 {SHA} (no published checksum: compare it with your source's)" in out


# ------------------------------------------------------------------------------- refusals


def test_a_wrong_checksum_is_refused_and_nothing_is_left(tmp_path, capsys):
    served = tmp_path / "served"
    served.mkdir()
    write_question_archive(served / "cnn.tgz")  # a stand-in: not DeepMind's cnn.tgz
    dest = tmp_path / "dest"
    with serve_folder(served) as server:
        code, _, err = run(capsys, "cnn", "--mirror", server.base, "--dest", str(dest))
    assert code == 2
    got = hashlib.sha256((served / "cnn.tgz").read_bytes()).hexdigest()
    line = one_line(err)
    assert f"{server.base}/cnn.tgz: the file that arrived as cnn.tgz has SHA-256 {got}" in line
    assert (
        f"expected {CATALOG['cnn'].files[0].sha256} (published by ParlAI, parlai/tasks/qacnn/build.py)"
        in line
    )
    assert "it was removed" in line and f"Fetch it by hand from {DMQA_PAGE}" in line
    assert f"preprocess as it is: attentive-reader preprocess {dest}/cnn.tgz" in line
    assert files_in(dest) == []


def test_a_file_of_another_size_is_refused_before_it_is_fetched(tmp_path, capsys):
    with LoopbackServer({"/cnn_stories.tgz": DATA}) as server:
        code, _, err = run(
            capsys, "cnn_stories", "--mirror", server.base + "/", "--dest", str(tmp_path)
        )
    assert code == 2
    assert "the server offers 300,000 bytes, expected 158,577,824 bytes" in one_line(err)
    assert files_in(tmp_path) == []


def test_404_names_the_url_and_how_to_fetch_by_hand(tmp_path, capsys):
    with LoopbackServer() as server:
        code, _, err = run(capsys, "url_lists", "--mirror", server.base, "--dest", str(tmp_path))
    assert code == 2
    line = one_line(err)
    assert f"cannot download all_train.txt: {server.base}/all_train.txt: HTTP 404 Not Found" in line
    assert "expected 46,424,688 bytes, SHA-256 a5cee49f" in line
    assert "Fetch it by hand from https://github.com/abisee/cnn-dailymail" in line
    assert f"--url-lists {tmp_path}/url_lists" in line
    assert files_in(tmp_path) == []


def test_no_network_is_one_line(tmp_path, capsys):
    url = closed_port_url()
    code, _, err = run(capsys, "--url", url, "--dest", str(tmp_path), "--retries", "0")
    assert code == 2
    assert (
        f"cannot download cnn.tgz: {url}: no connection (Connection refused) (1 try)"
        in one_line(err)
    )


def test_a_server_that_stalls_times_out_and_the_next_run_resumes(tmp_path, capsys):
    with LoopbackServer({"/big.bin": DATA}) as server:
        server.behaviour.stall["/big.bin"] = (100_000, 60.0)
        args = ("--url", server.url("/big.bin"), "--sha256", SHA, "--dest", str(tmp_path))
        code, _, err = run(capsys, *args, "--timeout", "0.2", "--retries", "0")
        assert code == 2
        assert "no data for 0.2 s after 100 KB (1 try)" in one_line(err)
        assert (tmp_path / "big.bin.part").stat().st_size == 100_000
        del server.behaviour.stall["/big.bin"]
        code, _, _ = run(capsys, *args)
    assert code == 0 and (tmp_path / "big.bin").read_bytes() == DATA


# ------------------------------------------------------------------------------- Google Drive


@pytest.mark.parametrize("kind", ["form", "link", "cookie"])
def test_drive_confirm_pages_are_passed(tmp_path, capsys, kind):
    with LoopbackServer({"/stored/cnn.tgz": DATA}) as server:
        server.behaviour.drive["0BwmD"] = ("/stored/cnn.tgz", kind)
        url = server.url("/uc?export=download&id=0BwmD")
        code, out, _ = run(
            capsys, "--url", url, "--name", "cnn.tgz", "--sha256", SHA, "--dest", str(tmp_path)
        )
        paths = [r.path for r in server.requests]
    assert code == 0 and (tmp_path / "cnn.tgz").read_bytes() == DATA
    if kind == "form":
        assert paths[1].startswith("/download?id=0BwmD&export=download&confirm=t&uuid=")
    else:
        assert re.fullmatch(
            rf"/uc\?export=download&(id=0BwmD&confirm={TOKEN}|confirm={TOKEN}&id=0BwmD)", paths[1]
        )
    assert len(paths) == 2


def test_drive_refusing_the_file_is_one_line(tmp_path, capsys):
    with LoopbackServer({"/stored/cnn.tgz": DATA}) as server:
        server.behaviour.drive["0BwmD"] = ("/stored/cnn.tgz", "quota")
        url = server.url("/uc?export=download&id=0BwmD")
        code, _, err = run(capsys, "--url", url, "--name", "cnn.tgz", "--dest", str(tmp_path))
    assert code == 2
    assert "Google Drive refuses: too many downloads of this file today" in one_line(err)
    assert files_in(tmp_path) == []


def test_confirm_url_reads_both_forms_of_the_page():
    page = "https://drive.google.com/uc?export=download&id=F1"
    form = (
        '<form id="download-form" action="https://drive.usercontent.google.com/download" '
        'method="post"><input type="hidden" name="id" value="F1"><input type="hidden" '
        'name="export" value="download"><input type="hidden" name="confirm" value="t">'
        '<input type="hidden" name="uuid" value="u-1"><input type="submit" value="Go"></form>'
    )
    assert drive.confirm_url(form, page) == (
        "https://drive.usercontent.google.com/download?id=F1&export=download&confirm=t&uuid=u-1"
    )
    link = '<a href="/uc?export=download&amp;confirm=AbCd&amp;id=F1">Download anyway</a>'
    assert drive.confirm_url(link, page) == (
        "https://drive.google.com/uc?export=download&confirm=AbCd&id=F1"
    )
    cookies = {"NID": "x", "download_warning_123_F1": "Tk"}
    assert drive.confirm_url("<p>scan warning</p>", page, cookies) == (
        "https://drive.google.com/uc?export=download&id=F1&confirm=Tk"
    )
    assert drive.confirm_url("<p>Too many users have viewed this file</p>", page) is None


# ------------------------------------------------------------------------------- names


def test_mirror_fetches_the_names_and_a_second_run_fetches_nothing(tmp_path, capsys, monkeypatch):
    served = tmp_path / "served"
    served.mkdir()
    write_question_archive(served / "cnn.tgz")
    for name in ("all_train.txt", "all_val.txt", "all_test.txt"):
        (served / name).write_text(f"http://www.cnn.com/{name}\n")
    use_stand_ins(monkeypatch, served)
    dest = tmp_path / "dest"
    with serve_folder(served) as server:
        code, out, _ = run(capsys, "cnn", "url_lists", "--mirror", server.base, "--dest", str(dest))
        assert code == 0
        assert files_in(dest) == [
            "cnn.tgz",
            *(f"url_lists/{n}" for n in ("all_test.txt", "all_train.txt", "all_val.txt")),
        ]
        assert "4 files in" in out and "4 fetched by this run" in out
        assert f"next: attentive-reader preprocess {dest}/cnn.tgz --output DIR" in out
        asked = len(server.requests)
        code, out, _ = run(capsys, "cnn", "url_lists", "--mirror", server.base, "--dest", str(dest))
        assert code == 0 and len(server.requests) == asked  # verified, not fetched again
        assert out.count(": already there,") == 4 and "0 fetched by this run" in out
    assert (dest / "cnn.tgz").read_bytes() == (served / "cnn.tgz").read_bytes()
    # ... and read as it was downloaded.
    data = tmp_path / "data"
    assert main(["preprocess", str(dest / "cnn.tgz"), "--output", str(data), "--quiet"]) == 0
    capsys.readouterr()
    assert (data / "manifest.json").is_file()
    (dest / "url_lists" / "all_val.txt").write_text("edited\n")
    code, _, err = run(capsys, "url_lists", "--mirror", "http://127.0.0.1:9/", "--dest", str(dest))
    assert code == 2
    assert f"{dest}/url_lists/all_val.txt is there already but has 7 bytes, expected" in one_line(
        err
    )


def test_bad_arguments_are_one_line(tmp_path, capsys):
    cases = [
        (["nope"], "unknown corpus 'nope'; choose among cnn, dailymail, cnn_stories"),
        ([], "name what to download: cnn, dailymail"),
        (["cnn", "--url", "http://127.0.0.1:9/x.tgz"], "--url downloads one file"),
        (["--url", "ftp://host/x.tgz"], "--url ftp://host/x.tgz: not an http:// or https:// URL"),
        (["--url", "http://h/x.tgz", "--sha256", "abc"], "expected 64 hexadecimal digits"),
        (["cnn", "--sha256", SHA], "--sha256 and --name go with --url"),
        (
            ["cnn", "--mirror", "127.0.0.1/x"],
            "--mirror 127.0.0.1/x: not an http:// or https:// URL",
        ),
    ]
    for args, message in cases:
        code, _, err = run(capsys, *args, "--dest", str(tmp_path))
        assert code == 2 and message in one_line(err), (args, err)
    with pytest.raises(UserError, match=r"'a b\.tgz' cannot be a file name.*pass --name FILE"):
        custom("http://h/a%20b.tgz")
    assert files_in(tmp_path) == []


def test_every_catalog_file_has_its_checksum_and_source():
    for corpus in CATALOG.values():
        for file in corpus.files:
            assert re.fullmatch(r"[0-9a-f]{64}", file.sha256 or ""), file
            assert file.source and file.urls and all(u.startswith("https://") for u in file.urls)
    names = [f.name for c in CATALOG.values() for f in c.files]
    assert len(names) == len(set(names))  # one flat folder on a mirror


def test_the_download_command_loads_neither_torch_nor_spacy_nor_datasets():
    probe = (
        "import sys, attentive_reader.commands.download;"
        "print(sorted(m for m in ('torch', 'spacy', 'datasets') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_docs_table_and_flags_agree_with_the_catalog_and_help():
    page = (Path(__file__).resolve().parents[2] / "docs" / "download.md").read_text()
    rows = {line.split("|")[2].strip(): line for line in page.splitlines() if line.count("|") == 6}
    for corpus in CATALOG.values():
        for file in corpus.files:
            row = rows[f"`{file.path}`"]
            assert f"`{file.sha256}`" in row and file.source.split(",")[0] in row
            assert (f"{file.size:,}" if file.size else "not published") in row
        assert f"| `{corpus.name}` | `{corpus.files[0].path}` |" in page
    usage = build_parser().format_help()
    named = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]+", page)) - {"--help", "--output"}
    named -= {"--url-lists", "--publisher", "--spacy-model", "--bind"}  # other commands' flags
    assert named and all(flag in usage for flag in named), named - set(
        re.findall(r"--[\w-]+", usage)
    )
