"""``attentive-reader serve``: a local web page to ask a reader about any document.

Paste an article and a query, see the ranked answers and the attention heatmap (real names
or markers); with ``--data DIR`` the examples of a processed dataset can be browsed too.
``--ensemble CKPT CKPT ...`` serves several readers of one vocabulary as one, answering by
the mean of their probabilities. A JSON API answers programs beside it (``/api/answer``, ``/api/answer_many``,
``/api/health``). Questions are answered off the event loop by ``--workers`` processes, each
with its own reader (``--pool thread``: one thread sharing the loaded one); ``--queue`` more
may wait (then 503 with ``Retry-After``), and ``--timeout`` limits each (504). The page is
built by ``attentive_reader.serve.app.create_app`` and served by uvicorn on ``127.0.0.1``
unless ``--host`` says otherwise. SIGTERM stops it as Ctrl-C does, its workers with it.
Every argument (the checkpoint, ``--data``, and whether ``--host``/``--port`` can be bound) is
checked before the reader loads and the workers start, each mistake in one line.
"""

from __future__ import annotations

import argparse
import errno
import logging
import signal
import socket
import sys
from typing import TYPE_CHECKING

from attentive_reader.commands import add_device_argument, add_reader_arguments
from attentive_reader.common.checkpoint_file import check_checkpoint_file
from attentive_reader.common.errors import UserError
from attentive_reader.serve.pool import DEFAULT_QUEUE, DEFAULT_TIMEOUT, cores

if TYPE_CHECKING:
    from attentive_reader.api import Reader
    from attentive_reader.serve.pool import AnswerPool

LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")
# Seconds that questions in the server are given to be answered once it is told to stop.
GRACEFUL_SECONDS = 3


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="attentive-reader serve",
        description="Serve a local web page to ask a trained reader about any document.",
    )
    add_reader_arguments(parser)
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
        "--workers",
        type=int,
        help=f"questions answered at a time, one process each (default: the cores, {cores()})",
    )
    parser.add_argument(
        "--queue",
        type=int,
        default=DEFAULT_QUEUE,
        help="questions that may wait for a worker; one more gets 503 with Retry-After "
        f"(default {DEFAULT_QUEUE})",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help="time limit of a question from its arrival (504 past it) and of receiving a "
        f"request (408) (default {DEFAULT_TIMEOUT:g})",
    )
    parser.add_argument(
        "--pool",
        choices=("process", "thread"),
        default="process",
        help="process (default): each worker loads its own reader and uses a core; thread: "
        "one thread answers with the loaded reader (less memory, one question at a time)",
    )
    parser.add_argument(
        "--spacy-model", metavar="NAME", help="spaCy pipeline instead of the recorded one"
    )
    add_device_argument(parser)
    return parser


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    _check(args)  # every argument, the port included, before the reader loads
    # SIGTERM (systemd, a container runtime, kill) stops the server as Ctrl-C does: through
    # the finally below, which stops the workers. uvicorn handles it while it serves, then
    # raises it again, which lands here.
    signal.signal(signal.SIGTERM, _terminated)
    logging.basicConfig(format="attentive-reader serve: %(levelname)s: %(message)s")
    try:
        import uvicorn

        from attentive_reader.serve import http
        from attentive_reader.serve.app import create_app
    except ImportError as error:
        raise UserError(
            f'the page needs {error.name}: pip install "attentive-reader[serve]"'
        ) from None
    from attentive_reader.api import Reader

    reader = Reader.load(
        args.ckpt or args.ensemble,
        spacy_model=args.spacy_model,
        device=args.device,
        warn=lambda message: print(f"warning: {message}", file=sys.stderr),
    )
    pool = _pool(args, reader)
    try:
        app = create_app(reader, data=args.data, max_bytes=args.max_bytes, pool=pool)
        if pool.kind == "process":
            print(f"starting {args.workers} answering worker processes", file=sys.stderr)
            pool.start()  # each loads the reader
        if args.host not in LOCAL_HOSTS:
            print(
                f"warning: serving on {args.host}: anyone who can reach this machine can use "
                "the page",
                file=sys.stderr,
            )
        host = f"[{args.host}]" if ":" in args.host else args.host
        print(
            f"serving {reader.path} on http://{host}:{args.port}/ (Ctrl-C stops)", file=sys.stderr
        )
        config = uvicorn.Config(
            app,
            host=args.host,
            port=args.port,
            log_level="warning",
            timeout_graceful_shutdown=GRACEFUL_SECONDS,
            **http.options(),  # limits on what a client sends before the app sees it
        )
        server = _server_class()(config, pool)
        server.run()
        if not server.started:  # uvicorn logged why (the port is taken, ...)
            raise UserError(f"could not serve on {host}:{args.port}: see the error above")
    finally:
        pool.close()
    return 0


