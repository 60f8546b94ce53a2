"""``attentive-reader fit|validate|test|predict``: the Lightning CLI over the readers.

The CLI itself (``ReaderCLI``: argument links, checkpoint defaults, the optimiser as a reader
argument) lives in ``attentive_reader.training.run``; see ``configs/`` and ``docs/``.
"""

from __future__ import annotations

from attentive_reader.training.run import run_cli


def main(argv: list[str]) -> int:
    """Run the Lightning CLI; ``argv[0]`` is the subcommand (``fit``, ``validate``, ...)."""
    run_cli(argv)
    return 0
