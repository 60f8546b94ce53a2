"""The page of ``attentive-reader serve`` through Starlette's test client: answers, escaping,
the request cap, dataset browsing, and the command's options."""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.slow

ARTICLE = (
    "Shares in Greystone Bank rose after Susan Kennedy flew to Lisbon.\n\n"
    "Kennedy smiled. <script>alert('x')</script> Greystone Bank said the deal was done."
)


@pytest.fixture(scope="module")
def client(trained, reader):
    from starlette.testclient import TestClient

    from attentive_reader.serve.app import create_app

    return TestClient(create_app(reader, data=trained.data, max_bytes=5_000))


def test_form_then_answer(client, reader):
    home = client.get("/")
    assert home.status_code == 200 and 'action="/answer"' in home.text
    assert "<script" not in home.text  # no JavaScript at all
    assert "script-src" not in home.headers["content-security-policy"]  # default-src 'none'
    response = client.post("/answer", data={"document": ARTICLE, "query": "@placeholder smiled"})
    assert response.status_code == 200
    page = response.text
    expected = reader.answer(ARTICLE, "@placeholder smiled")
    filled = re.search(r'<p class="filled" id="filled">(.*?)</p>', page).group(1)
    assert filled == expected.filled
    rows = re.findall(r"<tr><td class=\"num\">\d+</td><td>(.*?)</td><td>(@entity\d+)</td>", page)
    assert rows == [(c.name, c.marker) for c in expected.candidates]
    # Every token escaped: the document's <script> is text, in both views.
    assert "<script" not in page and page.count("&lt;</span>") == 2
    # Both views: markers and real names.
    assert 'id="names-view"' in page and 'id="markers-view"' in page
    markers_view = page.split('id="markers-view"')[1]
    assert "@entity1" in markers_view and ">Susan Kennedy<" in page.split('id="markers-view"')[0]
    # The form keeps what was sent, escaped.
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in page


def test_every_page_with_an_answer_carries_the_caution(client, reader):
    caution = reader.provenance.warning()
    assert caution is not None  # trained on the synthetic corpus
    shown = f'<p class="notice" id="caution">warning: {caution}</p>'
    asked = client.post("/answer", data={"document": ARTICLE, "query": "@placeholder smiled"})
    example = client.get("/examples/validation/0")
    for page in (asked, example):
        assert page.status_code == 200 and 'id="filled"' in page.text
        assert shown in page.text


def test_bad_input_is_shown_not_raised(client):
    response = client.post("/answer", data={"document": ARTICLE, "query": "no blank"})
    assert response.status_code == 400 and "has no blank" in response.text
    response = client.post("/answer", data={"document": "", "query": "@placeholder"})
    assert response.status_code == 400 and "the document is empty" in response.text


def test_request_size_is_capped(client):
    response = client.post("/answer", data={"document": "x" * 6_000, "query": "@placeholder"})
    assert response.status_code == 413 and "over 5,000 bytes" in response.text

    def chunks():  # no Content-Length: the cap holds while reading
        for _ in range(10):
            yield b"document=" + b"y" * 1_000

    response = client.post(
        "/answer",
        content=chunks(),
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert response.status_code == 413


def test_dataset_examples_are_browsed_by_split_and_number(client, trained, reader):
    import datasets

    from attentive_reader.corpus.records import ClozeExample

    listing = client.get("/examples?split=validation")
    rows = datasets.load_from_disk(str(trained.data))["validation"]
    assert listing.status_code == 200 and listing.text.count('href="/examples/validation/') == len(
        rows
    )
    page = client.get("/examples/validation/0")
    stored = ClozeExample.from_row(rows[0])
    expected = reader.answer_example(stored)
    assert page.status_code == 200 and stored.id in page.text
    assert f'<b id="gold">{stored.entities[stored.answer]}</b>' in page.text
    assert expected.filled in page.text.replace("&#39;", "'")
    # The client names a split and a row, never a path.
    assert client.get("/examples/../../etc/0").status_code == 404
    assert client.get(f"/examples/validation/{len(rows)}").status_code == 404
    assert client.get("/examples?split=secret").status_code == 404


def test_serve_command_options(trained, capsys):
    from attentive_reader.cli import main as cli

    assert cli(["serve", "--ckpt", str(trained.ckpt), "--port", "0"]) == 2
    assert "--port must be in 1..65535" in capsys.readouterr().err
    assert cli(["serve", "--ckpt", str(trained.ckpt), "--data", str(trained.corpus)]) == 2
    assert "not a processed dataset" in capsys.readouterr().err
    for options, message in [
        (["--workers", "0"], "--workers must be positive, got 0"),
        (["--queue", "-1"], "--queue must be zero or more, got -1"),
        (["--timeout", "0"], "--timeout must be positive, got 0"),
        (["--timeout", "inf"], "--timeout must be positive, got inf"),
        (["--pool", "thread", "--workers", "2"], "--pool thread answers on one thread"),
    ]:
        assert cli(["serve", "--ckpt", str(trained.ckpt), *options]) == 2
        assert message in capsys.readouterr().err
