"""Stand-ins for the download tests: a real HTTP server on 127.0.0.1 and generated archives.

``LoopbackServer`` serves files from memory with ``Range`` support, and can misbehave on
purpose: ignore ``Range``, cut a transfer short, stall, answer 404, or put a Google Drive
confirm page (the current form, or the old cookie and link) in front of a file.
``serve_folder(folder)`` serves a folder's files flat, as ``BASE_URL/<file name>``, which is
what ``attentive-reader download --mirror BASE_URL`` asks for; ``use_stand_ins`` gives the
catalog the sizes and checksums of such generated files for the length of a test.
``write_question_archive`` writes a DeepMind-style ``cnn.tgz`` of ``.question`` files.

Nothing here touches the internet.
"""

from __future__ import annotations

import hashlib
import io
import random
import re
import socket
import tarfile
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from attentive_reader.common.markers import entity_marker
from attentive_reader.corpus.catalog import CATALOG
from attentive_reader.corpus.questions import SPLIT_FOLDERS, format_question
from attentive_reader.corpus.records import ClozeExample
from attentive_reader.corpus.sources import url_sha1

_RANGE = re.compile(r"bytes=(\d+)-(\d*)$")


@dataclass
class Request:
    """One request the server saw."""

    path: str  # with the query
    headers: dict[str, str]


@dataclass
class Behaviour:
    """How the server answers; a test changes these between or during transfers.

    Attributes:
        ranges: honour ``Range`` (206); ``False``: ignore it and send everything (200).
        cut: path -> bytes: the next answer for that path sends only so many bytes of its
            body (the headers announce all of it), then closes the connection. Once.
        stall: path -> (bytes, seconds): every answer for that path sends so many bytes,
            then goes silent for that long (or until the server stops).
        missing: paths answered with 404 although they are served.
        drive: Drive file id -> (served path, ``"form"`` | ``"cookie"`` | ``"link"`` |
            ``"quota"``): ``/uc?export=download&id=ID`` answers with a confirm page of that
            kind (``"cookie"``: the token only in a ``download_warning`` cookie; ``"link"``:
            cookie and a ``confirm=`` link; ``"quota"``: Drive's refusal page, never the file).
    """

    ranges: bool = True
    cut: dict[str, int] = field(default_factory=dict)
    stall: dict[str, tuple[int, float]] = field(default_factory=dict)
    missing: set[str] = field(default_factory=set)
    drive: dict[str, tuple[str, str]] = field(default_factory=dict)


FORM_PAGE = """<!DOCTYPE html><html><head><title>Google Drive - Virus scan warning</title></head>
<body><p>Google Drive can't scan this file for viruses.</p>
<form id="download-form" action="{base}/download" method="get">
<input type="submit" id="uc-download-link" value="Download anyway"/>
<input type="hidden" name="id" value="{id}"><input type="hidden" name="export" value="download">
<input type="hidden" name="confirm" value="t"><input type="hidden" name="uuid" value="{uuid}">
</form></body></html>"""
LINK_PAGE = """<html><body>Google Drive can't scan this file for viruses.
<a id="uc-download-link" href="/uc?export=download&amp;confirm={token}&amp;id={id}">Download
anyway</a></body></html>"""
COOKIE_PAGE = "<html><body>Google Drive can't scan this file for viruses.</body></html>"
QUOTA_PAGE = """<html><body><p>Sorry, you can't view or download this file at this time.</p>
<p>Too many users have viewed or downloaded this file recently.</p></body></html>"""
UUID = "5b1c2d3e-0000-4000-8000-loopback"
TOKEN = "Xy7z"


