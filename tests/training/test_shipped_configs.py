"""The shipped configs by name, from any folder, and ``attentive-reader configs``."""

from __future__ import annotations

import pytest
import yaml

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


@pytest.mark.parametrize("subcommand", ["fit", "test"])
def test_help_starts_with_a_short_usage_and_config_names_the_shipped_configs(subcommand, capsys):
    with pytest.raises(SystemExit) as ended:
        main([subcommand, "--help"])
    assert ended.value.code in (0, None)
    usage, blank, *rest = capsys.readouterr().out.splitlines()
    # One usage line (the parser's own lists every option over some 70 lines).
    assert usage.startswith("usage: ") and usage.endswith(
        f"{subcommand} --config CONFIG [--config CONFIG ...] --data.path DIR [--ckpt_path CKPT] "
        "[--SECTION.OPTION VALUE ...]"
    )
    assert blank == ""
    text = " ".join(line.strip() for line in rest)
    config = text.split("--config CONFIG ", 1)[1].split(" --print_config", 1)[0]
    readers = [name for name in shipped_configs() if "/" not in name]
    assert config.split("(", 1)[1].split(";")[0].split(", ") == readers
    assert "trainer/cpu_debug" in config and "real_news/READER" in config
    assert "'attentive-reader configs' lists them" in config


def test_configs_lists_every_shipped_config_in_one_line(capsys):
    assert main(["configs"]) == 0
    header, *lines = capsys.readouterr().out.splitlines()
    assert str(configs_dir()) in header
    names = shipped_configs()
    assert {"attentive_reader", "trainer/ddp_gpu", "logger/csv"} <= set(names)
    assert [line.split()[0] for line in lines] == names
    assert all(len(line.split(maxsplit=1)) == 2 for line in lines)  # a name and what it is


CPU_SPEEDUPS = "attentive_reader.cpu_speedups.CpuSpeedups"


def _callbacks(name: str) -> list[str]:
    config = yaml.safe_load(config_path(name).read_text()) or {}
    callbacks = (config.get("trainer") or {}).get("callbacks") or []
    return [callback["class_path"] for callback in callbacks]


def test_every_reader_config_lists_the_cpu_speedups_and_no_piece_replaces_them():
    """A reader config lists ``CpuSpeedups`` once; the pieces put after it (trainer, logger,
    demo) set no ``trainer.callbacks``, which would replace the reader config's list."""
    whole = ("real_news/", "large_batch/")  # folders of whole reader configs
    readers = [n for n in shipped_configs() if "/" not in n or n.startswith(whole)]
    pieces = [name for name in shipped_configs() if name not in readers]
    assert len(readers) >= 20 and {"trainer/ddp_gpu", "demo/demo"} <= set(pieces)
    for name in readers:
        assert _callbacks(name).count(CPU_SPEEDUPS) == 1, name
    for name in pieces:
        assert _callbacks(name) == [], name


@pytest.mark.parametrize(
    "configs",
    [
        ["impatient_reader_paper", "trainer/ddp_gpu"],
        ["attentive_reader", "trainer/cpu_debug"],
        ["gated_attention_reader", "demo/demo"],
    ],
)
def test_a_documented_combination_ends_with_the_cpu_speedups_listed(configs, capsys):
    args = [arg for name in configs for arg in ("--config", name)]
    with pytest.raises(SystemExit) as ended:
        main(["fit", *args, "--trainer.callbacks.gru=false", "--print_config"])
    assert ended.value.code in (0, None)
    callbacks = yaml.safe_load(capsys.readouterr().out)["trainer"]["callbacks"]
    speedups = [c for c in callbacks if c["class_path"] == CPU_SPEEDUPS]
    assert len(speedups) == 1 and speedups[0]["init_args"]["gru"] is False
