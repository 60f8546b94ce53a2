"""The answering pool supervises its worker processes: a worker killed with SIGKILL is seen and
replaced, the question it held gets a 503 ``worker_died`` with ``Retry-After``, the waiting
ones are answered by the new worker, and ``/api/health`` tells; a worker that dies over and
over is given up, in the health check and one log line."""

from __future__ import annotations

import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from attentive_reader.serve.headers import SECURITY_HEADERS
from attentive_reader.serve.workers import ReaderSource
from tests.serve.live import ARTICLE, QUERY, call, running, wait_for

pytestmark = pytest.mark.slow


class Held:
    """A reader in a worker process whose answers wait until the file ``gate`` exists."""

    def __init__(self, reader, gate: str) -> None:
        self.reader = reader
        self.gate = Path(gate)

    def answer(self, document: str, query: str):
        deadline = time.monotonic() + 60
        while not self.gate.exists():
            assert time.monotonic() < deadline, "the test never opened the gate"
            time.sleep(0.02)
        return self.reader.answer(document, query)


@dataclass(frozen=True)
class HeldSource(ReaderSource):
    """The tiny reader, held at ``gate`` (pickled into each worker process)."""

    gate: str = ""

    def load(self):
        return Held(super().load(), self.gate)


class Dying:
    """A reader whose every question kills its worker process."""

    def answer(self, document: str, query: str):
        os._exit(3)


@dataclass(frozen=True)
class DyingSource(ReaderSource):
    def load(self):
        return Dying()


def health(url: str) -> dict:
    return call(url, "/api/health")[2]


def test_a_killed_worker_is_replaced_and_the_waiting_questions_answered(trained, reader, tmp_path):
    from attentive_reader.serve.app import create_app
    from attentive_reader.serve.pool import AnswerPool

    gate = tmp_path / "gate"
    pool = AnswerPool.processes(HeldSource(str(trained.ckpt), gate=str(gate)), workers=1, queue=4)
    asked = {"document": ARTICLE, "query": QUERY}
    try:
        (pid,) = pool.start()
        with running(create_app(reader, pool=pool)) as url, ThreadPoolExecutor(3) as clients:
            assert health(url)["status"] == "ok"
            held = clients.submit(call, url, "/api/answer", asked)
            wait_for(pool, answering=1)
            waiting = [clients.submit(call, url, "/api/answer", asked) for _ in range(2)]
            wait_for(pool, waiting=2)
            os.kill(pid, signal.SIGKILL)
            # The question the worker held: a 503 with a stable code, seen within a second.
            status, headers, problem = held.result(timeout=5)
            assert (status, problem["error"]) == (503, "worker_died")
            assert int(headers["Retry-After"]) >= 1
            assert all(headers[name] == value for name, value in SECURITY_HEADERS.items())
            # The waiting ones are answered by the new worker.
            gate.touch()
            for question in waiting:
                status, _, answer = question.result(timeout=60)
                assert status == 200 and answer["filled"]
            state = health(url)
            assert (state["status"], state["live"], state["restarts"]) == ("ok", 1, 1)
            assert state["note"] is None
            assert call(url, "/api/answer", asked)[0] == 200
    finally:
        pool.close()


def test_a_worker_dying_over_and_over_is_given_up(trained, reader, caplog):
    from attentive_reader.serve.app import create_app
    from attentive_reader.serve.pool import AnswerPool

    source = DyingSource(str(trained.ckpt))
    pool = AnswerPool.processes(source, workers=1, queue=4, max_deaths=2, death_window=60)
    asked = {"document": ARTICLE, "query": QUERY}
    try:
        pool.start()
        with caplog.at_level("WARNING"), running(create_app(reader, pool=pool)) as url:
            status, _, problem = call(url, "/api/answer", asked)
            assert (status, problem["error"]) == (503, "worker_died")
            # Not live from the 503 on: a health check then sees the replacement under way.
            assert (pool.state()["live"], pool.state()["status"]) == (0, "degraded")
            wait_for(pool, live=1)  # replaced once
            assert health(url)["restarts"] == 1
            status, _, problem = call(url, "/api/answer", asked)
            assert (status, problem["error"]) == (503, "worker_died")
            wait_for(pool, status="down")  # the second death within a minute: given up
            status, headers, state = call(url, "/api/health")
            assert (status, state["live"], state["restarts"]) == (503, 0, 1)
            assert "died 2 times within 60 s" in state["note"]
            assert "restart the server" in state["note"]
            assert all(headers[name] == value for name, value in SECURITY_HEADERS.items())
            # No worker is left: refused at once, not left to time out.
            status, headers, problem = call(url, "/api/answer", asked)
            assert (status, problem["error"], problem["message"]) == (
                503,
                "workers_lost",
                state["note"],
            )
        given_up = [r for r in caplog.records if r.levelname == "ERROR"]
        assert [r.getMessage() for r in given_up] == [state["note"]]
    finally:
        pool.close()
