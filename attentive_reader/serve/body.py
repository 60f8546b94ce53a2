"""Reading a request body of ``attentive-reader serve``: capped in size and in time.

The cap is checked on the declared ``Content-Length`` and again while reading (a body sent
in chunks declares none), and a body that has not arrived whole within the time limit (a
slow or stalled client) is refused, so no client holds a connection and its memory open.
"""

from __future__ import annotations

import asyncio
import urllib.parse

from starlette.requests import ClientDisconnect, Request

from attentive_reader.serve.problems import Problem, too_large


async def read_body(request: Request, max_bytes: int, seconds: float) -> bytes:
    """The body of ``request``, at most ``max_bytes`` within ``seconds``.

    Raises:
        Problem: 413 ``too_large``, 408 ``slow_body``, or 400 ``disconnected`` (the client
            left before sending it whole).
    """
    declared = request.headers.get("content-length", "")
    if declared.isdecimal() and len(declared) < 20 and int(declared) > max_bytes:
        raise too_large(max_bytes)
    try:
        return await asyncio.wait_for(_collect(request, max_bytes), seconds)
    except asyncio.TimeoutError:
        raise Problem(
            408,
            "slow_body",
            f"the request body did not arrive whole within {seconds:g} s; send it at once",
        ) from None
    except ClientDisconnect:
        raise Problem(
            400, "disconnected", "the client closed the connection before sending the body"
        ) from None


async def _collect(request: Request, max_bytes: int) -> bytes:
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > max_bytes:
            raise too_large(max_bytes)
    return bytes(body)


async def read_form(request: Request, max_bytes: int, seconds: float) -> dict[str, str]:
    """The fields of an ``application/x-www-form-urlencoded`` body (``read_body``'s limits;
    bytes that are not UTF-8 are replaced)."""
    body = await read_body(request, max_bytes, seconds)
    fields = urllib.parse.parse_qs(body.decode("utf-8", errors="replace"), keep_blank_values=True)
    return {key: values[0] for key, values in fields.items()}
