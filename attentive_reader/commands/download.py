"""``attentive-reader download``: fetch the public corpora, each file checked.

    attentive-reader download cnn url_lists --dest data/downloads
    attentive-reader download cnn_stories --dest data/downloads --mirror https://host/corpora
    attentive-reader download --url URL --sha256 HEX --dest data/downloads

Files go to ``DEST/<file>`` only once their size and SHA-256 match (``corpus.download``); an
interrupted transfer resumes when the same command is run again. Never imports torch.
"""

from __future__ import annotations

import argparse

from rich.console import Console

from attentive_reader.common.errors import UserError
from attentive_reader.common.faults import format_size
from attentive_reader.corpus.catalog import CATALOG
from attentive_reader.corpus.download import custom, download, resolve
from attentive_reader.corpus.fetch import FetchOptions


def _catalog_text() -> str:
    lines = ["names:"]
    for corpus in CATALOG.values():
        lines.append(f"  {corpus.name:<18} {corpus.description}")
        for file in corpus.files:
            size = format_size(file.size) if file.size is not None else "size not published"
            lines.append(f"  {'':<18}   {file.path} ({size})")
    lines += [
        "",
        "Each file is checked against the SHA-256 published for it before it is put in DEST.",
        "An interrupted download resumes when the same command is run again.",
    ]
    return "\n".join(lines)


def _positive_seconds(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        number = -1.0
    if not number > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {value!r}")
    return number


def _count(value: str) -> int:
    if not value.isdigit():
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {value!r}")
    return int(value)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``attentive-reader download``."""
    parser = argparse.ArgumentParser(
        prog="attentive-reader download",
        description="Download the public CNN / Daily Mail corpora (DeepMind's .question\n"
        "archives, the .story archives, the url lists), each file checked against its\n"
        "published size and SHA-256.",
        epilog=_catalog_text(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("names", nargs="*", metavar="NAME", help="what to download, see below")
    parser.add_argument(
        "--dest", required=True, metavar="DIR", help="destination folder (made when missing)"
    )
    parser.add_argument(
        "--mirror",
        metavar="BASE_URL",
        help="fetch every file as BASE_URL/<file name> instead of from its publisher",
    )
    group = parser.add_argument_group("any file")
    group.add_argument("--url", metavar="URL", help="download this URL instead of a NAME")
    group.add_argument(
        "--sha256",
        metavar="HEX",
        help="with --url: the file's SHA-256; without it the digest is printed to compare",
    )
    group.add_argument(
        "--name", metavar="FILE", help="with --url: the file name (default: the URL's last part)"
    )
    group = parser.add_argument_group("network")
    group.add_argument(
        "--timeout",
        type=_positive_seconds,
        default=FetchOptions.timeout,
        metavar="SECONDS",
        help="give up a try when the server is silent this long (default: %(default)g)",
    )
    group.add_argument(
        "--retries",
        type=_count,
        default=FetchOptions.retries,
        metavar="N",
        help="tries after a failed one, each resuming it, waiting 2, 4, 8, ... s "
        "(default: %(default)s)",
    )
    parser.add_argument("--quiet", "-q", action="store_true", help="print no progress bar")
    return parser


def main(argv: list[str]) -> int:
    """Run ``attentive-reader download`` with ``argv`` (without the command name)."""
    args = build_parser().parse_args(argv)
    if args.url is not None:
        if args.names or args.mirror:
            raise UserError("--url downloads one file: leave out the NAMEs and --mirror")
        corpora = [custom(args.url, args.sha256, args.name)]
    else:
        if args.sha256 or args.name:
            raise UserError("--sha256 and --name go with --url")
        corpora = resolve(args.names, args.mirror)
    options = FetchOptions(timeout=args.timeout, retries=args.retries)
    console = Console()
    done = download(
        corpora, args.dest, options=options, console=console, progress=False if args.quiet else None
    )
    fetched = sum(1 for d in done if d.fetched)
    total = format_size(sum(d.size for d in done))
    files = "1 file" if len(done) == 1 else f"{len(done)} files"
    print(f"{files} in {args.dest} ({total}; {fetched} fetched by this run)")
    for corpus in corpora:
        print(f"next: {corpus.use.format(dest=args.dest)}")
    return 0
