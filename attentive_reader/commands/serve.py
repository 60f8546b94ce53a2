"""``attentive-reader serve``: a local web page to ask a reader about any document.

Paste an article and a query, see the ranked answers and the attention heatmap (real names
or markers); with ``--data DIR`` the examples of a processed dataset can be browsed too.
The page is built by ``attentive_reader.serve.app.create_app`` and served by uvicorn on
``127.0.0.1`` unless ``--host`` says otherwise.
"""

from __future__ import annotations

import argparse
import sys

from attentive_reader.errors import UserError

LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="attentive-reader serve",
        description="Serve a local web page to ask a trained reader about any document.",
    )
    parser.add_argument("--ckpt", required=True, help="reader checkpoint (from 'fit')")
    parser.add_argument("--data", metavar="DIR", help="a processed dataset to browse")
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to bind (default 127.0.0.1: this machine only; 0.0.0.0 opens the "
        "page to the network)",
    )
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    parser.add_argument(
        "--max-bytes",
        type=int,
        default=1_000_000,
        help="largest request accepted, in bytes (default 1000000)",
    )
    parser.add_argument(
        "--spacy-model", metavar="NAME", help="spaCy pipeline instead of the recorded one"
    )
    parser.add_argument(
        "--device",
        default="auto",
        help="where the reader runs: auto (default, as in every command: the first GPU when "
        "there is one, else the CPU, so one command line serves both), cpu, cuda or cuda:N",
    )
    return parser


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if not 0 < args.port < 65536:
        raise UserError(f"--port must be in 1..65535, got {args.port}")
    if args.max_bytes < 1:
        raise UserError(f"--max-bytes must be positive, got {args.max_bytes}")
    try:
        import uvicorn

        from attentive_reader.serve.app import create_app
    except ImportError as error:
        raise UserError(
            f'the page needs {error.name}: pip install "attentive-reader[serve]"'
        ) from None
    from attentive_reader.api import Reader

    reader = Reader.load(
        args.ckpt,
        spacy_model=args.spacy_model,
        device=args.device,
        warn=lambda message: print(f"warning: {message}", file=sys.stderr),
    )
    app = create_app(reader, data=args.data, max_bytes=args.max_bytes)
    if args.host not in LOCAL_HOSTS:
        print(
            f"warning: serving on {args.host}: anyone who can reach this machine can use the page",
            file=sys.stderr,
        )
    host = f"[{args.host}]" if ":" in args.host else args.host
    print(f"serving {args.ckpt} on http://{host}:{args.port}/ (Ctrl-C stops)", file=sys.stderr)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0
