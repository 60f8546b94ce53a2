"""``attentive-reader preprocess``: news stories -> anonymized cloze dataset.

Parses the arguments into ``PreprocessOptions``, calls ``corpus.preprocess.preprocess`` and
prints its summary (``corpus.console.print_report``). Never imports torch: a user who only preprocesses does not load it.
"""

from __future__ import annotations

import argparse
from dataclasses import fields
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from rich.console import Console

from attentive_reader.common.errors import UserError
from attentive_reader.corpus.console import print_report
from attentive_reader.corpus.options import OptionSpec, PreprocessOptions
from attentive_reader.corpus.preprocess import preprocess

EPILOG = """\
inputs (any mix, in order):
  DIR of .story files (recursive)      cnn/stories
  .tgz / .tar.gz archive of .story     cnn_stories.tgz
  .json/.jsonl/.csv/.parquet file      train.csv  (or validation=val.csv to name its split)
  DIR of DeepMind .question files      cnn/questions  (read as examples: no NER)
  .tgz / .tar.gz of .question files    cnn.tgz  (DeepMind's archive, read without unpacking)
  Hugging Face hub dataset name        cnn_dailymail --hf-config 3.0.0

A run interrupted (Ctrl-C, kill -9) resumes when the same command is run again.
"""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``attentive-reader preprocess``: the inputs and the output, then
    every ``PreprocessOptions`` field as its ``OptionSpec`` declares it."""
    parser = argparse.ArgumentParser(
        prog="attentive-reader preprocess",
        description="Turn news stories into an anonymized cloze dataset "
        "(datasets.DatasetDict + manifest.json).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("inputs", nargs="+", metavar="INPUT", help="inputs, see below")
    parser.add_argument("--output", "-o", required=True, metavar="DIR", help="output directory")
    groups: dict[str, argparse._ArgumentGroup] = {}
    hints = get_type_hints(PreprocessOptions)
    for f in fields(PreprocessOptions):
        spec: OptionSpec = f.metadata["option"]
        if spec.group not in groups:
            groups[spec.group] = parser.add_argument_group(spec.group)
        flag = spec.flag or "--" + f.name.replace("_", "-")
        groups[spec.group].add_argument(
            flag, dest=f.name, **_argument(spec, hints[f.name], f.default)
        )
    parser.add_argument(
        "--quiet", "-q", action="store_true", help="print no progress and no tables"
    )
    return parser


def _argument(spec: OptionSpec, hint: Any, default: Any) -> dict[str, Any]:
    """``add_argument``'s keywords for an option of type ``hint`` and its ``default``."""
    shown = spec.default_text
    if shown is None and default is not None and not isinstance(default, bool):
        shown = " ".join(map(str, default)) if isinstance(default, tuple) else str(default)
    help_text = spec.help if shown is None else f"{spec.help} (default: {shown})"
    kwargs: dict[str, Any] = {"help": help_text.replace("%", "%%")}
    if hint is bool:  # a switch: --strict sets True; --no-lowercase sets False
        return {**kwargs, "action": "store_false" if default else "store_true"}
    kwargs |= {"default": list(default) if isinstance(default, tuple) else default}
    if spec.metavar is not None:
        kwargs["metavar"] = spec.metavar
    hint = _without_none(hint)
    if get_origin(hint) is tuple:
        items = get_args(hint)
        if items[-1] is Ellipsis:
            kwargs["nargs"], item = "+", items[0]
        else:
            kwargs["nargs"], item = len(items), items[0]
        hint = item
    if get_origin(hint) is Literal:
        kwargs["choices"] = get_args(hint)
    elif spec.parse is not None:
        kwargs["type"] = spec.parse
    elif hint in (int, float):
        kwargs["type"] = hint
    return kwargs


def _without_none(hint: Any) -> Any:
    """``X | None`` -> ``X``."""
    if get_origin(hint) in (Union, UnionType):
        (hint,) = [arg for arg in get_args(hint) if arg is not type(None)]
    return hint


def main(argv: list[str]) -> int:
    """Run ``attentive-reader preprocess`` with ``argv`` (without the command name)."""
    args = build_parser().parse_args(argv)
    try:
        options = PreprocessOptions(
            **{f.name: getattr(args, f.name) for f in fields(PreprocessOptions)}
        )
    except ValueError as error:
        raise UserError(str(error)) from None
    progress = False if args.quiet else None  # None: a progress bar on a terminal only
    result = preprocess(
        args.inputs, args.output, options, console=Console(stderr=True), progress=progress
    )
    print_report(result, Console(quiet=args.quiet))
    return 0
