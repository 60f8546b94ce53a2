"""The JSON API of ``attentive-reader serve`` through Starlette's test client: the answers are
the command's JSON, refusals carry stable codes, and every response carries the security
headers (404, 405 and 500 included)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from attentive_reader.serve.headers import SECURITY_HEADERS
from tests.serve.live import ARTICLE, DOCS, QUERY

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def app(trained, reader):
    from attentive_reader.serve.app import create_app

    return create_app(reader, data=trained.data, max_bytes=5_000)


@pytest.fixture(scope="module")
def client(app):
    from starlette.testclient import TestClient

    return TestClient(app)


def _served(record: dict) -> dict:
    """``answer --json``'s ``reader`` block as a server sends it: the dataset folder's last
    part, never the server's folders."""
    folder = Path(record["data"])
    return {
        **record,
        "data": folder.name,
        "description": record["description"].replace(str(folder), folder.name),
    }


def test_answer_is_the_json_of_the_answer_command(client, reader, trained, tmp_path, capsys):
    from attentive_reader.cli import main as cli

    response = client.post("/api/answer", json={"document": ARTICLE, "query": QUERY, "top": 2})
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    article = tmp_path / "article.txt"
    article.write_text(ARTICLE, encoding="utf-8")
    argv = ["answer", "--ckpt", str(trained.ckpt), "--document", str(article), "--query", QUERY]
    assert cli([*argv, "--top", "2", "--json"]) == 0
    command = json.loads(capsys.readouterr().out)
    # The command's JSON, the reader block and its caution included.
    assert response.json() == {**command, "reader": _served(command["reader"])}
    assert response.json()["reader"]["warning"].startswith("this reader was trained on the")
    assert str(trained.data.parent) not in response.text
    expected = reader.answer(ARTICLE, QUERY)
    assert len(response.json()["candidates"]) == 2 == len(expected.to_json(2)["candidates"])
    # By default the command's five candidates; the heatmap on request.
    plain = client.post("/api/answer", json={"document": ARTICLE, "query": QUERY}).json()
    assert len(plain["candidates"]) == min(5, len(expected.candidates))
    assert "heatmap" not in plain
    shaded = client.post(
        "/api/answer", json={"document": ARTICLE, "query": QUERY, "heatmap": True}
    ).json()
    heatmap = shaded.pop("heatmap")
    assert shaded == plain
    assert heatmap["context"] == list(expected.context)
    assert heatmap["query"] == list(expected.question)
    assert heatmap["entities"] == expected.entities
    assert heatmap["attention"] == pytest.approx(list(expected.attention))
    assert len(heatmap["attention"]) == len(heatmap["context"])


def test_answer_many_keeps_the_order_and_refusals_in_place(client, reader):
    questions = [
        {"document": ARTICLE, "query": QUERY},
        {"document": ARTICLE, "query": "nobody smiled"},
        {"document": "", "query": QUERY},
        {"document": ARTICLE, "query": "@placeholder flew to Lisbon"},
    ]
    response = client.post("/api/answer_many", json={"questions": questions, "top": 1})
    assert response.status_code == 200
    answers = response.json()["answers"]
    assert response.json()["reader"] == reader.provenance.to_json(folder=False)
    assert [a.get("error") for a in answers] == [None, "no_blank", "empty_document", None]
    assert "has no blank" in answers[1]["message"]
    for got, asked in zip([answers[0], answers[3]], [questions[0], questions[3]]):
        expected = reader.answer(asked["document"], asked["query"]).to_json(1)
        assert _same(got, json.loads(json.dumps(expected)))


def _same(got, expected) -> bool:
    """Equal, probabilities to float32 rounding: ``answer_many`` reads its questions as one
    padded batch, ``answer`` one by one, and the padding moves the last bits of the sums."""
    if isinstance(expected, float):
        return got == pytest.approx(expected, rel=1e-5, abs=1e-7)
    if isinstance(expected, dict):
        return got.keys() == expected.keys() and all(_same(got[k], expected[k]) for k in expected)
    if isinstance(expected, list):
        return len(got) == len(expected) and all(map(_same, got, expected))
    return got == expected


def test_health_names_the_model_pipeline_version_and_queue(client, reader):
    import attentive_reader

    health = client.get("/api/health").json()
    assert health["status"] == "ok"
    assert health["model"] == "last.ckpt"  # the file's name, never the server's folders
    assert health["reader"] == type(reader.model).__name__
    assert health["version"] == attentive_reader.__version__
    assert set(health["pipeline"]) == {"name", "version"}
    assert (health["pool"], health["workers"], health["answering"], health["waiting"]) == (
        "thread",
        1,
        0,
        0,
    )
    assert health["queue"] == 16 and health["timeout"] == 30


