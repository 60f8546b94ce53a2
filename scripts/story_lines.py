#!/usr/bin/env python
"""What a story's line structure does to its entities: Hugging Face rows read three ways.

A ``.story`` file holds one paragraph per line, and a photo caption or a heading is a line
of its own, most often without a full stop. The reference script of the corpus (See et al.
2017, ``make_datafiles.py``), and the Hugging Face ``cnn_dailymail`` articles made with it,
add ``" ."`` to every line that does not end a sentence and join the lines with spaces; so a
row's lines can be read back: its article split at the ``" . "`` the script added. This
script writes the rows of a Hugging Face file (``article`` and ``highlights`` columns) as
``.story`` files twice, preprocesses the file and both folders, and prints, for each, the
share of answers whose marker stands directly beside another marker
(``eval.adjacent``) and the baselines::

    python scripts/story_lines.py train_sample.csv --work /tmp/story_lines

The three readings:

- ``rows as given``: the file itself (its articles carry the script's full stops);
- ``.story lines``: one paragraph per line, without the script's stops, as a ``.story``
  file of the corpus has them (``preprocess`` adds the stops back:
  ``corpus.article.close_paragraph``);
- ``lines run together``: the same lines joined by spaces into one paragraph, without the
  stops: the shape of a text whose line breaks were lost (the 250 test stories shared with
  this project's tests come so), where a caption runs on into the next sentence.

The ``.story`` folders stay under ``--work`` for other versions of the toolkit to read.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from attentive_reader.corpus.options import PreprocessOptions
from attentive_reader.corpus.preprocess import preprocess
from attentive_reader.corpus.records import ClozeExample, Story, load_dataset
from attentive_reader.corpus.sources import iter_stories
from attentive_reader.corpus.synthetic.files import format_story
from attentive_reader.eval.adjacent import adjacent_report
from attentive_reader.eval.anonymization import anonymization_report

SCRIPT_STOP = " ."


def story_lines(article: str) -> list[str]:
    """The lines of an article the reference script wrote: split at its added stops.

    >>> story_lines("Defeat at Goodison Park . Wayne Rooney waits. He said so .")
    ['Defeat at Goodison Park', 'Wayne Rooney waits. He said so']
    """
    article = article.strip()
    article = article.removesuffix(SCRIPT_STOP)
    return [line.strip() for line in article.split(SCRIPT_STOP + " ") if line.strip()]


def write_stories(source: str, work: Path) -> tuple[Path, Path]:
    """Write the rows of ``source`` as ``.story`` files: ``lines/`` and ``run_together/``."""
    lines_dir, flat_dir = work / "lines", work / "run_together"
    for folder in (lines_dir, flat_dir):
        folder.mkdir(parents=True, exist_ok=True)
    for story in iter_stories(source):
        if not isinstance(story, Story):
            continue
        lines = story_lines(story.article)
        name = f"{story.id}.story"
        for folder, article in ((lines_dir, "\n\n".join(lines)), (flat_dir, " ".join(lines))):
            text = format_story(replace(story, article=article))
            (folder / name).write_text(text, encoding="utf-8")
    return lines_dir, flat_dir


def figures(inputs: list[str], out: Path, model: str | None) -> dict:
    """Preprocess ``inputs`` (every story in the train split) and report on the result."""
    options = PreprocessOptions(
        spacy_model=model, split_fractions=(1.0, 0.0, 0.0), overwrite=True, num_proc=1
    )
    preprocess(inputs, out, options, progress=False)
    examples = [ClozeExample.from_row(row) for row in load_dataset(out)["train"]]
    report = anonymization_report(examples)
    report["adjacent"] = adjacent_report(examples)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("source", help="a Hugging Face csv/json/jsonl/parquet file")
    parser.add_argument("--work", type=Path, required=True, help="folder for the readings")
    parser.add_argument("--spacy-model", default=None, help="as for preprocess")
    args = parser.parse_args(argv)
    lines_dir, flat_dir = write_stories(args.source, args.work)
    readings = [
        ("rows as given", [args.source], args.work / "out_rows"),
        (".story lines", [str(lines_dir)], args.work / "out_lines"),
        ("lines run together", [str(flat_dir)], args.work / "out_run_together"),
    ]
    print(
        "| reading | questions | answer beside another marker | max frequency "
        "| exclusive frequency | word distance | entities / doc |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, inputs, out in readings:
        r = figures(inputs, out, args.spacy_model)
        a = r["adjacent"]
        i = r["intervals"]
        print(
            f"| {name} | {r['questions']} | {len(a['pairs'])} ({a['adjacent_marker']}% "
            f"± {a['interval']}) | {r['maximum_frequency']} ± {i['maximum_frequency']} "
            f"| {r['exclusive_frequency']} ± {i['exclusive_frequency']} "
            f"| {r['word_distance']} ± {i['word_distance']} | {r['entities_per_document']} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
