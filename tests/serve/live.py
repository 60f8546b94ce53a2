"""A real uvicorn server on ``127.0.0.1`` for the serve tests, in a thread of the test process,
with the serve command's HTTP settings (``serve.http.options``)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager


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
