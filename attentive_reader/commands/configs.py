"""``attentive-reader configs``: the shipped YAML configs, one line each.

Each line is a name that ``--config`` accepts (``fit --config attentive_reader --config
trainer/cpu_debug``) and the first sentence of the config's header comment.
"""

from __future__ import annotations

import argparse

from attentive_reader.training.shipped_configs import configs_dir, shipped_configs, summary


def build_parser() -> argparse.ArgumentParser:
    return argparse.ArgumentParser(
        prog="attentive-reader configs",
        description="List the shipped configs by the names --config accepts (fit, validate, "
        "test, predict) and where they are installed.",
    )


def main(argv: list[str]) -> int:
    build_parser().parse_args(argv)
    root = configs_dir()
    names = shipped_configs()
    width = max(map(len, names))
    print(f"# {len(names)} configs in {root}; use one with --config NAME (later ones win)")
    for name in names:
        print(f"{name:<{width}}  {summary(root / f'{name}.yaml')}")
    return 0
