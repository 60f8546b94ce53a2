"""The reading commands' ``--help``: every default shown, the same device default everywhere."""

from __future__ import annotations

import re

import pytest

from attentive_reader.commands import answer, evaluate, heatmap, serve

READING_COMMANDS = {"evaluate": evaluate, "heatmap": heatmap, "answer": answer, "serve": serve}


def _help(module) -> str:
    # Unwrapped, so that a phrase split over two lines is still found.
    return " ".join(module.build_parser().format_help().split())


@pytest.mark.parametrize("name", READING_COMMANDS)
def test_every_reading_command_runs_where_auto_says(name):
    """One device default, said the same way in each command's help."""
    parser = READING_COMMANDS[name].build_parser()
    (device,) = [a for a in parser._actions if "--device" in a.option_strings]
    assert device.default == "auto"
    assert "auto (default, as in every command: the first GPU when there is one" in _help(
        READING_COMMANDS[name]
    )


@pytest.mark.parametrize(
    ("name", "flag", "shown"),
    [
        ("evaluate", "--batch-size", "(default: 64)"),
        ("evaluate", "--max-penalty", "(default: 8, the paper's)"),
        ("heatmap", "--scale", "linear (default)"),
        ("heatmap", "--clip", "(default: 10.0)"),
        ("heatmap", "--batch-size", "(default: 32)"),
        ("answer", "--batch-size", "(default: 32)"),
    ],
)
def test_help_shows_the_defaults(name, flag, shown):
    module = READING_COMMANDS[name]
    parser = module.build_parser()
    (action,) = [a for a in parser._actions if flag in a.option_strings]
    assert str(action.default) in shown  # the help says the value the parser uses
    options = _help(module).split(" options: ", 1)[1]  # past the usage lines
    entry = re.search(re.escape(flag) + r" \S+ (.*?)(?= --|$)", options)
    assert entry is not None and shown in entry.group(1)


@pytest.mark.parametrize("name", READING_COMMANDS)
def test_help_prints_no_doubled_percent_signs(name):
    assert "%%" not in READING_COMMANDS[name].build_parser().format_help()
