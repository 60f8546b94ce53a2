"""The shipped configs by name, from any folder, and ``attentive-reader configs``."""

from __future__ import annotations

import pytest

from attentive_reader.cli import main
from attentive_reader.common.errors import UserError
from attentive_reader.training.shipped_configs import config_path, configs_dir, shipped_configs
from tests.trained_reader import ROOT


def test_a_name_or_a_docs_path_finds_the_shipped_config_from_any_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shipped = ROOT / "configs"
    assert configs_dir() == shipped
    assert config_path("attentive_reader") == shipped / "attentive_reader.yaml"
    assert config_path("trainer/ddp_gpu") == shipped / "trainer" / "ddp_gpu.yaml"
    assert config_path("configs/trainer/cpu_debug.yaml") == shipped / "trainer" / "cpu_debug.yaml"
    mine = tmp_path / "mine.yaml"
    mine.write_text("seed_everything: 1\n")
    assert config_path("mine.yaml").resolve() == mine.resolve()
    with pytest.raises(UserError, match="no shipped config is called 'atentive_reader'"):
        config_path("atentive_reader")
    with pytest.raises(UserError, match="config nope.yaml does not exist"):
        config_path("nope.yaml")


def test_configs_lists_every_shipped_config_in_one_line(capsys):
    assert main(["configs"]) == 0
    header, *lines = capsys.readouterr().out.splitlines()
    assert str(configs_dir()) in header
    names = shipped_configs()
    assert {"attentive_reader", "trainer/ddp_gpu", "logger/csv"} <= set(names)
    assert [line.split()[0] for line in lines] == names
    assert all(len(line.split(maxsplit=1)) == 2 for line in lines)  # a name and what it is
