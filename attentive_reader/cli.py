"""The ``attentive-reader`` console command.

Subcommands are dispatched lazily so that, for example, ``preprocess`` never imports torch and
``fit`` never imports spaCy. Each subcommand lives in ``attentive_reader.commands.<name>`` and
exposes ``main(argv: list[str]) -> int``. Mistakes a user can make raise ``UserError``; they
are printed in one line (no traceback) and the command exits with status 2; so are the faults
of the machine while writing (a full disk, a read-only folder: ``faults``). The toolkit's own
warnings are printed in one line too, and so are the argument mistakes of a command's
``argparse`` parser (no usage first: ``--help`` shows it). A closed standard output (``| head``) ends nothing: the
command writes its files and what it prints is dropped.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import os
import sys
import warnings
from collections.abc import Iterator
from types import ModuleType
from typing import NoReturn, TextIO

from attentive_reader.common.errors import UserError
from attentive_reader.common.faults import describe, is_write_fault
from attentive_reader.version import __version__

# name -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "download": (
        "attentive_reader.commands.download",
        "fetch the public CNN / Daily Mail corpora, each file checked by its SHA-256",
    ),
    "preprocess": (
        "attentive_reader.commands.preprocess",
        "turn news stories into an anonymized cloze dataset",
    ),
    "merge": (
        "attentive_reader.commands.merge",
        "merge the shards of a multi-machine preprocessing run",
    ),
    "export": (
        "attentive_reader.commands.export",
        "write a processed dataset as DeepMind .question files",
    ),
    "synth": (
        "attentive_reader.commands.synth",
        "write the built-in synthetic news corpus as .story files",
    ),
    "encode": (
        "attentive_reader.commands.encode",
        "encode a dataset's token ids once, ahead of a (multi-node) training run",
    ),
    "vectors": (
        "attentive_reader.commands.vectors",
        "train word vectors on a dataset's train split (word2vec), for --model.word_vectors",
    ),
    "configs": (
        "attentive_reader.commands.configs",
        "list the shipped configs that --config NAME accepts",
    ),
    "fit": ("attentive_reader.commands.train", "train a reader (Lightning CLI)"),
    "validate": ("attentive_reader.commands.train", "validate a reader (Lightning CLI)"),
    "test": ("attentive_reader.commands.train", "test a reader (Lightning CLI)"),
    "predict": ("attentive_reader.commands.train", "predict with a reader (Lightning CLI)"),
    "evaluate": (
        "attentive_reader.commands.evaluate",
        "accuracy report with confidence intervals and baselines",
    ),
    "heatmap": (
        "attentive_reader.commands.heatmap",
        "per-token attention heatmaps (HTML, PNG, JSON)",
    ),
    "curves": (
        "attentive_reader.commands.curves",
        "validation curves of runs, accuracy over training-set size, learning curves (PNG, table)",
    ),
    "learning": (
        "attentive_reader.commands.learning",
        "do the shipped readers learn? their learning curves on a generated corpus",
    ),
    "anonymization": (
        "attentive_reader.commands.anonymization",
        "a dataset's anonymization report beside the published CNN and Daily Mail figures",
    ),
    "answer": (
        "attentive_reader.commands.answer",
        "ask a trained reader which entity fills a query's blank in any document",
    ),
    "serve": (
        "attentive_reader.commands.serve",
        "a local web page to ask a reader about a document and see its attention",
    ),
    "demo": (
        "attentive_reader.commands.demo",
        "the whole toolkit in one command on the built-in corpus",
    ),
}


# Words a user may reach for, and the command that does it.
ALIASES = {
    "train": "fit",
    "training": "fit",
    "eval": "evaluate",
    "evaluation": "evaluate",
    "report": "evaluate",
    "preprocessing": "preprocess",
    "prepare": "preprocess",
    "server": "serve",
    "web": "serve",
    "ask": "answer",
    "heatmaps": "heatmap",
    "config": "configs",
    "curve": "curves",
    "generate": "synth",
}


def unknown_command(name: str) -> str:
    """The one line for a command that does not exist: the closest ones, and where the list is."""
    import difflib

    known = [command for command in COMMANDS if importlib.util.find_spec(COMMANDS[command][0])]
    words = {**{command: command for command in known}, **ALIASES}
    close = difflib.get_close_matches(name.lower(), list(words), n=3, cutoff=0.7)
    guesses = list(dict.fromkeys(words[word] for word in close))
    if name.lower() in words:  # an alias, or a command in capitals
        guesses = [words[name.lower()]]
    hint = "'attentive-reader --help' lists the commands"
    if not guesses:
        return f"unknown command {name!r}; {hint}"
    said = " or ".join(f"'{guess}'" for guess in guesses)
    return f"unknown command {name!r}; did you mean {said}? ({hint})"


def _usage() -> str:
    lines = ["usage: attentive-reader COMMAND [ARGS]", "", "commands:"]
    for name, (module, text) in COMMANDS.items():
        available = importlib.util.find_spec(module) is not None
        if available:
            lines.append(f"  {name:<13} {text}")
    lines += ["", "Run 'attentive-reader COMMAND --help' for the options of a command."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage())
        return 0 if argv else 2
    if argv[0] == "--version":
        print(f"attentive-reader {__version__}")
        return 0
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS or importlib.util.find_spec(COMMANDS[name][0]) is None:
        print(f"attentive-reader: error: {unknown_command(name)}", file=sys.stderr)
        return 2
    module = importlib.import_module(COMMANDS[name][0])
    try:
        with _warnings_in_one_line(name), _closed_stdout_ignored(), _argparse_in_one_line(name):
            return _run(module, name, rest)
    except UserError as err:
        print(f"attentive-reader {name}: error: {err}", file=sys.stderr)
        return 2
    except OSError as err:
        if not is_write_fault(err):
            raise
        # A full disk or a read-only folder met outside a command's own output guard.
        print(f"attentive-reader {name}: error: {describe(err)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"attentive-reader {name}: interrupted", file=sys.stderr)
        return 130


def _run(module: ModuleType, name: str, rest: list[str]) -> int:
    if module.__name__.endswith(".train"):
        return int(module.main([name, *rest]) or 0)
    return int(module.main(rest) or 0)


@contextlib.contextmanager
def _argparse_in_one_line(name: str) -> Iterator[None]:
    """A command's argument mistake (an unknown option, a missing one, a bad value) as one
    ``UserError`` line instead of the usage and the message (``--help`` shows the usage)."""

    def error(parser: argparse.ArgumentParser, message: str) -> NoReturn:
        raise UserError(f"{message}; 'attentive-reader {name} --help' lists the options")

    original = argparse.ArgumentParser.error
    argparse.ArgumentParser.error = error  # type: ignore[method-assign]
    try:
        yield
    finally:
        argparse.ArgumentParser.error = original  # type: ignore[method-assign]


class _ClosedPipeQuiet:
    """``sys.stdout`` that drops what it cannot write once its reader has gone (``| head``):
    the command goes on and writes its files; what it prints goes to ``os.devnull``."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._closed = False

    def write(self, text: str) -> int:
        if not self._closed:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self._drop()
        return len(text)

    def flush(self) -> None:
        if not self._closed:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._drop()

    def _drop(self) -> None:
        self._closed = True
        try:  # the buffered rest, and Python's flush at exit, go nowhere
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)
        except (OSError, ValueError):
            pass

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


@contextlib.contextmanager
def _closed_stdout_ignored() -> Iterator[None]:
    stream = sys.stdout
    sys.stdout = _ClosedPipeQuiet(stream)  # type: ignore[assignment]
    try:
        yield
    finally:
        sys.stdout = stream


@contextlib.contextmanager
def _warnings_in_one_line(name: str) -> Iterator[None]:
    """Show the toolkit's own warning categories as one ``warning:`` line (others as usual)."""
    with warnings.catch_warnings():
        shown = warnings.showwarning

        def show(
            message: Warning | str,
            category: type[Warning],
            filename: str,
            lineno: int,
            file: TextIO | None = None,
            line: str | None = None,
        ) -> None:
            if category.__module__.startswith("attentive_reader"):
                print(f"attentive-reader {name}: warning: {message}", file=sys.stderr)
            else:
                shown(message, category, filename, lineno, file, line)

        warnings.showwarning = show
        yield


if __name__ == "__main__":
    sys.exit(main())
