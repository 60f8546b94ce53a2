"""Each private attribute of Lightning and ``datasets`` that ``attentive_reader.common.upstream``
reads, checked against the installed versions, so that an upgrade breaks here."""

from __future__ import annotations

import datasets
import pytest
import pytorch_lightning as pl
from pytorch_lightning.cli import LightningCLI

from attentive_reader.common.upstream import (
    dataset_fingerprint,
    on_subcommand_parser,
    uses_distributed_sampler,
)
from tests.trainers import quiet_trainer


def test_dataset_fingerprint_follows_the_content():
    rows = datasets.Dataset.from_dict({"a": [1, 2, 3]})
    same = datasets.Dataset.from_dict({"a": [1, 2, 3]})
    other = datasets.Dataset.from_dict({"a": [1, 2, 4]})
    assert isinstance(dataset_fingerprint(rows), str) and dataset_fingerprint(rows)
    assert dataset_fingerprint(rows) == dataset_fingerprint(same)
    assert dataset_fingerprint(rows) != dataset_fingerprint(other)
    assert dataset_fingerprint(rows) != dataset_fingerprint(rows.select([0, 1]))


@pytest.mark.parametrize("flag", [True, False])
def test_uses_distributed_sampler_reads_the_trainer_flag(flag):
    trainer = quiet_trainer(
        use_distributed_sampler=flag,
    )
    assert uses_distributed_sampler(trainer) is flag
    assert uses_distributed_sampler(object()) is False  # no connector: no sampler swapped


class _Model(pl.LightningModule):
    def __init__(self, width: int = 2) -> None:
        super().__init__()


@pytest.mark.filterwarnings("ignore:LightningCLI.s args parameter")
def test_on_subcommand_parser_runs_on_each_subcommand_parser_with_its_arguments():
    seen: dict[str, bool] = {}

    @on_subcommand_parser
    class CLI(LightningCLI):
        def configure_subcommand_parser(self, parser, subcommand):
            # --ckpt_path is one of the subcommand's own arguments: it exists by now.
            seen[subcommand] = any(a.dest == "ckpt_path" for a in parser._actions)

    with pytest.raises(SystemExit):
        CLI(_Model, args=["fit", "--print_config"], save_config_callback=None)
    assert seen == {"fit": True, "validate": True, "test": True, "predict": True}


def test_on_subcommand_parser_refuses_a_class_without_the_hook():
    class NoHook:
        def configure_subcommand_parser(self, parser, subcommand):
            pass

    with pytest.raises(TypeError, match="upstream.py needs an update"):
        on_subcommand_parser(NoHook)
