#!/usr/bin/env python
"""How good is a preprocessed dataset's anonymization? Baselines beside the published ones.

Reads a dataset made by ``attentive-reader preprocess`` (all its splits, or ``--split``) and
prints the non-neural baselines, entities and questions per document, the share of probably
split entities and of queries naming a context entity; ``--adjacent`` lists the answers whose
marker stands beside another marker. See docs/anonymization.md.

    python scripts/anonymization_report.py data/cnn_test --published cnn --json report.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import datasets

from attentive_reader.corpus.records import SPLITS, ClozeExample
from attentive_reader.eval.adjacent import adjacent_report
from attentive_reader.eval.anonymization import PUBLISHED, anonymization_report

ROWS = (
    ("maximum frequency (%)", "maximum_frequency"),
    ("exclusive frequency (%)", "exclusive_frequency"),
    ("word distance (%)", "word_distance"),
    ("entities per document", "entities_per_document"),
    ("questions per document", "questions_per_document"),
    ("answer has a related second marker (%)", "related_second_marker"),
    ("queries with a plain entity name (%)", "plain_name_queries"),
)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument(
        "dataset", type=Path, help="a folder written by attentive-reader preprocess"
    )
    parser.add_argument(
        "--published",
        choices=sorted(PUBLISHED),
        default=None,
        help="which published corpus to compare with (default: both)",
    )
    parser.add_argument(
        "--split",
        choices=SPLITS,
        default=None,
        help="only this split (default: every split together)",
    )
    parser.add_argument(
        "--adjacent",
        action="store_true",
        help="also list the answers whose marker stands directly beside another marker",
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if not (args.dataset / "dataset_dict.json").is_file():
        print(f"error: {args.dataset} is not a preprocessed dataset (no dataset_dict.json)")
        return 2
    loaded = datasets.load_from_disk(str(args.dataset))
    splits = [args.split] if args.split else list(loaded)
    missing = [split for split in splits if split not in loaded]
    if missing:
        print(f"error: {args.dataset} has no {missing[0]} split (it has {', '.join(loaded)})")
        return 2
    examples = [ClozeExample.from_row(row) for split in splits for row in loaded[split]]
    if not examples:
        print(f"error: {args.dataset} holds no questions in {', '.join(splits)}")
        return 2
    report = anonymization_report(examples)
    manifest_path = args.dataset / "manifest.json"
    if manifest_path.is_file():
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        report["grouping"] = manifest.get("grouping")
    corpora = [args.published] if args.published else sorted(PUBLISHED)
    report["published"] = {c: PUBLISHED[c] for c in corpora}

    header = ["", "this dataset", *(f"{c} (published)" for c in corpora)]
    lines = [header, ["---"] * len(header)]
    for label, key in ROWS:
        published = [PUBLISHED[c].get(key) for c in corpora]
        value = str(report[key])
        if key in report["intervals"]:
            value += f" ± {report['intervals'][key]}"
        lines.append([label, value, *("" if p is None else str(p) for p in published)])
    which = f" [{args.split}]" if args.split else ""
    print(
        f"{args.dataset}{which}: {report['questions']} questions, {report['documents']} documents"
    )
    print("(± : half-width of the 95% cluster-bootstrap interval over documents, in points;")
    print(" baselines: expected accuracy when ties are broken at random)")
    for line in lines:
        print("| " + " | ".join(line) + " |")
    first = ", ".join(f"{k} {v}" for k, v in report["first_occurrence"].items())
    print(f"baselines with ties broken by first occurrence: {first}")
    if report["related_kinds"]:
        kinds = ", ".join(f"{k} {n}" for k, n in report["related_kinds"].items())
        print(f"related second markers by kind: {kinds}")
    if args.adjacent:
        report["adjacent"] = adjacent_report(examples)
        _print_adjacent(report["adjacent"])
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    return 0


def _print_adjacent(adjacent: dict) -> None:
    """The answers beside another marker: the share, the counts by kind, then each one."""
    print(
        f"answer's marker beside another marker: {adjacent['adjacent_marker']}% "
        f"± {adjacent['interval']} of {adjacent['questions']} questions"
    )
    print("by kind: " + ", ".join(f"{k} {n}" for k, n in adjacent["kinds"].items()))
    for pair in adjacent["pairs"]:
        left, right = pair["left"], pair["right"]
        left, right = (f"*{left}*", right) if pair["answer_left"] else (left, f"*{right}*")
        print(f"  {pair['example']}  {left} | {right}  [{pair['kind']}]  ... {pair['context']} ...")


if __name__ == "__main__":
    sys.exit(main())
