"""The security headers of ``attentive-reader serve``, set on every response by middleware.

``SecurityHeaders`` wraps the whole app, outside Starlette's own error middleware, so its
404, 405 and 500 responses carry the headers as the pages and the JSON API do: no script
and no framing (``Content-Security-Policy``, ``X-Frame-Options``), no content sniffing, no
referrer.
"""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; "
    "img-src data:; form-action 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}


class SecurityHeaders:
    """ASGI middleware: ``SECURITY_HEADERS`` on every HTTP response of ``app``.

    Args:
        app: the ASGI app to wrap.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers[name] = value
            await send(message)

        await self.app(scope, receive, send_with_headers)


class SecuredStarlette(Starlette):
    """A Starlette app with ``SecurityHeaders`` outside all of its middleware, Starlette's
    error middleware included (which sends the 500s)."""

    def build_middleware_stack(self) -> ASGIApp:
        return SecurityHeaders(super().build_middleware_stack())
