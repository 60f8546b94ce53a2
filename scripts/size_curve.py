#!/usr/bin/env python
"""Test accuracy against training-set size, from `attentive-reader evaluate --out` files.

Train a reader on shares of the training stories (``fit --data.train_fraction 0.25``, ``0.5``,
and the whole set), evaluate each best checkpoint on the same test split with
``attentive-reader evaluate --out FILE.json``, then give each file with its reader's name and
share::

    python scripts/size_curve.py \\
        --point "Attentive Reader" 0.25 q25.json --point "Attentive Reader" 0.5 q50.json \\
        --point "Attentive Reader" 1 all.json --plot size.png --output size.json

It prints one row per point (the test accuracy and its Wilson 95% interval, from the file) and
the baselines of the same test questions; ``--plot`` draws the curves, the baselines as
lines. Every file must hold one checkpoint's results on the same test questions (the same
number of questions and the same baselines), or the script stops and names the file.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from attentive_reader.viz.curves import SizePoint


def read_point(path: Path) -> tuple[dict, dict[str, float], int]:
    """The reader's overall figures, the baselines and the number of questions of one
    ``evaluate --out`` file."""
    try:
        result = json.loads(path.read_text(encoding="utf-8"))
        systems = result["systems"]
        readers = [s for s in systems if s["kind"] != "baseline"]
        base = {
            s["name"]: float(s["overall"]["accuracy"]) for s in systems if s["kind"] == "baseline"
        }
        n = int(result["num_examples"])
    except OSError as error:
        raise SystemExit(f"{path}: cannot read it ({error.strerror})") from None
    except (ValueError, KeyError, TypeError) as error:
        raise SystemExit(
            f"{path}: not an `attentive-reader evaluate --out` file ({type(error).__name__}: "
            f"{error})"
        ) from None
    if len(readers) != 1:
        raise SystemExit(
            f"{path}: holds {len(readers)} checkpoints' results; evaluate one checkpoint per file"
        )
    return readers[0]["overall"], base, n


def collect(points: list[list[str]]) -> tuple[dict[str, list[SizePoint]], dict[str, float], int]:
    """Each reader's points, and the baselines and question count they all share."""
    readers: dict[str, list[SizePoint]] = {}
    shared: tuple[Path, dict[str, float], int] | None = None
    for name, share_text, file in points:
        try:
            share = float(share_text)
        except ValueError:
            share = math.nan
        if not 0.0 < share <= 1.0:
            raise SystemExit(
                f"--point {name!r} {share_text} {file}: the share must be a number in (0, 1], "
                "e.g. 0.25 for a quarter of the training stories"
            )
        path = Path(file)
        overall, base, n = read_point(path)
        if shared is None:
            shared = (path, base, n)
        elif (
            n != shared[2]
            or base.keys() != shared[1].keys()
            or any(abs(base[k] - shared[1][k]) > 1e-9 for k in base)
        ):
            raise SystemExit(
                f"{path}: its test questions differ from those of {shared[0]} ({n} against "
                f"{shared[2]} questions, or other baselines): evaluate every checkpoint on the "
                "same dataset and split"
            )
        if any(point[0] == share for point in readers.get(name, [])):
            raise SystemExit(f"--point {name!r} {share_text}: given twice for this reader")
        point = (share, overall["accuracy"], overall["ci_low"], overall["ci_high"])
        readers.setdefault(name, []).append(point)
    assert shared is not None  # argparse requires at least one --point
    return {name: sorted(points) for name, points in readers.items()}, shared[1], shared[2]


def table(readers: dict[str, list[SizePoint]], base: dict[str, float], n: int) -> str:
    lines = [
        f"test accuracy against training-set size ({n} test questions)",
        "",
        "| reader | share of the training stories | test | 95% interval |",
        "| --- | ---: | ---: | ---: |",
    ]
    for name, points in readers.items():
        for share, accuracy, low, high in sorted(points):
            lines.append(
                f"| {name} | {share:.0%} | {100 * accuracy:.1f} | {100 * low:.1f}-{100 * high:.1f} |"
            )
    for name, accuracy in base.items():
        lines.append(f"| {name.replace('_', ' ')} (baseline) | | {100 * accuracy:.1f} | |")
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--point",
        nargs=3,
        action="append",
        required=True,
        metavar=("READER", "SHARE", "FILE.json"),
        help="a reader's name, the share of the training stories it was trained on (0.25), "
        "and its `evaluate --out` file; once per point",
    )
    parser.add_argument("--plot", metavar="FILE.png", help="draw the curves here")
    parser.add_argument("--output", metavar="FILE.json", help="write the figures here")
    parser.add_argument("--title", default="", help="the plot's title")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    readers, base, n = collect(args.point)
    print(table(readers, base, n))
    if args.output:
        figures = {"test_questions": n, "baselines": base, "readers": readers}
        Path(args.output).write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    if args.plot:
        from attentive_reader.viz.curves import write_size_curve

        print(f"plot written to {write_size_curve(args.plot, readers, base, title=args.title)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
