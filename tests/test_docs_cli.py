"""The docs and the commands agree, where that can be checked mechanically.

* every command of ``attentive-reader`` and every extra of ``setup.cfg`` is in docs/install.md;
* every ``--flag`` a docs page (or the README) writes after ``attentive-reader COMMAND`` exists
  in that command's ``--help`` (for the Lightning commands: the CLI's own options, the trainer's,
  the data module's, the checkpoint callback's and every reader's init arguments);
* every option of an argparse command with a default shows that default in its ``--help``.
"""

from __future__ import annotations

import argparse
import configparser
import importlib
import inspect
import re
from functools import cache
from pathlib import Path

import pytest

from attentive_reader.cli import COMMANDS

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LIGHTNING = ("fit", "validate", "test", "predict")
FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9_.-]*)")


def _invocations(text: str) -> list[tuple[str, str]]:
    """``(command, rest of the line)`` for every ``attentive-reader COMMAND ...`` of a page:
    in fenced code blocks (backslash continuations joined, ``#`` comments dropped) and in
    inline code spans."""
    found: list[tuple[str, str]] = []
    lines: list[str] = []
    for block in re.findall(r"```[^\n]*\n(.*?)```", text, flags=re.S):
        lines += re.sub(r"\\\n", " ", block).splitlines()
    prose = re.sub(r"```[^\n]*\n.*?```", "", text, flags=re.S)
    lines += re.findall(r"`([^`\n]+)`", prose)
    for line in lines:
        line = re.sub(r"\s#\s.*$", "", line)  # a shell comment
        for match in re.finditer(r"attentive-reader\s+([a-z]+)\b([^|;&]*)", line):
            found.append((match.group(1), match.group(2)))
    return found


def _documented_flags() -> list[tuple[str, str, str]]:
    """``(page, command, flag)`` for every flag the docs write after a command."""
    flags = []
    for page in PAGES:
        for command, rest in _invocations(page.read_text(encoding="utf-8")):
            # quoted arguments may hold anything (a query, a JSON value)
            rest = re.sub(r"\"[^\"]*\"|'[^']*'", "", rest)
            flags += [(page.name, command, flag.rstrip(".")) for flag in FLAG.findall(rest)]
    return sorted(set(flags))


@cache
def _argparse_flags(command: str) -> frozenset[str]:
    module = importlib.import_module(COMMANDS[command][0])
    parser: argparse.ArgumentParser = module.build_parser()
    return frozenset(parser._option_string_actions)


@cache
def _lightning_flags() -> frozenset[str]:
    """The options of ``fit --help``, plus ``--model.NAME`` for every reader's init argument."""
    import pytorch_lightning as pl
    from pytorch_lightning.callbacks import ModelCheckpoint

    from attentive_reader.data.datamodule import ClozeDataModule
    from attentive_reader.models.base import ClozeReader
    from attentive_reader.training.checkpointing import ReaderCheckpoint
    from attentive_reader.training.progress import ReaderProgressBar

    flags = {"--help", "--config", "--print_config", "--seed_everything", "--ckpt_path"}
    flags |= {"--model", "--model.help", "--data", "--trainer", "--checkpoint", "--progress"}
    sections = [
        ("trainer", pl.Trainer),
        ("data", ClozeDataModule),
        ("checkpoint", ModelCheckpoint),
        ("checkpoint", ReaderCheckpoint),
        ("progress", ReaderProgressBar),
    ]
    for prefix, klass in sections:
        flags |= {f"--{prefix}.{name}" for name in inspect.signature(klass.__init__).parameters}
    for reader in ClozeReader.list_available().values():
        for klass in reader.__mro__:
            if issubclass(klass, ClozeReader):
                params = inspect.signature(klass.__init__).parameters
                flags |= {f"--model.{name}" for name in params}
                flags |= {f"--model.init_args.{name}" for name in params}
    return frozenset(flags)


def _known(command: str, flag: str) -> bool:
    if command in LIGHTNING:
        known = _lightning_flags()
        # --trainer.logger.init_args.save_dir and the like: the first two parts name an option
        return flag in known or ".".join(flag.split(".")[:2]) in known
    # learning's --set=--trainer.accelerator=gpu hands a fit flag to each of its runs
    return flag in _argparse_flags(command) or (command == "learning" and _known("fit", flag))


def test_every_command_and_extra_is_in_the_install_page() -> None:
    install = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
    missing = [name for name in COMMANDS if f"`{name}`" not in install]
    assert missing == [], "docs/install.md's command table lacks these commands"
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    extras = list(config["options.extras_require"])
    assert extras, "setup.cfg declares extras"
    missing = [extra for extra in extras if f'".[{extra}]"' not in install]
    assert missing == [], "docs/install.md does not show how to install these extras"


def test_the_docs_name_commands_that_exist() -> None:
    named = {command for page in PAGES for command, _ in _invocations(page.read_text("utf-8"))}
    assert named, "the docs show commands"
    assert named - set(COMMANDS) == set()


def test_every_flag_the_docs_write_exists_in_the_commands_help() -> None:
    flags = _documented_flags()
    assert len(flags) > 30, "the docs write flags after commands"
    unknown = [
        f"{page}: attentive-reader {command} {flag}"
        for page, command, flag in flags
        if command in COMMANDS and not _known(command, flag)
    ]
    assert unknown == []


def test_the_check_itself_catches_a_wrong_flag() -> None:
    text = "```bash\nattentive-reader evaluate --ckpt A \\\n    --no-such-flag 3  # --neither\n```"
    assert [(c, r.split()) for c, r in _invocations(text)] == [
        ("evaluate", ["--ckpt", "A", "--no-such-flag", "3"])
    ]
    assert not _known("evaluate", "--no-such-flag") and _known("evaluate", "--ckpt")
    assert _known("fit", "--trainer.max_epochs") and _known("fit", "--model.lr")
    assert not _known("fit", "--trainer.no_such_option")


@pytest.mark.parametrize(
    "command", [name for name in COMMANDS if name not in LIGHTNING], ids=lambda name: name
)
def test_every_default_is_shown_in_help(command: str) -> None:
    module = importlib.import_module(COMMANDS[command][0])
    parser: argparse.ArgumentParser = module.build_parser()
    silent = []
    for action in parser._actions:
        default = action.default
        if not action.option_strings or action.help == argparse.SUPPRESS:
            continue
        if default in (None, False, True, argparse.SUPPRESS) or default == []:
            continue
        if "default" not in (action.help or "").lower():
            silent.append(action.option_strings[-1])
    assert silent == [], f"attentive-reader {command} --help: say the default of these options"