@pytest.mark.parametrize(
    ("body", "content_type", "status", "code", "words"),
    [
        ('{"document": "x", "query": "@placeholder"}', "text/plain", 415, "bad_content_type", "JSON"),
        ("document=x&query=y", "application/x-www-form-urlencoded", 415, "bad_content_type", ""),
        ('{"document": "x",', "application/json", 400, "bad_json", "not JSON"),
        (b'{"document": "\xff"}', "application/json", 400, "bad_json", "not UTF-8"),
        ("[" * 100_000 + "]" * 100_000, "application/json", 413, "too_large", "5,000 bytes"),
        ("[" * 2_400 + "]" * 2_400, "application/json", 400, "bad_json", "nested too deeply"),
        ('{"top": ' + "9" * 4_400 + "}", "application/json", 400, "bad_json", "digits"),
        ("[1, 2]", "application/json", 400, "not_object", "got list"),
        ('"text"', "application/json", 400, "not_object", "got str"),
        ('{"document": "x"}', "application/json", 400, "bad_field", "no query"),
        ('{"document": 1, "query": "@placeholder"}', "application/json", 400, "bad_field", "text"),
        ('{"document": "x", "query": "a", "quary": 1}', "application/json", 400, "unknown_field", "quary"),
        ('{"document": "x", "query": "@placeholder", "top": 0}', "application/json", 400, "bad_field", "top"),
        ('{"document": "x", "query": "@placeholder", "top": true}', "application/json", 400, "bad_field", "top"),
        ('{"document": "x", "query": "@placeholder", "heatmap": 1}', "application/json", 400, "bad_field", "heatmap"),
        ('{"document": "\\ud800", "query": "@placeholder"}', "application/json", 400, "bad_field", "surrogate"),
        ('{"document": "Lisbon.", "query": "no blank"}', "application/json", 400, "no_blank", "no blank"),
        ('{"document": "Lisbon.", "query": "XXX and ___"}', "application/json", 400, "many_blanks", "2 blanks"),
        ('{"document": "Lisbon.", "query": " "}', "application/json", 400, "empty_query", "empty"),
        ('{"document": "Lisbon.", "query": "@placeholder\\u0000"}', "application/json", 400, "nul_character", "NUL"),
        ('{"document": " ", "query": "@placeholder"}', "application/json", 400, "empty_document", "empty"),
        ('{"document": "\\n@highlight\\n\\nx", "query": "@placeholder"}', "application/json", 400, "bad_story", ".story"),
        ('{"document": "no names here", "query": "@placeholder"}', "application/json", 400, "no_entity", "no entity"),
    ],
)  # fmt: skip
def test_refusals_carry_a_stable_code_and_one_line(client, body, content_type, status, code, words):
    response = client.post("/api/answer", content=body, headers={"content-type": content_type})
    assert response.status_code == status
    problem = response.json()
    assert problem["error"] == code
    assert words in problem["message"] and "\n" not in problem["message"]


def test_answer_many_refusals(client):
    one = {"document": ARTICLE, "query": QUERY}
    cases = [
        ({"questions": []}, "bad_field", "list"),
        ({"questions": [{"document": "x", "query": "y"}] * 33}, "too_many_questions", "most 32"),
        ({"questions": [one, [1]]}, "not_object", "questions[1]"),
        ({"questions": [one, {"document": "x"}]}, "bad_field", "questions[1] has no query"),
        ({"questions": [{**one, "top": 2}]}, "unknown_field", "top"),
        ({"document": "x", "query": "y"}, "unknown_field", "document"),
    ]
    for body, code, words in cases:
        response = client.post("/api/answer_many", json=body)
        assert (response.status_code, response.json()["error"]) == (400, code), body
        assert words in response.json()["message"]


def test_a_document_with_more_entities_than_the_block_is_answered_with_a_notice(reader):
    """A reader of 3 entity ids (untrained: only what it is given to read matters here) reads
    a document of 6 places: the block keeps the three named first, with their names."""
    from starlette.testclient import TestClient

    from attentive_reader.api import Reader
    from attentive_reader.corpus.synthetic.words import CITIES
    from attentive_reader.data.vocab import Vocabulary
    from attentive_reader.models import AttentiveReader
    from attentive_reader.serve.app import create_app

    vocab = Vocabulary(reader.vocab.words, num_entities=3)
    model = AttentiveReader(vocab_size=len(vocab), num_entities=3, embedding_dim=4, hidden_dim=4)
    small = Reader(model, vocab, reader.nlp, reader.options)
    document = " ".join(f"{city} grew." for city in CITIES[:6])
    response = TestClient(create_app(small)).post(
        "/api/answer", json={"document": document, "query": QUERY, "top": 10}
    )
    assert response.status_code == 200
    body = response.json()
    assert {c["name"] for c in body["candidates"]} == set(CITIES[:3])
    assert body["notices"] == [
        "the document has 6 entities, more than the reader's 3 entity ids: the 3 named least "
        "often were read as unknown words and cannot be the answer"
    ]


