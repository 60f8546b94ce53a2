"""One file over HTTP(S) into a partial file: resumed with ``Range``, retried with backoff,
bounded by a timeout; the standard library only (``urllib``).

``fetch(url, partial, ...)`` appends to ``partial`` from its current size. A server that
answers ``206 Partial Content`` continues it; one that ignores ``Range`` and answers ``200``
sends the whole file, which then replaces the partial. A connection that fails, times out
or closes early is tried again (``FetchOptions.retries`` times, waiting ``backoff``, twice
as long each time), each try resuming where the last one stopped. An HTML page where a file
was expected is read as Google Drive's confirm page (``corpus.drive``) and its form or link
followed. What cannot succeed (HTTP 4xx, a size that is not the expected one, retries used
up) raises ``FetchError``, which the caller turns into its one-line message.
"""

from __future__ import annotations

import http.client
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.cookiejar import CookieJar
from pathlib import Path
from urllib.error import HTTPError, URLError
from urllib.request import HTTPCookieProcessor, OpenerDirector, Request, build_opener

from attentive_reader.common.faults import format_size
from attentive_reader.corpus import drive
from attentive_reader.version import __version__

CHUNK = 1 << 20
# HTTP statuses worth trying again: the server is busy or failed for a moment.
RETRY_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})
# An HTML page longer than this is not a confirm page.
MAX_PAGE = 1 << 20
# Confirm pages followed for one file (Drive sends one).
MAX_HOPS = 2

_CONTENT_RANGE = re.compile(r"bytes\s+(\d+)-(\d+)/(\d+|\*)")
_CONTENT_RANGE_UNSATISFIED = re.compile(r"bytes\s+\*/(\d+)")


@dataclass(frozen=True)
class FetchOptions:
    """How a transfer behaves.

    Attributes:
        timeout: seconds to wait for a connection and for each read; a server silent for
            longer counts as a failed try.
        retries: further tries after a failed one (each resumes the partial file).
        backoff: seconds before the first retry, doubled for each next one.
    """

    timeout: float = 30.0
    retries: int = 4
    backoff: float = 2.0

    def __post_init__(self) -> None:
        if not self.timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {self.timeout}")
        if isinstance(self.retries, bool) or not isinstance(self.retries, int) or self.retries < 0:
            raise ValueError(f"retries must be a non-negative integer, got {self.retries!r}")
        if not self.backoff >= 0:
            raise ValueError(f"backoff must be >= 0 seconds, got {self.backoff}")


class FetchError(Exception):
    """A transfer that failed for good.

    Attributes:
        url: the URL tried.
        reason: why, in a few words.
    """

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"{url}: {reason}")
        self.url, self.reason = url, reason


class _TryAgain(Exception):
    """A try that failed for a reason that may pass (network, timeout, a busy server)."""


# Called with (bytes in the partial file so far, the file's total size when known).
Progress = Callable[[int, int | None], None]


def fetch(
    url: str,
    partial: Path,
    *,
    expected_size: int | None = None,
    options: FetchOptions | None = None,
    on_progress: Progress | None = None,
    accept_html: bool = False,
) -> None:
    """Fetch ``url`` into ``partial``, continuing the bytes already there.

    Args:
        url: an ``http://`` or ``https://`` URL.
        partial: the partial file (created when missing; its folder must exist).
        expected_size: the file's size when known: a partial of that size is complete, a
            larger one is started again, a server offering another size is an error.
        options: timeout and retries.
        on_progress: called as bytes arrive.
        accept_html: the file is an HTML page (else an HTML answer is read as a confirm
            page, and an error when it is none).

    Raises:
        FetchError: an HTTP error that retrying cannot mend, an unexpected size, or every
            try failed (the partial file keeps what arrived, for the next run to resume).
    """
    options = options or FetchOptions()
    report = on_progress or (lambda done, total: None)
    opener = build_opener(HTTPCookieProcessor(CookieJar()))
    for attempt in range(options.retries + 1):
        try:
            _try(opener, url, partial, expected_size, options.timeout, report, accept_html)
            return
        except _TryAgain as error:
            if attempt == options.retries:
                tries = f"{attempt + 1} tries" if attempt else "1 try"
                raise FetchError(url, f"{error} ({tries})") from None
            time.sleep(options.backoff * 2**attempt)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def _try(
    opener: OpenerDirector,
    url: str,
    partial: Path,
    expected_size: int | None,
    timeout: float,
    report: Progress,
    accept_html: bool,
) -> None:
    start = _size(partial)
    if expected_size is not None and start > expected_size:
        partial.unlink()  # not this file: start again
        start = 0
    if expected_size is not None and start == expected_size:
        report(start, expected_size)
        return
    response = _open(opener, url, start, timeout, partial, accept_html)
    if response is None:  # 416: nothing after ``start``, the partial is the whole file
        return
    with response:
        if start and response.status == 206:
            total = _resumed_total(url, response, start)
            mode = "ab"
        else:  # a first try, or a server that ignores Range and sends everything
            start, mode = 0, "wb"
            length = response.headers.get("Content-Length")
            total = int(length) if length and length.isdigit() else None
        if expected_size is not None and total is not None and total != expected_size:
            raise FetchError(
                url, f"the server offers {total:,} bytes, expected {expected_size:,} bytes"
            )
        _copy(response, partial, mode, start, total, timeout, report)


