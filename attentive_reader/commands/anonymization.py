"""``attentive-reader anonymization``: how good is a preprocessed dataset's anonymization?

Reads a dataset made by ``attentive-reader preprocess`` (all its splits, or ``--split``) and
prints the non-neural baselines, entities and questions per document, the share of probably
split entities and of queries naming a context entity, beside the published CNN and Daily Mail
figures; ``--adjacent`` lists the answers whose marker stands beside another marker.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from attentive_reader.common.errors import UserError
from attentive_reader.common.faults import writing
from attentive_reader.corpus.records import SPLITS
from attentive_reader.eval.anonymization import PUBLISHED

ROWS = (
    ("maximum frequency (%)", "maximum_frequency"),
    ("exclusive frequency (%)", "exclusive_frequency"),
    ("word distance (%)", "word_distance"),
    ("entities per document", "entities_per_document"),
    ("questions per document", "questions_per_document"),
    ("answer has a related second marker (%)", "related_second_marker"),
    ("queries with a plain entity name (%)", "plain_name_queries"),
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="attentive-reader anonymization",
        description=(
            "The anonymization report of a preprocessed dataset: the non-neural baselines, "
            "entities and questions per document, probably split entities and queries that "
            "name a context entity, beside the published CNN and Daily Mail figures."
        ),
    )
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
        "--split", choices=SPLITS, default=None, help="only this split (default: every split)"
    )
    parser.add_argument(
        "--adjacent",
        action="store_true",
        help="also list the answers whose marker stands directly beside another marker",
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    return parser


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if not (args.dataset / "dataset_dict.json").is_file():
        raise UserError(
            f"{args.dataset} is not a preprocessed dataset (no dataset_dict.json); "
            "make one with 'attentive-reader preprocess'"
        )
    if args.json is None:
        return _report(args)
    with writing(args.json, "anonymization"):
        return _report(args)


def _report(args: argparse.Namespace) -> int:
    import datasets  # after the argument checks: a mistake is told without the heavy imports

    from attentive_reader.corpus.records import ClozeExample
    from attentive_reader.eval.adjacent import adjacent_report
    from attentive_reader.eval.anonymization import anonymization_report

    loaded = datasets.load_from_disk(str(args.dataset))
    splits = [args.split] if args.split else list(loaded)
    missing = [split for split in splits if split not in loaded]
    if missing:
        raise UserError(f"{args.dataset} has no {missing[0]} split (it has {', '.join(loaded)})")
    examples = [ClozeExample.from_row(row) for split in splits for row in loaded[split]]
    if not examples:
        raise UserError(f"{args.dataset} holds no questions in {', '.join(splits)}")
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
