"""The HTTP connections of ``attentive-reader serve``: uvicorn's h11 protocol, with limits.

What a client sends before the app sees a request is uvicorn's to answer. ``options()`` gives
the command (and the tests' server) the same settings:

* a request head (request line and headers) over ``HEAD_BYTES`` and still arriving is refused
  with a 400 (h11's ``max_incomplete_event_size``: one that arrives whole in one read is
  parsed whatever its size), as is a malformed one;
* a request head that has not arrived whole within ``GuardedH11Protocol.head_seconds`` of
  the connection (or of the previous response) closes the connection: a slow client
  (slow-loris) holds no connection for longer than that;
* an idle kept-alive connection is closed after ``KEEP_ALIVE_SECONDS``.

uvicorn's own 400 carries the security headers too (``GuardedH11Protocol.send_400_response``),
so every response of the server has them.
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from attentive_reader.serve.headers import SECURITY_HEADERS

HEAD_BYTES = 16 * 1024
HEAD_SECONDS = 10.0
KEEP_ALIVE_SECONDS = 5


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a time limit on each request head and the security
    headers on its own 400 response."""

    head_seconds = HEAD_SECONDS

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._head_timer: asyncio.TimerHandle | None = None
        self._wait_for_head()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is h11.IDLE:  # a head still to come (pipelined or partial)
            self._wait_for_head()
        else:
            self._head_arrived()

    def on_response_complete(self) -> None:
        super().on_response_complete()  # arms uvicorn's keep-alive limit
        self._head_arrived()  # until the next request's first bytes

    def connection_lost(self, exc: Exception | None) -> None:
        self._head_arrived()
        super().connection_lost(exc)

    def _wait_for_head(self) -> None:
        if self._head_timer is None:
            self._head_timer = self.loop.call_later(self.head_seconds, self._head_too_slow)

    def _head_arrived(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_too_slow(self) -> None:
        self._head_timer = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()

    def send_400_response(self, msg: str) -> None:
        headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"connection", b"close")]
        headers += [(name.encode(), value.encode()) for name, value in SECURITY_HEADERS.items()]
        for event in (
            h11.Response(status_code=400, headers=headers, reason=b"Bad Request"),
            h11.Data(data=msg.encode("ascii")),
            h11.EndOfMessage(),
        ):
            self.transport.write(self.conn.send(event))
        self.transport.close()


def options() -> dict[str, Any]:
    """uvicorn's settings of ``attentive-reader serve`` (``uvicorn.Config`` arguments)."""
    return {
        "http": GuardedH11Protocol,
        "h11_max_incomplete_event_size": HEAD_BYTES,
        "timeout_keep_alive": KEEP_ALIVE_SECONDS,
    }