def _open(
    opener: OpenerDirector,
    url: str,
    start: int,
    timeout: float,
    partial: Path,
    accept_html: bool,
) -> http.client.HTTPResponse | None:
    """The response that sends the file from byte ``start`` (Drive confirm pages followed);
    ``None`` when the server has nothing after ``start`` (HTTP 416 for a partial file of
    the file's size, or of a size it does not say)."""
    for _ in range(MAX_HOPS + 1):
        headers = {"User-Agent": f"attentive-reader/{__version__}", "Accept-Encoding": "identity"}
        if start:
            headers["Range"] = f"bytes={start}-"
        try:
            response = opener.open(Request(url, headers=headers), timeout=timeout)
        except HTTPError as error:
            error.close()
            if error.code == 416 and start:
                match = _CONTENT_RANGE_UNSATISFIED.match(error.headers.get("Content-Range", ""))
                if match is None or int(match.group(1)) == start:
                    return None
                partial.unlink()  # longer than the file: not this file, start again
                raise _TryAgain(
                    f"the partial file ({start:,} bytes) is longer than the file "
                    f"({int(match.group(1)):,} bytes)"
                ) from None
            if error.code in RETRY_STATUSES:
                raise _TryAgain(f"HTTP {error.code} {error.reason}") from None
            raise FetchError(url, f"HTTP {error.code} {error.reason}") from None
        except (URLError, OSError, http.client.HTTPException) as error:
            raise _TryAgain(_network_reason(error)) from None
        content_type = response.headers.get("Content-Type", "")
        if accept_html or not content_type.startswith("text/html"):
            return response
        try:
            with response:
                page = response.read(MAX_PAGE).decode("utf-8", "replace")
        except (OSError, http.client.HTTPException) as error:
            raise _TryAgain(_network_reason(error)) from None
        cookies = {cookie.name: cookie.value or "" for cookie in _jar(opener)}
        confirmed = drive.confirm_url(page, response.geturl(), cookies)
        if confirmed is None:
            raise FetchError(url, drive.refusal(page))
        url = confirmed
    raise FetchError(url, f"more than {MAX_HOPS} confirm pages in a row")


def _jar(opener: OpenerDirector) -> CookieJar:
    for handler in opener.handlers:
        if isinstance(handler, HTTPCookieProcessor):
            return handler.cookiejar
    return CookieJar()


def _resumed_total(url: str, response: http.client.HTTPResponse, start: int) -> int | None:
    """The file's total size from a 206's ``Content-Range``, checked to start at ``start``."""
    match = _CONTENT_RANGE.match(response.headers.get("Content-Range", ""))
    if match is None or int(match.group(1)) != start:
        raise FetchError(
            url,
            f"asked for the bytes from {start:,} on, the server sent "
            f"{response.headers.get('Content-Range') or 'no Content-Range'}",
        )
    return None if match.group(3) == "*" else int(match.group(3))


def _copy(
    response: http.client.HTTPResponse,
    partial: Path,
    mode: str,
    start: int,
    total: int | None,
    timeout: float,
    report: Progress,
) -> None:
    done = start
    report(done, total)
    with open(partial, mode) as out:
        while True:
            try:
                chunk = response.read1(CHUNK)  # what has arrived: a stall loses none of it
            except TimeoutError:
                raise _TryAgain(f"no data for {timeout:g} s after {format_size(done)}") from None
            except (OSError, http.client.HTTPException) as error:
                raise _TryAgain(_network_reason(error, "connection lost")) from None
            if not chunk:
                break
            out.write(chunk)  # a full disk raises here: a write fault, not retried
            done += len(chunk)
            report(done, total)
    if total is not None and done < total:
        raise _TryAgain(f"the connection closed after {done:,} of {total:,} bytes")


def _network_reason(error: BaseException, what: str = "no connection") -> str:
    """A failed connection in a few words: ``what (the system's reason)``."""
    if isinstance(error, URLError) and not isinstance(error, HTTPError):
        error = error.reason if isinstance(error.reason, BaseException) else error
    if isinstance(error, TimeoutError):
        return "timed out"
    if isinstance(error, OSError) and error.strerror:
        return f"{what} ({error.strerror})"
    text = str(error).strip()
    return f"{what} ({text or type(error).__name__})"