def _server_class():
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn's server, which tells the pool when it is told to stop."""

        def __init__(self, config: uvicorn.Config, pool: AnswerPool) -> None:
            super().__init__(config)
            self.pool = pool

        def handle_exit(self, sig: int, frame: object) -> None:
            self.pool.drain()  # workers killed with the server's group are not started again
            super().handle_exit(sig, frame)

    return Server


def _terminated(signum: int, frame: object) -> None:
    """SIGTERM's handler: unwind (through ``finally``), exiting with 143 as a shell reports it."""
    raise SystemExit(128 + signum)


def _check(args: argparse.Namespace) -> None:
    if not 0 < args.port < 65536:
        raise UserError(f"--port must be in 1..65535, got {args.port}")
    if args.max_bytes < 1:
        raise UserError(f"--max-bytes must be positive, got {args.max_bytes}")
    if args.workers is None:
        args.workers = 1 if args.pool == "thread" else cores()
    if args.workers < 1:
        raise UserError(f"--workers must be positive, got {args.workers}")
    if args.queue < 0:
        raise UserError(f"--queue must be zero or more, got {args.queue}")
    if not 0 < args.timeout < float("inf"):
        raise UserError(f"--timeout must be positive, got {args.timeout:g}")
    if args.pool == "thread" and args.workers > 1:
        raise UserError(
            f"--pool thread answers on one thread (spaCy's pipeline is not shared across "
            f"threads); drop --workers {args.workers} or use --pool process"
        )
    for ckpt in [args.ckpt] if args.ckpt else args.ensemble:
        check_checkpoint_file(ckpt)
    if args.data is not None:
        from attentive_reader.corpus.records import check_dataset_dir

        check_dataset_dir(args.data)
    check_port(args.host, args.port)


def check_port(host: str, port: int) -> None:
    """Refuse a ``--host``/``--port`` that cannot be served, before the reader and the
    workers load (seconds): each address ``host`` resolves to is bound as uvicorn binds it
    (``SO_REUSEADDR``, so a port some closed connections still wait on is free), then freed.

    Raises:
        UserError: the port is in use or needs privileges, or ``host`` is no address of this
            machine.
    """
    try:
        addresses = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as error:
        raise UserError(
            f"--host {host}: not an address this machine can serve on ({error.strerror}); "
            "use 127.0.0.1 (this machine only) or 0.0.0.0 (the network)"
        ) from None
    for family, kind, proto, _, address in addresses:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(address)
            except OSError as error:
                raise UserError(_bind_problem(host, port, error)) from None


def _bind_problem(host: str, port: int, error: OSError) -> str:
    """The one line for a failed bind of ``host:port``."""
    if error.errno == errno.EADDRINUSE:
        return (
            f"--port {port}: the port is in use on {host} (another server, or a serve still "
            f"stopping); stop it or choose another, e.g. --port {port + 1 if port < 65535 else 8000}"
        )
    if error.errno == errno.EACCES:
        return (
            f"--port {port}: this user may not serve on it (ports below 1024 need "
            "privileges); choose --port 1024 or above (the default is 8000)"
        )
    if error.errno == errno.EADDRNOTAVAIL:
        return (
            f"--host {host}: not an address of this machine; use 127.0.0.1 (this machine "
            "only) or 0.0.0.0 (the network)"
        )
    return f"cannot serve on {host} --port {port}: {error.strerror or error}"


def _pool(args: argparse.Namespace, reader: Reader) -> AnswerPool:
    """The answering pool (a process pool's workers start with ``AnswerPool.start``)."""
    from attentive_reader.serve.pool import AnswerPool
    from attentive_reader.serve.workers import ReaderSource

    if args.pool == "thread":
        import torch

        torch.set_num_threads(1)  # one question at a time: more threads only wait (see docs)
        return AnswerPool.threads(reader, queue=args.queue, timeout=args.timeout)
    ckpt = str(args.ckpt) if args.ckpt else tuple(str(path) for path in args.ensemble)
    source = ReaderSource(ckpt, args.spacy_model, args.device)
    return AnswerPool.processes(
        source, workers=args.workers, queue=args.queue, timeout=args.timeout
    )