class Broken:
    """A reader with a bug in it: the server's own failure, a 500."""

    def answer(self, document, query):
        raise RuntimeError("a bug")


def test_every_response_carries_the_security_headers(client, reader, caplog):
    from starlette.testclient import TestClient

    from attentive_reader.serve.app import create_app
    from attentive_reader.serve.pool import AnswerPool

    form = {"document": ARTICLE, "query": QUERY}
    asked = {"document": ARTICLE, "query": QUERY}
    walk = [
        ("GET", "/", {}, 200),
        ("POST", "/answer", {"data": form}, 200),
        ("POST", "/answer", {"data": {**form, "query": "no blank"}}, 400),
        ("POST", "/answer", {"data": {"document": "x" * 6_000}}, 413),
        ("GET", "/examples", {}, 200),
        ("GET", "/examples/test/0", {}, 200),
        ("GET", "/examples/test/999999999999", {}, 404),
        ("GET", "/examples/test/\u00b2", {}, 404),
        ("GET", "/no/such/page", {}, 404),
        ("DELETE", "/", {}, 405),
        ("GET", "/answer", {}, 405),
        ("GET", "/api/health", {}, 200),
        ("POST", "/api/answer", {"json": asked}, 200),
        ("POST", "/api/answer_many", {"json": {"questions": [asked]}}, 200),
        ("POST", "/api/answer", {"json": {**asked, "query": "x"}}, 400),
        ("POST", "/api/answer", {"content": "{}"}, 415),
        ("POST", "/api/answer", {"json": {"document": "x" * 6_000}}, 413),
        ("GET", "/api/answer", {}, 405),
        ("GET", "/api/nothing", {}, 404),
    ]
    seen = set()
    for method, path, options, status in walk:
        response = client.request(method, path, **options)
        assert response.status_code == status, (method, path, response.text[:200])
        for name, value in SECURITY_HEADERS.items():
            assert response.headers.get(name) == value, (method, path, name)
        if path.startswith("/api/") and status != 200:
            assert response.json()["error"]
        if status == 405:  # and says what is allowed
            assert "GET" in response.headers["allow"] or "POST" in response.headers["allow"]
        seen.add(status)
    # A bug in the server: a 500 that tells nothing of it, with the headers too.
    broken = TestClient(
        create_app(reader, pool=AnswerPool.threads(Broken())), raise_server_exceptions=False
    )
    with caplog.at_level("ERROR"):
        for path, options in [("/answer", {"data": form}), ("/api/answer", {"json": asked})]:
            response = broken.post(path, **options)
            assert response.status_code == 500
            assert "a bug" not in response.text and "Traceback" not in response.text
            for name, value in SECURITY_HEADERS.items():
                assert response.headers.get(name) == value, (path, name)
            seen.add(500)
    assert response.json() == {
        "error": "internal",
        "message": "the server failed on this request; its log says why",
    }
    assert seen == {200, 400, 404, 405, 413, 415, 500}


def test_the_docs_list_every_error_code():
    import attentive_reader
    from attentive_reader.serve.app import _STATUS_CODES

    documented = re.findall(r"^\| (\d{3}) \| `(\w+)` \|", DOCS.read_text(encoding="utf-8"), re.M)
    assert len(documented) == len(set(documented))
    package = Path(attentive_reader.__file__).parent
    source = "\n".join(p.read_text(encoding="utf-8") for p in package.rglob("*.py"))
    raised = set(re.findall(r'code="(\w+)"', source))  # a reader's UserError
    raised |= set(re.findall(r'Problem\(\s*\d{3},\s*"(\w+)"', source))  # the server's
    raised |= set(re.findall(r'_bad\(\s*"(\w+)"', source))  # the JSON API's checks
    raised |= set(_STATUS_CODES.values()) | {"too_large"}
    assert {code for _, code in documented} == raised


def test_the_docs_python_client_asks_a_real_server(reader):
    from attentive_reader.serve.app import create_app
    from tests.serve.live import running

    text = DOCS.read_text(encoding="utf-8")
    example = text.split("**A client in Python**")[1].split("```python\n")[1].split("```")[0]
    definitions, _, use = example.partition("\nanswer = ask(")
    assert "open(" in use  # the example reads an article file; here the test's article
    namespace: dict = {}
    exec(definitions, namespace)  # the docs' own code
    with running(create_app(reader)) as url:
        answer = namespace["ask"](ARTICLE, QUERY, server=url)
        expected = {
            **reader.answer(ARTICLE, QUERY).to_json(3),
            "reader": reader.provenance.to_json(folder=False),
        }
        assert answer == json.loads(json.dumps(expected))
        with pytest.raises(RuntimeError, match="^no_blank: the query 'x' has no blank"):
            namespace["ask"](ARTICLE, "x", server=url)
