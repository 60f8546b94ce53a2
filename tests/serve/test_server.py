"""The JSON API against a real uvicorn server on ``127.0.0.1``, driven through ``urllib`` as a
user's program would: answers, a full queue (503 with ``Retry-After``, no request lost), the
time limit (504), a stalled body (408), and answers from worker processes."""

from __future__ import annotations

import json
import os
import socket
import threading
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

from attentive_reader.serve.headers import SECURITY_HEADERS
from tests.serve.live import ARTICLE, QUERY, call, running, wait_for

pytestmark = pytest.mark.slow


class Gated:
    """The reader, each question waiting until the test opens ``gate``: a worker held busy
    for as long as the test needs, whatever the machine's speed."""

    def __init__(self, reader) -> None:
        self.reader = reader
        self.gate = threading.Event()

    def answer(self, document: str, query: str):
        assert self.gate.wait(60), "the test never opened the gate"
        return self.reader.answer(document, query)


def test_the_api_through_urllib(reader, caplog):
    from attentive_reader.serve.app import create_app

    with caplog.at_level("WARNING"), running(create_app(reader)) as url:
        status, headers, answer = call(url, "/api/answer", {"document": ARTICLE, "query": QUERY})
        assert status == 200
        reader_block = answer.pop("reader")
        assert reader_block == reader.provenance.to_json(folder=False)
        assert answer == json.loads(json.dumps(reader.answer(ARTICLE, QUERY).to_json(5)))
        assert all(headers[name] == value for name, value in SECURITY_HEADERS.items())
        status, _, many = call(
            url, "/api/answer_many", {"questions": [{"document": ARTICLE, "query": QUERY}] * 3}
        )
        assert status == 200 and many == {"answers": [answer] * 3, "reader": reader_block}
        assert call(url, "/api/health")[2]["status"] == "ok"
        status, _, problem = call(url, "/api/answer", {"document": ARTICLE, "query": "x"})
        assert (status, problem["error"]) == (400, "no_blank")
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")]


def test_over_the_queue_limit_is_503_and_every_request_is_answered(reader):
    from attentive_reader.serve.app import create_app
    from attentive_reader.serve.pool import AnswerPool

    gated = Gated(reader)
    pool = AnswerPool.threads(gated, queue=1)
    asked = {"document": ARTICLE, "query": QUERY}
    with running(create_app(reader, pool=pool)) as url, ThreadPoolExecutor(2) as clients:
        first = clients.submit(call, url, "/api/answer", asked)
        wait_for(pool, answering=1)
        second = clients.submit(call, url, "/api/answer", asked)
        wait_for(pool, waiting=1)
        assert call(url, "/api/health")[2]["waiting"] == 1
        # One worker busy and one question waiting: the third is refused at once.
        status, headers, problem = call(url, "/api/answer", asked)
        assert (status, problem["error"]) == (503, "busy")
        assert int(headers["Retry-After"]) >= 1
        assert f"try again in {headers['Retry-After']} s" in problem["message"]
        assert all(headers[name] == value for name, value in SECURITY_HEADERS.items())
        # The page says so too, and keeps the document to send again.
        page = urllib.request.Request(
            url + "/answer", data=b"document=Lisbon+grew&query=%40placeholder+grew"
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(page, timeout=60)
        assert refused.value.code == 503 and refused.value.headers["Retry-After"]
        assert "Lisbon grew" in refused.value.read().decode()
        gated.gate.set()
        assert first.result()[0] == second.result()[0] == 200
        wait_for(pool, answering=0, waiting=0)


def test_past_the_time_limit_is_504_and_a_waiting_question_is_dropped(reader):
    from attentive_reader.serve.app import create_app
    from attentive_reader.serve.pool import AnswerPool

    gated = Gated(reader)
    pool = AnswerPool.threads(gated, queue=4, timeout=0.5)
    asked = {"document": ARTICLE, "query": QUERY}
    with running(create_app(reader, pool=pool)) as url, ThreadPoolExecutor(2) as clients:
        running_one = clients.submit(call, url, "/api/answer", asked)
        wait_for(pool, answering=1)
        waiting_one = clients.submit(call, url, "/api/answer", asked)
        for status, headers, problem in (running_one.result(), waiting_one.result()):
            assert (status, problem["error"]) == (504, "timeout")
            assert "within 0.5 s" in problem["message"]
            assert all(headers[name] == value for name, value in SECURITY_HEADERS.items())
        # The waiting question was dropped; the one being answered still holds its worker.
        assert pool.state()["answering"] == 1 and pool.state()["waiting"] == 0
        gated.gate.set()
        wait_for(pool, answering=0)
        assert call(url, "/api/answer", asked)[0] == 200


def test_a_body_that_never_finishes_is_408(reader, caplog):
    from attentive_reader.serve.app import create_app
    from attentive_reader.serve.pool import AnswerPool

    pool = AnswerPool.threads(reader, timeout=0.5)
    with caplog.at_level("WARNING"), running(create_app(reader, pool=pool)) as url:
        port = int(url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=30) as slow:
            slow.sendall(
                b"POST /api/answer HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                b"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
                b'{"document": "Lisbon'
            )  # and nothing more
            reply = b""
            while b"\r\n\r\n" not in reply or not reply.rstrip().endswith(b"}"):
                chunk = slow.recv(4096)
                if not chunk:
                    break
                reply += chunk
        head, _, body = reply.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 408")
        assert b"x-frame-options: DENY" in head
        assert json.loads(body)["error"] == "slow_body"
        # The server goes on answering.
        assert call(url, "/api/health")[0] == 200
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")]


def test_worker_processes_answer_as_the_reader_does(trained, reader):
    from attentive_reader.serve.app import create_app
    from attentive_reader.serve.pool import AnswerPool
    from attentive_reader.serve.workers import ReaderSource

    pool = AnswerPool.processes(ReaderSource(str(trained.ckpt)), workers=1, queue=4)
    try:
        (pid,) = pool.start()
        with running(create_app(reader, data=trained.data, pool=pool)) as url:
            status, _, answer = call(url, "/api/answer", {"document": ARTICLE, "query": QUERY})
            assert status == 200 and answer.pop("reader")["warning"] == reader.provenance.warning()
            assert answer == json.loads(json.dumps(reader.answer(ARTICLE, QUERY).to_json(5)))
            # A refusal crosses the process border with its code.
            status, _, problem = call(url, "/api/answer", {"document": "Lisbon.", "query": "x"})
            assert (status, problem["error"]) == (400, "no_blank")
            health = call(url, "/api/health")[2]
            assert (health["pool"], health["workers"]) == ("process", 1)
            with urllib.request.urlopen(url + "/examples/test/0", timeout=60) as page:
                assert page.status == 200 and 'id="gold"' in page.read().decode()
    finally:
        pool.close()
    assert pid != os.getpid()
