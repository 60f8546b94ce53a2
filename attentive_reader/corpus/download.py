"""The files of the catalog (or of any URL) into a folder, each checked before it is put in
place: the library part of ``attentive-reader download``.

A file is fetched into ``DEST/NAME.part`` and renamed to ``DEST/NAME`` only once its size
and SHA-256 match the published ones (``corpus.catalog``), so ``DEST/NAME`` is always a
whole, checked file. An interrupted or failed transfer keeps ``NAME.part``: the same
command resumes it. A file that arrives whole but does not match is removed (resuming it
would give the same wrong bytes) and reported. A file already at ``DEST/NAME`` is checked,
not fetched again. Without a published checksum the SHA-256 of what arrived is printed, for
the user to compare with their source.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import unquote, urlsplit

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

from attentive_reader.common.errors import UserError
from attentive_reader.common.faults import format_size, writing
from attentive_reader.common.fileio import place
from attentive_reader.corpus.catalog import CATALOG, Corpus, RemoteFile
from attentive_reader.corpus.fetch import FetchError, FetchOptions, fetch

PARTIAL_SUFFIX = ".part"
_SHA256 = re.compile(r"[0-9a-f]{64}")
# A plain file name (records.is_safe_id's rule; records is not imported: it loads datasets,
# and downloading needs none of it).
_FILE_NAME = re.compile(r"[A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class Downloaded:
    """A file in place in the destination folder.

    Attributes:
        path: where it is.
        size: its size in bytes.
        sha256: its SHA-256 (hex).
        fetched: this run fetched it (else it was there already).
        checked: its SHA-256 was compared with a published or given one (else only printed).
    """

    path: Path
    size: int
    sha256: str
    fetched: bool
    checked: bool


def file_sha256(path: Path) -> str:
    """The SHA-256 (hex) of a file's bytes, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def _check_http(url: str, flag: str) -> str:
    if urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).netloc:
        raise UserError(f"{flag} {url}: not an http:// or https:// URL")
    return url


def resolve(names: Sequence[str], mirror: str | None = None) -> list[Corpus]:
    """The catalog entries of ``names`` (in order, once each), fetched from ``mirror`` when
    given (a file is then ``MIRROR/<file name>``).

    Raises:
        UserError: an unknown name, or a mirror that is not an http(s) URL.
    """
    unknown = [name for name in names if name not in CATALOG]
    if unknown or not names:
        raise UserError(
            f"unknown corpus {', '.join(map(repr, unknown))}; choose among {', '.join(CATALOG)}"
            if unknown
            else f"name what to download: {', '.join(CATALOG)}"
        )
    corpora = [CATALOG[name] for name in dict.fromkeys(names)]
    if mirror is None:
        return corpora
    base = _check_http(mirror, "--mirror").rstrip("/")
    return [
        replace(c, files=tuple(replace(f, urls=(f"{base}/{f.name}",)) for f in c.files))
        for c in corpora
    ]


def custom(url: str, sha256: str | None = None, name: str | None = None) -> Corpus:
    """A one-file entry for any URL (``download --url URL [--sha256 HEX] [--name FILE]``).

    Raises:
        UserError: not an http(s) URL, a checksum that is not 64 hex digits, or a file name
            that is not a plain file name.
    """
    _check_http(url, "--url")
    if sha256 is not None and not _SHA256.fullmatch(sha256.strip().lower()):
        raise UserError(f"--sha256 {sha256}: expected 64 hexadecimal digits (a SHA-256)")
    name = name or unquote(urlsplit(url).path.rstrip("/").rpartition("/")[2])
    if not _FILE_NAME.fullmatch(name) or name in (".", ".."):
        raise UserError(
            f"{url}: {name!r} cannot be a file name ([A-Za-z0-9_.-] only); pass --name FILE"
        )
    file = RemoteFile(name, (url,), sha256=sha256.strip().lower() if sha256 else None)
    return Corpus("url", url, (file,), url, "attentive-reader preprocess {dest}/" + name + " ...")


def progress_bar(console: Console, enabled: bool) -> Progress:
    """A transfer's progress bar: bytes, rate and time left."""
    return Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=console,
        disable=not enabled,
    )


def download(
    corpora: Sequence[Corpus],
    dest: str | os.PathLike,
    *,
    options: FetchOptions | None = None,
    console: Console | None = None,
    progress: bool | None = None,
) -> list[Downloaded]:
    """Fetch every file of ``corpora`` into ``dest`` (see the module docstring).

    Args:
        corpora: entries of ``resolve`` or ``custom``.
        dest: the destination folder (made when missing).
        options: timeout and retries of each transfer.
        console: where progress and each file's line go (stderr when ``None``).
        progress: show a progress bar; ``None``: only on a terminal.

    Returns:
        The files in place, in order.

    Raises:
        UserError: a file that cannot be fetched, or does not match its checksum or size
            (one line: the URL, what was expected, how to fetch it by hand).
        OutputInUse: another run writes the same file.
        OutputError: the disk is full, the folder read-only, ... (the partial file is kept).
    """
    console = console or Console(stderr=True)
    options = options or FetchOptions()
    done = []
    with progress_bar(console, console.is_terminal if progress is None else progress) as bar:
        for corpus in corpora:
            for file in corpus.files:
                done.append(_download_file(corpus, file, Path(dest), options, console, bar))
    return done


