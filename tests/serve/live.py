"""A real uvicorn server on ``127.0.0.1`` for the serve tests, in a thread of the test process,
with the serve command's HTTP settings (``serve.http.options``); the article and query the
serve tests ask about, a JSON call, and a wait for a pool's state."""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from email.message import Message
from pathlib import Path

ARTICLE = (
    "Shares in Greystone Bank rose after Susan Kennedy flew to Lisbon.\n\n"
    "Kennedy smiled. Greystone Bank said the deal was done."
)
QUERY = "@placeholder smiled"

# The page that documents the API (its error codes are checked against the app's).
DOCS = Path(__file__).resolve().parents[2] / "docs" / "answering.md"


def free_port() -> int:
    """A TCP port free on ``127.0.0.1`` now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def running(app) -> Iterator[str]:
    """Serve ``app`` with uvicorn on a free port of ``127.0.0.1``; yields its base URL."""
    import uvicorn

    from attentive_reader.serve import http

    port = free_port()
    options = http.options()  # as the serve command runs it
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", **options)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "the server did not start"
        assert thread.is_alive(), "the server stopped while starting"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def call(url: str, path: str, body: dict | None = None) -> tuple[int, Message, dict]:
    """``(status, headers, JSON)`` of a GET (no body) or a JSON POST."""
    data = None if body is None else json.dumps(body).encode("utf-8")
    request = urllib.request.Request(
        url + path, data=data, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.headers, json.load(response)
    except urllib.error.HTTPError as error:
        with error:
            return error.code, error.headers, json.load(error)


def wait_for(pool, **state) -> None:
    """Until ``pool.state()`` shows ``state`` (the requests sent have arrived)."""
    deadline = time.monotonic() + 30
    while any(pool.state()[key] != value for key, value in state.items()):
        assert time.monotonic() < deadline, pool.state()
        time.sleep(0.01)
