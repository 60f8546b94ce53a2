"""Preprocessing options declared once (``corpus/options.py``): the command's parser, the
manifest's JSON and the run key all come from the fields' ``OptionSpec``."""

from __future__ import annotations

import argparse
from dataclasses import fields
from pathlib import Path

import pytest

from attentive_reader.commands.preprocess import build_parser
from attentive_reader.corpus.options import PreprocessOptions, context_cap, option_specs


def _options(argv: list[str]) -> PreprocessOptions:
    args = build_parser().parse_args(["in", "-o", "out", *argv])
    return PreprocessOptions(**{f.name: getattr(args, f.name) for f in fields(PreprocessOptions)})


def test_every_option_has_a_flag_and_the_parser_defaults_are_the_fields():
    parser = build_parser()
    dests = {action.dest for action in parser._actions}
    assert set(option_specs()) <= dests
    assert _options([]) == PreprocessOptions()


def test_flags_parse_to_the_typed_values():
    options = _options(
        [
            "--labels", "PERSON", "ORG",
            "--no-lowercase",
            "--max-context-tokens", "none",
            "--split-fractions", "0.8", "0.1", "0.1",
            "--hf-splits", "train", "test",
            "--num-proc", "3",
            "--strict",
        ]
    )  # fmt: skip
    assert options.labels == ("PERSON", "ORG") and options.lowercase is False
    assert options.max_context_tokens is None
    assert options.split_fractions == (0.8, 0.1, 0.1) and options.hf_splits == ("train", "test")
    assert options.num_proc == 3 and options.strict is True and options.overwrite is False


def test_a_choice_outside_the_literal_is_refused(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["in", "-o", "out", "--engine", "spark"])
    assert "invalid choice: 'spark'" in capsys.readouterr().err


def test_the_context_cap():
    assert context_cap("none") is None and context_cap("0") is None
    assert context_cap("120") == 120
    for bad in ("-3", "many"):
        with pytest.raises(argparse.ArgumentTypeError, match="positive integer or 'none'"):
            context_cap(bad)


def test_to_json_holds_every_option_with_lists_for_tuples():
    data = PreprocessOptions(hf_splits=("train",)).to_json()
    assert list(data) == [f.name for f in fields(PreprocessOptions)]
    assert data["labels"] == list(PreprocessOptions().labels)
    assert data["split_fractions"] == [0.9, 0.05, 0.05] and data["hf_splits"] == ["train"]


def test_the_run_key_holds_what_changes_the_output_only(tmp_path):
    base = PreprocessOptions().run_key_options()
    assert set(base) == {
        "labels",
        "lowercase",
        "max_context_tokens",
        "url_lists",
        "split_fractions",
        "hf_config",
        "hf_splits",
        "batch_size",
        "shard_size",
    }  # no publisher unless one is kept; no speed or placement option
    speed = PreprocessOptions(num_proc=4, strict=True, overwrite=True, num_shards=2)
    assert speed.run_key_options() == base
    assert PreprocessOptions(lowercase=False).run_key_options() != base
    lists = tmp_path / "lists"
    kept = PreprocessOptions(url_lists=str(lists), publisher="cnn").run_key_options()
    assert kept["publisher"] == "cnn"
    assert kept["url_lists"] == str(Path(lists).resolve())


def test_every_default_is_in_the_help():
    text = " ".join(build_parser().format_help().split())
    for shown in ("(default: 2000)", "(default: 0.9 0.05 0.05)", "(default: 64)", "(default: 256)"):
        assert shown in text
    assert "(default: PERSON NORP" in text and "(default: local)" in text