def _expected(file: RemoteFile) -> str:
    """What the file should be, where anything is known: ``; expected ...``."""
    parts = [f"{file.size:,} bytes" if file.size is not None else ""]
    parts.append(f"SHA-256 {file.sha256}" if file.sha256 else "")
    text = ", ".join(p for p in parts if p)
    return f"; expected {text}{_source(file)}" if text else ""


def _by_hand(corpus: Corpus, file: RemoteFile, dest: Path) -> str:
    """How to fetch the file by hand and use it."""
    drive = any("drive.google.com" in url for url in file.urls)
    browser = " (a browser gets past Drive's pages)" if drive else ""
    return (
        f"Fetch it by hand from {corpus.page}{browser}, "
        f"put it at {dest / file.path} and run this command again to check it, or pass it to "
        f"preprocess as it is: {corpus.use.format(dest=dest)}"
    )


def _mismatch(file: RemoteFile, size: int, digest: str) -> str | None:
    if file.size is not None and size != file.size:
        return f"{size:,} bytes, expected {file.size:,}"
    if file.sha256 is not None and digest != file.sha256:
        return f"SHA-256 {digest}, expected {file.sha256}"
    return None


def _download_file(
    corpus: Corpus,
    file: RemoteFile,
    dest: Path,
    options: FetchOptions,
    console: Console,
    bar: Progress,
) -> Downloaded:
    target = dest / file.path
    partial = target.with_name(target.name + PARTIAL_SUFFIX)
    with writing(target, "download", also=(partial,)):
        if target.exists():
            return _present(corpus, file, target, console)
        task = bar.add_task(file.name, total=file.size)
        url = _transfer(corpus, file, dest, partial, options, bar, task)
        size, digest = partial.stat().st_size, file_sha256(partial)
        wrong = _mismatch(file, size, digest)
        if wrong is not None:
            partial.unlink()
            raise UserError(
                f"{url}: the file that arrived as {file.name} has {wrong}{_source(file)}; it "
                f"was removed. {_by_hand(corpus, file, dest)}"
            )
        place(partial, target)
    _print(console, target, size, digest, file, "downloaded")
    return Downloaded(target, size, digest, fetched=True, checked=file.sha256 is not None)


def _source(file: RemoteFile) -> str:
    return f" (published by {file.source})" if file.source else ""


def _transfer(
    corpus: Corpus,
    file: RemoteFile,
    dest: Path,
    partial: Path,
    options: FetchOptions,
    bar: Progress,
    task: int,
) -> str:
    """Fetch ``file`` into ``partial`` from its first URL that works; that URL."""
    failures: list[str] = []
    for url in file.urls:
        try:
            fetch(
                url,
                partial,
                expected_size=file.size,
                options=options,
                on_progress=lambda done, total: bar.update(task, completed=done, total=total),
                accept_html=file.name.lower().endswith((".html", ".htm")),
            )
            return url
        except FetchError as error:
            failures.append(str(error))
        except KeyboardInterrupt:
            kept = partial.stat().st_size if partial.exists() else 0
            bar.console.print(
                f"interrupted: {format_size(kept)} of {file.name} kept in {partial}; run the "
                "same command again to resume",
                soft_wrap=True,
                highlight=False,
            )
            raise
    kept = partial.stat().st_size if partial.exists() else 0
    note = (
        f" ({format_size(kept)} kept in {partial.name}: the next run resumes them)" if kept else ""
    )
    raise UserError(
        f"cannot download {file.name}: {'; '.join(failures)}{note}{_expected(file)}. "
        f"{_by_hand(corpus, file, dest)}"
    )


def _present(corpus: Corpus, file: RemoteFile, target: Path, console: Console) -> Downloaded:
    """A file already at ``target``: checked, never fetched again."""
    if not target.is_file():
        raise UserError(f"{target} is not a file; move it away and run this command again")
    size = target.stat().st_size
    digest = file_sha256(target) if file.size in (None, size) else ""
    wrong = _mismatch(file, size, digest)
    if wrong is not None:
        raise UserError(
            f"{target} is there already but has {wrong}{_source(file)}: it is not the "
            f"published {file.name}; move it away (or delete it) and run this command again"
        )
    _print(console, target, size, digest, file, "already there")
    return Downloaded(target, size, digest, fetched=False, checked=file.sha256 is not None)


def _print(
    console: Console, target: Path, size: int, digest: str, file: RemoteFile, status: str
) -> None:
    if file.sha256 is not None:
        check = f"matches{_source(file) or ' the given checksum'}"
    else:
        check = "no published checksum: compare it with your source's"
    console.print(
        f"{target}: {status}, {format_size(size)}, SHA-256 {digest} ({check})",
        soft_wrap=True,
        highlight=False,
    )
