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
