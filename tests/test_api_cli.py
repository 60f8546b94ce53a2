"""``attentive-reader answer`` end to end: table, JSON, stdin, batch files with bad lines,
heatmap pages, and one-line errors for bad documents and options."""

from __future__ import annotations

import io
import json
import sys

import pytest

from attentive_reader.cli import main as cli

pytestmark = pytest.mark.slow

ARTICLE = (
    "Shares in Greystone Bank rose after Susan Kennedy flew to Lisbon.\n\n"
    "Kennedy smiled. Greystone Bank said the deal was done."
)


@pytest.fixture
def article(tmp_path):
    path = tmp_path / "article.txt"
    path.write_text(ARTICLE, encoding="utf-8")
    return path


def test_table_and_filled_query(trained, article, capsys):
    argv = ["answer", "--ckpt", str(trained.ckpt), "--document", str(article)]
    assert cli([*argv, "--query", "@placeholder flew to Lisbon", "--top", "2"]) == 0
    out = capsys.readouterr().out
    names = [n for n in ("Greystone Bank", "Susan Kennedy", "Lisbon") if n in out]
    assert len(names) >= 2 and "probability" in out
    (line,) = [x for x in out.splitlines() if x.startswith("answer: ")]
    assert line.endswith(" flew to Lisbon") and line[8:-15] in names


def test_json_from_stdin_matches_the_api(trained, capsys, monkeypatch):
    from attentive_reader import Reader

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(ARTICLE.encode())))
    argv = ["answer", "--ckpt", str(trained.ckpt), "--document", "-", "--json", "--top", "3"]
    assert cli([*argv, "--query", "XXX smiled"]) == 0
    data = json.loads(capsys.readouterr().out)
    expected = Reader.load(trained.ckpt).answer(ARTICLE, "XXX smiled").to_json(top=3)
    assert [c["marker"] for c in data["candidates"]] == [
        c["marker"] for c in expected["candidates"]
    ]
    assert data["filled"] == expected["filled"] and data["query"] == "XXX smiled"
    assert data["candidates"][0]["probability"] == pytest.approx(
        expected["candidates"][0]["probability"], abs=1e-5
    )


def test_batch_reports_bad_lines_by_number_and_goes_on(trained, tmp_path, capsys):
    batch = tmp_path / "questions.jsonl"
    lines = [
        json.dumps({"document": ARTICLE, "query": "@placeholder smiled"}),
        "{not json",
        "",
        json.dumps({"document": ARTICLE, "query": "no blank"}),
        json.dumps({"document": ARTICLE}),
        json.dumps(["a list"]),
        json.dumps({"document": "Nothing named here.", "query": "@placeholder smiled"}),
        json.dumps({"document": ARTICLE, "query": "Kennedy flew to ___"}),
    ]
    batch.write_bytes(("\n".join(lines) + "\n").encode() + b'{"document": "\xff"}\n')
    out = tmp_path / "answers.jsonl"
    argv = ["answer", "--ckpt", str(trained.ckpt), "--batch", str(batch), "--out", str(out)]
    assert cli(argv) == 1  # some lines were bad
    err = capsys.readouterr().err
    assert f"{batch} line 2: not JSON" in err
    assert f"{batch} line 4: the query 'no blank' has no blank" in err
    assert f"{batch} line 5: no query text" in err
    assert f"{batch} line 6: not a JSON object" in err
    assert f"{batch} line 7: the document has no entity" in err
    assert f"{batch} line 9: not UTF-8" in err
    assert "answered 2 questions" in err and "6 bad lines" in err
    records = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["line"] for r in records] == [1, 8]
    assert records[1]["filled"].startswith("Kennedy flew to ")
    assert not list(tmp_path.glob(".*partial*"))


def test_heatmap_page_escapes_the_document(trained, tmp_path, capsys):
    doc = tmp_path / "doc.story"
    doc.write_text(
        ARTICLE + " <script>alert(1)</script>\n\n@highlight\n\nKennedy smiled", encoding="utf-8"
    )
    page = tmp_path / "page.html"
    argv = ["answer", "--ckpt", str(trained.ckpt), "--document", str(doc)]
    assert cli([*argv, "--query", "@placeholder smiled", "--heatmap", str(page)]) == 0
    html = page.read_text()
    assert "<script" not in html and ">&lt;</span>" in html
    assert "Susan Kennedy" in html and "With real names" in html
    assert "heatmap written" in capsys.readouterr().err
    # The reader was trained on the synthetic corpus: the page says so above the answer.
    caution = html.split('<p class="caution" id="caution">warning: ')[1].split("</p>")[0]
    assert caution.startswith("this reader was trained on the built-in synthetic corpus")
    assert html.index('id="caution"') < html.index("prediction")


def test_a_trustworthy_readers_heatmap_page_has_no_caution():
    from attentive_reader.viz.heatmap import HeatmapExample
    from attentive_reader.viz.html import render_html

    ex = HeatmapExample(
        id="q",
        context=("@entity0", "won"),
        query=("@placeholder", "won"),
        candidates=("@entity0",),
        probabilities={"@entity0": 1.0},
        prediction="@entity0",
        answer=None,
        attention=(0.75, 0.25),
    )
    assert 'id="caution"' not in render_html(ex)
    assert 'id="caution">warning: mind the data</p>' in render_html(ex, caution="mind the data")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "empty file"),
        (b"Kennedy \xff smiled", "not UTF-8: invalid byte 0xff at byte offset 8"),
        (b"Kennedy\x00", "binary file"),
    ],
)
def test_bad_document_files_are_one_line_errors(trained, tmp_path, capsys, content, message):
    doc = tmp_path / "doc.txt"
    doc.write_bytes(content)
    argv = ["answer", "--ckpt", str(trained.ckpt), "--document", str(doc)]
    assert cli([*argv, "--query", "@placeholder smiled"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "Traceback" not in err


def test_option_errors(trained, article, tmp_path, capsys):
    base = ["answer", "--ckpt", str(trained.ckpt)]
    cases = [
        ([*base, "--document", str(article)], "--document needs --query"),
        ([*base, "--document", str(tmp_path / "no.txt"), "--query", "@placeholder"], "not found"),
        ([*base, "--batch", str(article), "--query", "x"], "--query goes with --document"),
        ([*base, "--document", str(article), "--query", "a ___ b ___"], "has 2 blanks"),
        ([*base, "--document", str(article), "--query", "@placeholder", "--top", "0"], "--top"),
        (
            [
                "answer",
                "--ckpt",
                str(tmp_path / "x.ckpt"),
                "--document",
                str(article),
                "--query",
                "@placeholder",
            ],
            "checkpoint not found",
        ),
    ]
    for argv, message in cases:
        assert cli(argv) == 2, argv
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, (argv, err)
