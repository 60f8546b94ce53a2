"""Hostile requests to ``attentive-reader serve``, tried by Hypothesis: random bytes, JSON of
any shape (deeply nested, not an object, wrong types), hostile text in the right fields, wrong
content types, random form fields. Every one is an answer or a 4xx with a known code and a
one-line message: never a 500, never a traceback in the log."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attentive_reader.serve.json_api import Asked, parse_request
from attentive_reader.serve.problems import Problem
from tests.hostile import DOCUMENTS, FEW, QUERIES, READER_CODES

# caplog gathers the records of every example: none may be an error.
FEW_LOGGED = settings(
    FEW, suppress_health_check=[*FEW.suppress_health_check, HealthCheck.function_scoped_fixture]
)
REQUEST_CODES = {
    "bad_content_type",
    "bad_json",
    "not_object",
    "unknown_field",
    "bad_field",
    "too_many_questions",
    "too_large",
}
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)
FIELD_NAMES = st.sampled_from(["document", "query", "top", "heatmap", "questions", "Query", ""])
# Near the schema: the right fields (or not) with hostile text or values of any type.
QUESTIONS = st.fixed_dictionaries(
    {"document": DOCUMENTS | JSON_VALUES, "query": QUERIES | JSON_VALUES},
    optional={"top": st.integers(-2, 40) | JSON_VALUES, "heatmap": st.booleans() | JSON_VALUES},
)
REQUESTS = st.one_of(
    QUESTIONS,
    st.dictionaries(FIELD_NAMES, JSON_VALUES, max_size=4),
    st.fixed_dictionaries({"questions": st.lists(QUESTIONS | JSON_VALUES, max_size=4)}),
    JSON_VALUES,
)
BODIES = st.one_of(
    REQUESTS.map(lambda item: json.dumps(item).encode("utf-8")),
    st.binary(max_size=200),
    st.integers(1, 3_000).map(lambda depth: b"[" * depth + b"]" * depth),
    st.integers(1, 3_000).map(lambda depth: b'{"a":' * depth + b"1" + b"}" * depth),
)
# Header values a client can send (printable ASCII).
CONTENT_TYPES = st.sampled_from(
    ["application/json", "application/json; charset=utf-8", "APPLICATION/JSON", "text/plain"]
) | st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=20)


@FEW
@given(body=BODIES, content_type=st.none() | CONTENT_TYPES | st.text(max_size=20))
def test_parse_request_checks_everything_or_says_why(body, content_type):
    for endpoint in ("answer", "answer_many"):
        try:
            asked = parse_request(body, content_type, endpoint)
        except Problem as problem:
            assert 400 <= problem.status < 500 and problem.code in REQUEST_CODES
            assert problem.message and "\n" not in problem.message
            continue
        assert isinstance(asked, Asked) and asked.top >= 1 and isinstance(asked.heatmap, bool)
        assert 1 <= len(asked.questions) <= 32
        assert all(isinstance(t, str) for pair in asked.questions for t in pair)


@pytest.fixture(scope="module")
def client(reader):
    from starlette.testclient import TestClient

    from attentive_reader.serve.app import create_app

    # A server exception would be raised here, failing the test.
    return TestClient(create_app(reader, max_bytes=20_000), raise_server_exceptions=True)


def _check(response) -> None:
    assert response.status_code < 500, response.text[:300]
    if response.status_code >= 400:
        problem = response.json()
        assert problem["error"] in REQUEST_CODES | READER_CODES, problem
        assert problem["message"] and "\n" not in problem["message"]


@pytest.mark.slow
@FEW_LOGGED
@given(body=BODIES, content_type=CONTENT_TYPES, many=st.booleans())
def test_the_api_answers_or_refuses_any_request(client, caplog, body, content_type, many):
    path = "/api/answer_many" if many else "/api/answer"
    with caplog.at_level("WARNING"):
        response = client.post(path, content=body, headers={"content-type": content_type})
    _check(response)
    if response.status_code == 200:
        answers = response.json()["answers"] if many else [response.json()]
        for answer in answers:
            assert "filled" in answer or answer["error"] in READER_CODES
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")]


@pytest.mark.slow
@FEW_LOGGED
@given(
    fields=st.dictionaries(FIELD_NAMES | st.text(max_size=5), DOCUMENTS | QUERIES, max_size=3),
    raw=st.binary(max_size=100),
)
def test_the_form_answers_or_refuses_any_fields(client, caplog, fields, raw):
    with caplog.at_level("WARNING"):
        shown = client.post("/answer", data=fields)
        garbled = client.post(
            "/answer", content=raw, headers={"content-type": "application/x-www-form-urlencoded"}
        )
    for response in (shown, garbled):
        assert response.status_code in (200, 400, 413), response.text[:300]
        assert response.headers["content-type"].startswith("text/html")
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")]
