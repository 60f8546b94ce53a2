"""The subcommands of ``attentive-reader``, one module each (``cli.py`` dispatches to them
lazily); this module holds the arguments several of them declare alike."""

from __future__ import annotations

import argparse


def add_device_argument(parser: argparse.ArgumentParser, runs: str = "the reader runs") -> None:
    """Add ``--device`` to a reading command's ``parser``; ``runs`` names what runs there.

    Every reading command defaults to ``auto``, so that one command line serves a machine
    with a GPU and one without.
    """
    parser.add_argument(
        "--device",
        default="auto",
        help=f"where {runs}: auto (default, as in every command: the first GPU when there is "
        "one, else the CPU, so one command line serves both), cpu, cuda or cuda:N",
    )


def add_reader_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the reader a question-answering command loads: ``--ckpt CKPT`` or ``--ensemble
    CKPT CKPT ...`` (one of them, required; ``Reader.load`` takes either)."""
    reader = parser.add_mutually_exclusive_group(required=True)
    reader.add_argument("--ckpt", help="reader checkpoint (from 'fit')")
    reader.add_argument(
        "--ensemble",
        nargs="+",
        metavar="CKPT",
        help="several checkpoints of one vocabulary and entity range, answering together by "
        "the mean of their answer probabilities (instead of --ckpt)",
    )