class LoopbackServer:
    """An HTTP server on 127.0.0.1 in a thread, serving ``files`` (URL path -> bytes).

    Use as a context manager; ``url(path)`` is the full URL of a path, ``requests`` what it
    was asked, ``behaviour`` how it answers (see ``Behaviour``).
    """

    def __init__(self, files: Mapping[str, bytes] | None = None) -> None:
        self.files: dict[str, bytes] = dict(files or {})
        self.behaviour = Behaviour()
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def base(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def url(self, path: str) -> str:
        return self.base + (path if path.startswith("/") else "/" + path)

    def __enter__(self) -> LoopbackServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()  # ends the stalls
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    def seen(self, path: str) -> list[Request]:
        """The requests for ``path`` (the query left out)."""
        with self._lock:
            return [r for r in self.requests if urlsplit(r.path).path == path]


def _handler(server: LoopbackServer) -> type[BaseHTTPRequestHandler]:
    """The request handler class of ``server``."""
    return type("Handler", (_Handler,), {"owner": server})


class _Handler(BaseHTTPRequestHandler):
    """Answers for a ``LoopbackServer`` (``owner``), as its ``Behaviour`` says."""

    owner: LoopbackServer

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass

    def do_GET(self) -> None:  # noqa: N802 (the http.server name)
        with self.owner._lock:
            self.owner.requests.append(Request(self.path, dict(self.headers.items())))
        parts = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        behaviour = self.owner.behaviour
        if parts.path == "/uc" and query.get("id") in behaviour.drive:
            return self._drive_uc(query, *behaviour.drive[query["id"]])
        if parts.path == "/download" and query.get("id") in behaviour.drive:
            if query.get("uuid") != UUID or query.get("confirm") != "t":
                return self._plain(403, "text/plain", b"bad confirm form")
            return self._file(behaviour.drive[query["id"]][0])
        if parts.path in behaviour.missing or parts.path not in self.owner.files:
            return self._plain(404, "text/plain", b"not found")
        return self._file(parts.path)

    def _drive_uc(self, query: dict[str, str], path: str, kind: str) -> None:
        if kind == "quota":
            return self._plain(200, "text/html; charset=utf-8", QUOTA_PAGE.encode())
        if kind != "form" and query.get("confirm") == TOKEN:
            if "download_warning" not in self.headers.get("Cookie", ""):
                return self._plain(403, "text/plain", b"no download_warning cookie")
            return self._file(path)
        page = {"form": FORM_PAGE, "link": LINK_PAGE, "cookie": COOKIE_PAGE}[kind]
        body = page.format(base=self.owner.base, id=query["id"], uuid=UUID, token=TOKEN)
        cookie = None if kind == "form" else f"download_warning_13058876669334088843={TOKEN}"
        self._plain(200, "text/html; charset=utf-8", body.encode(), cookie)

    def _plain(self, status: int, kind: str, body: bytes, cookie: str | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        if cookie:
            self.send_header("Set-Cookie", f"{cookie}; Path=/")
        self.end_headers()
        self.wfile.write(body)

    def _file(self, path: str) -> None:
        data = self.owner.files[path]
        behaviour = self.owner.behaviour
        start, end = 0, len(data) - 1
        match = _RANGE.match(self.headers.get("Range", ""))
        if match and behaviour.ranges:
            start = int(match.group(1))
            end = int(match.group(2)) if match.group(2) else len(data) - 1
            if start >= len(data):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(data)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
        body = data[start : end + 1]
        self.send_response(206 if match and behaviour.ranges else 200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        if match and behaviour.ranges:
            self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
        self.end_headers()
        with self.owner._lock:
            cut = behaviour.cut.pop(path, None)
        stall = behaviour.stall.get(path)
        try:
            if cut is not None:
                self.wfile.write(body[:cut])
            elif stall is not None:
                self.wfile.write(body[: stall[0]])
                self.wfile.flush()
                self.owner._stop.wait(stall[1])
                self.wfile.write(body[stall[0] :])
            else:
                self.wfile.write(body)
        except OSError:  # the client gave up (a stall's timeout)
            pass
        self.close_connection = True


@contextmanager
def serve_folder(folder: Path) -> Iterator[LoopbackServer]:
    """Serve every file under ``folder`` as ``BASE_URL/<file name>`` (a ``--mirror``)."""
    files: dict[str, bytes] = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        if f"/{path.name}" in files:
            raise ValueError(f"two files named {path.name} under {folder}")
        files[f"/{path.name}"] = path.read_bytes()
    with LoopbackServer(files) as server:
        yield server


def closed_port_url(path: str = "/cnn.tgz") -> str:
    """A URL on 127.0.0.1 where nothing listens (connection refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}{path}"


def use_stand_ins(monkeypatch, folder: Path) -> None:
    """For this test, the catalog's sizes and SHA-256 are those of the files in ``folder``
    with the catalog's file names (generated stand-ins for ``cnn.tgz``, the url lists...)."""
    present = {p.name: p for p in folder.rglob("*") if p.is_file()}
    for name, corpus in list(CATALOG.items()):
        files = tuple(
            replace(f, size=present[f.name].stat().st_size, sha256=sha256_of(present[f.name]))
            if f.name in present
            else f
            for f in corpus.files
        )
        monkeypatch.setitem(CATALOG, name, replace(corpus, files=files))


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --------------------------------------------------------------------------- .question archives


def deepmind_example(index: int, rng: random.Random, publisher: str = "cnn") -> ClozeExample:
    """A DeepMind-style example: a story url, a context of words and markers, a query whose
    blank is an entity of the context, the entity map."""
    host = "www.cnn.com" if publisher == "cnn" else "www.dailymail.co.uk"
    url = f"http://web.archive.org/web/2015id_/http://{host}/2015/04/01/story-{index}/"
    n = rng.randint(3, 6)
    markers = [entity_marker(i) for i in range(n)]
    words = ["the", "said", "in", "a", "of", "on", "report", "today", "city", "team"]
    context = []
    for marker in markers:  # every marker occurs, in order: candidates by first occurrence
        context += [marker, *rng.choices(words, k=rng.randint(3, 8))]
    context += [*rng.choices(markers, k=3), "."]
    answer = rng.choice(markers)
    query = ["@placeholder", *rng.choices(words, k=4), rng.choice(markers)]
    return ClozeExample(
        id=hashlib.sha1(f"{url}#{index}".encode()).hexdigest(),
        story_id=url_sha1(url),
        context=tuple(context),
        query=tuple(query),
        answer=answer,
        candidates=tuple(markers),
        entities={m: f"Name {i}" for i, m in enumerate(markers)},
        url=url,
    )


def write_question_archive(
    path: Path,
    counts: Mapping[str, int] | None = None,
    *,
    top: str = "cnn",
    seed: int = 0,
    extra: Mapping[str, bytes] | None = None,
) -> dict[str, list[ClozeExample]]:
    """Write a DeepMind-style archive: ``TOP/questions/{training,validation,test}/*.question``
    with folder entries, as in ``cnn.tgz``.

    Args:
        path: the archive to write.
        counts: examples per split (default: train 8, validation 4, test 4).
        top: the top folder (``cnn`` or ``dailymail``, which also picks the story urls' host).
        seed: the random seed of the examples.
        extra: more members (name -> bytes), written after the questions (bad files).

    Returns:
        The examples written, by split.
    """
    counts = counts or {"train": 8, "validation": 4, "test": 4}
    rng = random.Random(seed)
    written: dict[str, list[ClozeExample]] = {}
    with tarfile.open(path, mode="w:gz") as tar:
        for folder in (top, f"{top}/questions"):
            _add_folder(tar, folder)
        index = 0
        for split, count in counts.items():
            folder = f"{top}/questions/{SPLIT_FOLDERS[split]}"
            _add_folder(tar, folder)
            written[split] = []
            for _ in range(count):
                example = deepmind_example(index, rng, top)
                index += 1
                _add_file(tar, f"{folder}/{example.id}.question", format_question(example).encode())
                written[split].append(example)
        for name, data in (extra or {}).items():
            _add_file(tar, name, data)
    return written


def _add_folder(tar: tarfile.TarFile, name: str) -> None:
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE
    info.mode = 0o755
    tar.addfile(info)


def _add_file(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))
