"""Google Drive's confirm page: the HTML it sends instead of a large file, and the URL that
fetches the file behind it.

Drive cannot scan a large file for viruses, so ``uc?export=download&id=ID`` first answers
with a page asking to confirm. Two forms are in use:

* the current one: an HTML form (``id="download-form"``) whose action is
  ``https://drive.usercontent.google.com/download``, with hidden inputs ``id``, ``export``,
  ``confirm`` and ``uuid``; submitting it (a GET, or a POST answered alike) sends the file;
* the old one: a ``download_warning_...`` cookie holding a token, and a link
  ``/uc?export=download&confirm=TOKEN&id=ID`` in the page.

``confirm_url`` reads either; ``refusal`` says why a page that is no confirm page came
(Drive's daily quota for the file, most often).
"""

from __future__ import annotations

from collections.abc import Mapping
from html.parser import HTMLParser
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit, urlunsplit


class _Page(HTMLParser):
    """The forms (action, hidden inputs) and the links of an HTML page."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: list[tuple[str, dict[str, str]]] = []
        self.links: list[str] = []
        self._form: dict[str, str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        if tag == "form":
            self._form = {}
            self.forms.append((values.get("action", ""), self._form))
        elif tag == "input" and self._form is not None and values.get("name"):
            if values.get("type", "text").lower() == "hidden":
                self._form[values["name"]] = values.get("value", "")
        elif tag == "a" and values.get("href"):
            self.links.append(values["href"])

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self._form = None


def _with_query(url: str, extra: Mapping[str, str]) -> str:
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    query.update(extra)
    return urlunsplit(parts._replace(query=urlencode(query)))


def confirm_url(html: str, page_url: str, cookies: Mapping[str, str] | None = None) -> str | None:
    """The URL that fetches the file behind a Drive confirm page, else ``None``.

    Args:
        html: the page.
        page_url: the URL that answered with it (relative links are resolved against it).
        cookies: the cookies set so far (name -> value); the old form keeps its token in a
            ``download_warning...`` cookie.
    """
    page = _Page()
    page.feed(html)
    page.close()
    for action, inputs in page.forms:
        if "confirm" in inputs and "id" in inputs:
            return _with_query(urljoin(page_url, action or page_url), inputs)
    for href in page.links:
        query = dict(parse_qsl(urlsplit(href).query))
        if query.get("confirm") and "export=download" in href:
            return urljoin(page_url, href)
    for name, value in (cookies or {}).items():
        if name.startswith("download_warning") and value:
            return _with_query(page_url, {"confirm": value})
    return None


def refusal(html: str) -> str:
    """Why an HTML page came instead of the file, in a few words."""
    lowered = html.lower()
    if "too many users" in lowered or "quota" in lowered:
        return "Google Drive refuses: too many downloads of this file today (its quota)"
    if "sign in" in lowered or "accounts.google.com" in lowered:
        return "Google Drive asks to sign in (the file is not public, or no longer there)"
    return "the server sent an HTML page instead of the file"
