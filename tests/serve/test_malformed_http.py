"""What a client sends before the app sees a request, over a raw socket to a real server on
``127.0.0.1`` with the serve command's HTTP settings: malformed request lines and headers,
an oversize head, a slow-loris client and half-closed connections. Each is refused or
dropped, every response carries the security headers, and the server answers the next good
request."""

from __future__ import annotations

import socket
import time

import pytest

from attentive_reader.serve.headers import SECURITY_HEADERS
from attentive_reader.serve.http import GuardedH11Protocol
from tests.serve.live import running

pytestmark = pytest.mark.slow

GOOD = b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"


def exchange(port: int, data: bytes, *, half_close: bool = False, seconds: float = 30) -> bytes:
    """Everything the server sends back to ``data`` until it closes the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=seconds) as client:
        try:
            client.sendall(data)
        except OSError:  # refused and closed before all was sent: read what came back
            pass
        if half_close:
            client.shutdown(socket.SHUT_WR)
        reply = b""
        try:
            while chunk := client.recv(65536):
                reply += chunk
        except ConnectionResetError:  # closed with our bytes unread: no more to come
            pass
        return reply


def status_and_headers(reply: bytes) -> tuple[int, dict[str, str]]:
    head = reply.partition(b"\r\n\r\n")[0].decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in head[1:])
    return int(head[0].split()[1]), {name.lower(): value for name, value in headers.items()}


def assert_secured(headers: dict[str, str]) -> None:
    for name, value in SECURITY_HEADERS.items():
        assert headers.get(name.lower()) == value, name


def answers_a_good_request(port: int) -> None:
    status, headers = status_and_headers(exchange(port, GOOD))
    assert status == 200
    assert_secured(headers)


MALFORMED = {
    "garbage request line": b"HELLO\r\n\r\n",
    "no version": b"GET /\r\nHost: x\r\n\r\n",
    "binary": bytes(range(256)) + b"\r\n\r\n",
    "header without colon": b"GET / HTTP/1.1\r\nHost: x\r\nNoColon\r\n\r\n",
    "space before colon": b"GET / HTTP/1.1\r\nHost : x\r\n\r\n",
    "bad content-length": b"POST /api/answer HTTP/1.1\r\nHost: x\r\nContent-Length: ab\r\n\r\n",
    "two content-lengths": (
        b"POST /api/answer HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"
    ),
    "no host": b"GET / HTTP/1.1\r\n\r\n",
    # Heads over the limit that arrive over several reads (a read takes up to 64 KiB).
    "oversize header": b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 2**20 + b"\r\n\r\n",
    "many headers": b"GET / HTTP/1.1\r\nHost: x\r\n" + b"X-A: b\r\n" * 2**14 + b"\r\n",
    "oversize url": b"GET /" + b"a" * 2**17 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
}


def test_malformed_requests_get_a_secured_400_and_the_server_goes_on(reader, caplog):
    from attentive_reader.serve.app import create_app

    with caplog.at_level("WARNING"), running(create_app(reader)) as url:
        port = int(url.rsplit(":", 1)[1])
        for name, data in MALFORMED.items():
            status, headers = status_and_headers(exchange(port, data))
            assert status == 400, name
            assert_secured(headers)
            answers_a_good_request(port)
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")]


def test_a_slow_loris_is_cut_off_and_others_are_answered_meanwhile(reader, monkeypatch):
    from attentive_reader.serve.app import create_app

    monkeypatch.setattr(GuardedH11Protocol, "head_seconds", 1.0)
    with running(create_app(reader)) as url:
        port = int(url.rsplit(":", 1)[1])
        loris = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(20)]
        started = time.monotonic()
        try:
            for client in loris:
                client.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            answers_a_good_request(port)  # while they dawdle
            for client in loris:  # a byte at a time, never the blank line that ends a head
                for _ in range(10):
                    try:
                        client.sendall(b"X")
                    except OSError:
                        break
                    time.sleep(0.05)
            for client in loris:  # the server closed each one
                try:
                    assert client.recv(1024) == b""
                except ConnectionResetError:
                    pass
            assert time.monotonic() - started < 10
        finally:
            for client in loris:
                client.close()
        answers_a_good_request(port)


def test_half_closed_connections(reader):
    from attentive_reader.serve.app import create_app

    with running(create_app(reader)) as url:
        port = int(url.rsplit(":", 1)[1])
        # A whole request, then the client's side closed: the server stays up.
        exchange(port, GOOD, half_close=True)
        answers_a_good_request(port)
        # Half a head, then closed: nothing to answer, and the connection is dropped.
        assert exchange(port, b"GET / HTTP/1.1\r\nHost: 12", half_close=True) == b""
        answers_a_good_request(port)
        # Half a body, then closed: the request is given up, the server goes on.
        body = b'{"document": "Lisbon'
        head = b"POST /api/answer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        exchange(port, head + b"Content-Length: 1000\r\n\r\n" + body, half_close=True)
        answers_a_good_request(port)
        # Connected and closed at once, many times.
        for _ in range(50):
            socket.create_connection(("127.0.0.1", port), timeout=30).close()
        answers_a_good_request(port)
