"""``attentive-reader answer``: ask a trained reader which entity fills a query's blank.

One document and query (``--document FILE|- --query TEXT``) prints the ranked candidates
(a table, or JSON with ``--json``), the filled-in query and what the reader was trained on,
and ``--heatmap PAGE`` writes the attention page; ``--batch FILE.jsonl`` answers one
``{"document": ..., "query": ...}`` object per line, reporting bad lines by number and going
on. A reader trained on the synthetic corpus, or validating below its data's
exclusive-frequency baseline, is flagged in one ``warning:`` line on standard error.
``--ensemble CKPT CKPT ...`` answers with several readers of one vocabulary at once, by the
mean of their probabilities (the heatmap: the mean of their attention). The work is done by
``attentive_reader.api.Reader``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from attentive_reader.commands import add_device_argument, add_reader_arguments
from attentive_reader.common.checkpoint_file import check_checkpoint_file
from attentive_reader.common.errors import UserError
from attentive_reader.common.faults import writing
from attentive_reader.common.fileio import replacing, write_text_atomic
from attentive_reader.common.query import parse_query

if TYPE_CHECKING:
    from attentive_reader.api import Answer, Reader

# Lines of a --batch file answered together (NER through one nlp.pipe, the reader in batches).
CHUNK_LINES = 256


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="attentive-reader answer",
        description=(
            "Ask a trained reader which entity of a document fills the blank of a query. "
            "The query is written with real names and one blank: @placeholder (or ___ or XXX)."
        ),
    )
    add_reader_arguments(parser)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--document", metavar="FILE", help="the article: a text or .story file, or - for stdin"
    )
    source.add_argument(
        "--batch",
        metavar="FILE",
        help='a JSON Lines file, one {"document": ..., "query": ...} object per line',
    )
    parser.add_argument("--query", help="the query, with one blank (with --document)")
    parser.add_argument("--top", type=int, default=5, help="candidates shown (default 5)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument(
        "--out", metavar="FILE", help="write the answers here (JSON; JSON Lines with --batch)"
    )
    parser.add_argument(
        "--heatmap", metavar="PAGE", help="write the attention heatmap page (with --document)"
    )
    parser.add_argument(
        "--spacy-model",
        metavar="NAME",
        help="spaCy pipeline to use instead of the one the training data was made with "
        "(needed for readers trained on DeepMind .question data)",
    )
    add_device_argument(parser)
    parser.add_argument(
        "--batch-size", type=int, default=32, help="questions per forward pass (default: 32)"
    )
    return parser


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if args.top < 1:
        raise UserError(f"--top must be positive, got {args.top}")
    if args.batch_size < 1:
        raise UserError(f"--batch-size must be positive, got {args.batch_size}")
    if args.document is not None and args.query is None:
        raise UserError("--document needs --query: the sentence with the blank to fill")
    if args.batch is not None and args.query is not None:
        raise UserError("--query goes with --document; in --batch files each line has its query")
    if args.batch is not None and args.heatmap is not None:
        raise UserError("--heatmap goes with --document (one page for one answer)")
    # Every argument is checked before the reader loads (seconds: torch, spaCy) and warns.
    for ckpt in [args.ckpt] if args.ckpt else args.ensemble:
        check_checkpoint_file(ckpt)
    if args.batch is not None and not Path(args.batch).is_file():
        raise UserError(f"batch file not found: {args.batch}")
    if args.document is not None:
        parse_query(args.query)
        document = read_document(args.document)
    reader = load(args)
    if args.batch is not None:
        return _batch(reader, args)
    answer = reader.answer(document, args.query)
    for notice in answer.notices:
        print(f"note: {notice}", file=sys.stderr)
    if args.json or args.out:
        record = {**answer.to_json(args.top), "reader": reader.provenance_json()}
        text = json.dumps(record, ensure_ascii=False, indent=1)
    if args.out:
        _write_text(Path(args.out), text + "\n")
    if args.json:
        print(text)
    else:
        print_answer(answer, args.top)
        print(f"reader: {reader.describe()}")
    if args.heatmap:
        from attentive_reader.viz.html import render_html

        page = render_html(answer.heatmap(model=reader.path), caution=reader.caution())
        _write_text(Path(args.heatmap), page)
        print(f"heatmap written to {args.heatmap}", file=sys.stderr)
    return 0


def load(args: argparse.Namespace) -> Reader:
    """``Reader.load`` with its pipeline warnings printed in one line each."""
    from attentive_reader.api import Reader

    return Reader.load(
        args.ckpt or args.ensemble,
        spacy_model=args.spacy_model,
        device=args.device,
        batch_size=args.batch_size,
        warn=lambda message: print(f"warning: {message}", file=sys.stderr),
    )


def read_document(path: str) -> str:
    """The text of ``path`` (``-``: standard input), checked to be non-empty UTF-8.

    Raises:
        UserError: a missing file, an empty, binary or non-UTF-8 one.
    """
    from attentive_reader.corpus.records import Skip
    from attentive_reader.corpus.sources import decode_text

    if path == "-":
        data, source = sys.stdin.buffer.read(), "standard input"
    else:
        try:
            data, source = Path(path).read_bytes(), path
        except FileNotFoundError:
            raise UserError(f"document not found: {path}") from None
        except IsADirectoryError:
            raise UserError(f"{path} is a folder; give one document file") from None
    text = decode_text(data, source)
    if isinstance(text, Skip):
        raise UserError(f"{source}: {text.detail}; give the article as UTF-8 text")
    return text


def print_answer(answer: Answer, top: int, stream: TextIO | None = None) -> None:
    """The ranked candidates as a table, then the filled-in query."""
    from rich.console import Console
    from rich.table import Table

    console = Console(file=stream or sys.stdout, soft_wrap=True, highlight=False)
    table = Table(title=None)
    table.add_column("#", justify="right")
    table.add_column("entity")
    table.add_column("marker")
    table.add_column("probability", justify="right")
    for rank, candidate in enumerate(answer.candidates[:top], start=1):
        table.add_row(str(rank), candidate.name, candidate.marker, f"{candidate.probability:.3f}")
    console.print(table, markup=False)
    console.print(f"answer: {answer.filled}", markup=False)


def _write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole (a temporary sibling, then a rename)."""
    with writing(path, "answer"):
        write_text_atomic(path, text)


