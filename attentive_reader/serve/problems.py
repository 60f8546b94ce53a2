"""What ``attentive-reader serve`` refuses or fails to do, with a stable code per kind.

A ``Problem`` is raised anywhere in the app (reading a body, parsing a JSON request, waiting
for a worker) and becomes one response: JSON ``{"error": code, "message": ...}`` under
``/api/``, the page with its message elsewhere. The codes are part of the JSON API (listed in
``docs/answering.md``); a reader's ``UserError`` keeps its own code (``no_blank``, ...).
"""

from __future__ import annotations

from attentive_reader.common.errors import UserError


class Problem(Exception):
    """A request the server refuses (4xx) or cannot answer now (503, 504).

    Args:
        status: the HTTP status.
        code: the stable ``error`` code of the JSON API.
        message: one line for a person: what was wrong and what to do.
        headers: extra response headers (``Retry-After``, ``Allow``).
    """

    def __init__(
        self, status: int, code: str, message: str, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = dict(headers or {})

    def to_json(self) -> dict[str, str]:
        """The JSON API's error object."""
        return {"error": self.code, "message": self.message}


def from_user_error(error: UserError) -> Problem:
    """A reader's refusal of a question (no blank, no entity, ...) as a 400."""
    return Problem(400, error.code, str(error))


def too_large(max_bytes: int) -> Problem:
    """A request body over the cap."""
    return Problem(
        413, "too_large", f"the request is over {max_bytes:,} bytes; send a shorter document"
    )
