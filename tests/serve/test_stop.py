"""``attentive-reader serve`` stops with its workers: a real server with 2 worker processes,
stopped with SIGTERM under load, SIGINT while its workers load the reader, and SIGKILL,
leaves no process behind within 10 s."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from tests.serve.live import ARTICLE, QUERY, free_port
from tests.trained_reader import ROOT

pytestmark = pytest.mark.slow


def descendants(pid: int) -> set[int]:
    """The living processes below ``pid`` (Linux ``/proc``; zombies count as ended)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                state, parent = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:2]
            except (OSError, ValueError):
                continue
            if state != "Z":
                parents[int(entry.name)] = int(parent)
    found, todo = set(), [pid]
    while todo:
        above = todo.pop()
        below = [child for child, parent in parents.items() if parent == above]
        found.update(below)
        todo += below
    return found


def alive(pids: set[int]) -> set[int]:
    left = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            left.add(pid)
    return left


def until(condition, seconds: float, what: str):
    deadline = time.monotonic() + seconds
    while not (found := condition()):
        assert time.monotonic() < deadline, what
        time.sleep(0.05)
    return found


def serve(trained, log: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    command = [sys.executable, "-m", "attentive_reader.cli", "serve", "--ckpt", str(trained.ckpt)]
    command += ["--port", str(port), "--workers", "2", "--device", "cpu"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with open(log, "wb") as out:
        server = subprocess.Popen(
            command,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            # Ctrl-C as in a terminal, whatever this test run inherited: a shell starts a
            # background job ("pytest &") with SIGINT ignored, and its children with it.
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
    return server, f"http://127.0.0.1:{port}"


def healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/api/health", timeout=5) as response:
            return response.status == 200
    except OSError:
        return False


def load(url: str, stop: threading.Event) -> None:
    """Ask batches of questions until ``stop`` (errors expected: the server goes away)."""
    questions = [{"document": ARTICLE, "query": QUERY}] * 32
    body = json.dumps({"questions": questions}).encode()
    while not stop.is_set():
        request = urllib.request.Request(
            url + "/api/answer_many", data=body, headers={"Content-Type": "application/json"}
        )
        try:
            urllib.request.urlopen(request, timeout=30).read()
        except OSError:
            time.sleep(0.05)


@pytest.mark.parametrize(
    ("how", "when"),
    [(signal.SIGTERM, "under load"), (signal.SIGINT, "loading"), (signal.SIGKILL, "under load")],
    ids=["SIGTERM-under-load", "SIGINT-while-loading", "SIGKILL-under-load"],
)
def test_no_worker_outlives_the_server(trained, tmp_path, how, when):
    log = tmp_path / "serve.log"
    server, url = serve(trained, log)
    stop = threading.Event()
    clients = [threading.Thread(target=load, args=(url, stop)) for _ in range(3)]
    try:
        if when == "loading":
            until(lambda: b"starting 2 answering" in log.read_bytes(), 120, log.read_text())
            until(lambda: len(descendants(server.pid)) >= 2, 60, "no worker started")
            workers = descendants(server.pid)
        else:
            until(lambda: healthy(url) or server.poll() is not None, 180, "no server")
            assert server.poll() is None, log.read_text()
            workers = descendants(server.pid)
            for client in clients:
                client.start()
            time.sleep(1.0)  # the workers are answering
        assert len(workers) >= 2
        started = time.monotonic()
        server.send_signal(how)
        until(lambda: not alive(workers), 10, "workers left")
        try:
            server.wait(max(1.0, 20 - (time.monotonic() - started)))
        except subprocess.TimeoutExpired:
            pytest.fail(f"the server was still running 20 s after {how.name}:\n{log.read_text()}")
    finally:
        stop.set()
        for client in clients:
            if client.is_alive() or client.ident:
                client.join(30)
        if server.poll() is None:
            server.kill()
            server.wait()
    if how != signal.SIGKILL:
        assert server.returncode in (130, 128 + signal.SIGTERM), log.read_text()
        assert b"Traceback" not in log.read_bytes(), log.read_text()