def _batch_lines(path: str) -> Iterator[tuple[int, tuple[str, str] | str]]:
    """``(line number, (document, query))`` per good line, ``(line number, error)`` per bad
    one; blank lines are skipped."""
    try:
        handle = open(path, "rb")
    except FileNotFoundError:
        raise UserError(f"batch file not found: {path}") from None
    with handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                yield number, f"not UTF-8 (invalid byte 0x{raw[err.start]:02x})"
                continue
            try:
                item = json.loads(line)
            except json.JSONDecodeError as err:
                yield number, f"not JSON ({err.msg} at column {err.colno})"
                continue
            if not isinstance(item, dict):
                yield number, 'not a JSON object; write {"document": ..., "query": ...}'
                continue
            bad = [k for k in ("document", "query") if not isinstance(item.get(k), str)]
            if bad:
                yield number, f"no {' and no '.join(bad)} text"
                continue
            yield number, (item["document"], item["query"])


def _batch(reader: Reader, args: argparse.Namespace) -> int:
    import contextlib

    print(f"reader: {reader.describe()}", file=sys.stderr)
    answered = failed = 0
    out_path = Path(args.out) if args.out else None
    with contextlib.ExitStack() as stack:
        if out_path is not None:
            stack.enter_context(writing(out_path, "answer"))
            tmp = stack.enter_context(replacing(out_path))  # after a failure: no half file
            out: TextIO = stack.enter_context(open(tmp, "w", encoding="utf-8"))
        else:
            out = sys.stdout
        lines = _batch_lines(args.batch)
        while True:
            chunk = [item for _, item in zip(range(CHUNK_LINES), lines)]
            if not chunk:
                break
            good = [(n, pair) for n, pair in chunk if not isinstance(pair, str)]
            results = iter(reader.answer_many([pair for _, pair in good], errors="return"))
            for number, item in chunk:
                result = item if isinstance(item, str) else next(results)
                if isinstance(result, (str, UserError)):
                    failed += 1
                    print(f"{args.batch} line {number}: {result}", file=sys.stderr)
                    continue
                answered += 1
                for notice in result.notices:
                    print(f"{args.batch} line {number}: note: {notice}", file=sys.stderr)
                record = {"line": number, **result.to_json(args.top)}
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
        if out_path is not None:
            out.close()  # before the stack renames it
    where = f" to {out_path}" if out_path is not None else ""
    print(
        f"answered {answered} questions{where}; {failed} bad lines"
        + (" (listed above)" if failed else ""),
        file=sys.stderr,
    )
    return 1 if failed else 0
