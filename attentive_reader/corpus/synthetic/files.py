"""The synthetic corpus on disk (CNN ``.story`` files and url lists) and its entity ruler."""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from attentive_reader.corpus.records import Story
from attentive_reader.corpus.synthetic.shapes import DEFAULT_SHAPE, StoryShape, SyntheticStory
from attentive_reader.corpus.synthetic.story import generate_corpus
from attentive_reader.corpus.synthetic.words import (
    CITIES,
    COUNTRIES,
    FIRST_NAMES,
    ORG_STEMS,
    ORG_SUFFIXES,
    SURNAMES,
)
from attentive_reader.errors import UserError

if TYPE_CHECKING:
    from spacy.language import Language

GENERATOR_VERSION = 1
URL_LIST_FILES = {"train": "all_train.txt", "validation": "all_val.txt", "test": "all_test.txt"}


def format_story(story: Story) -> str:
    """The CNN ``.story`` text: article paragraphs, then one ``@highlight`` block each."""
    blocks = [story.article]
    for highlight in story.highlights:
        blocks += ["@highlight", highlight]
    return "\n\n".join(blocks) + "\n"


def write_corpus(
    out_dir: str | Path,
    stories: Sequence[SyntheticStory],
    seed: int,
    shape: StoryShape = DEFAULT_SHAPE,
) -> dict:
    """Write ``out_dir/stories/<id>.story``, ``out_dir/url_lists/all_{train,val,test}.txt``
    and ``out_dir/synthetic.json`` (generator version, seed, counts per split, and the shape's
    name when it is not the default).

    The url lists fix the splits for ``attentive-reader preprocess --url-lists``. Existing
    files with the same names are overwritten.

    Returns:
        The contents of ``synthetic.json``.
    """
    out = Path(out_dir)
    (out / "stories").mkdir(parents=True, exist_ok=True)
    (out / "url_lists").mkdir(parents=True, exist_ok=True)
    urls: dict[str, list[str]] = {split: [] for split in URL_LIST_FILES}
    for item in stories:
        story = item.story
        (out / "stories" / f"{story.id}.story").write_text(
            format_story(story), encoding="utf-8", newline="\n"
        )
        urls[story.split or "train"].append(story.url or "")
    for split, name in URL_LIST_FILES.items():
        lines = "".join(url + "\n" for url in urls[split])
        (out / "url_lists" / name).write_text(lines, encoding="utf-8", newline="\n")
    info = {
        # The module path of the generator before it became a package: kept, so that the
        # corpus files stay byte-identical.
        "generator": "attentive_reader.corpus.synthetic",
        "generator_version": GENERATOR_VERSION,
        "seed": seed,
        "stories": len(stories),
        "splits": {split: len(urls[split]) for split in URL_LIST_FILES},
    }
    if shape != DEFAULT_SHAPE:
        info["shape"] = shape.name
    (out / "synthetic.json").write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    return info


def synthesize(
    out_dir: str | Path,
    num_stories: int,
    seed: int = 0,
    shape: StoryShape = DEFAULT_SHAPE,
    *,
    overwrite: bool = False,
) -> dict:
    """Generate and write a whole corpus, as ``attentive-reader synth`` does.

    Writes the files of ``write_corpus`` and ``out_dir/entity_ruler/`` (``build_ruler_pipeline``
    saved with ``to_disk``, usable as ``--spacy-model``).

    Args:
        out_dir: the output folder (created if missing).
        num_stories: how many stories (stories ``0 .. num_stories - 1`` of ``seed``).
        seed: the corpus seed.
        shape: ``DEFAULT_SHAPE`` or ``COMPACT_SHAPE``.
        overwrite: replace the ``.story`` files and entity ruler of an earlier run.

    Returns:
        The contents of ``synthetic.json``.

    Raises:
        UserError: ``out_dir`` is a file, or holds an earlier corpus and not ``overwrite``.
        ValueError: if ``num_stories`` is not positive.
    """
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise UserError(f"{out} exists and is not a folder; choose another OUT_DIR")
    old_stories = sorted((out / "stories").glob("*.story")) if (out / "stories").is_dir() else []
    if old_stories and not overwrite:
        raise UserError(
            f"{out / 'stories'} already holds {len(old_stories)} .story files; pass --overwrite "
            "to replace them or choose another OUT_DIR"
        )
    if (out / "entity_ruler").exists() and not overwrite:
        raise UserError(f"{out / 'entity_ruler'} exists; pass --overwrite to replace it")
    stories = generate_corpus(num_stories, seed, shape)
    for path in old_stories:
        path.unlink()
    shutil.rmtree(out / "entity_ruler", ignore_errors=True)
    info = write_corpus(out, stories, seed, shape)
    build_ruler_pipeline().to_disk(out / "entity_ruler")
    return info


def ruler_patterns() -> list[dict]:
    """Entity ruler patterns for every name the generator can write.

    People: any first name followed by any surname, and a surname alone (later mentions);
    organisations: any stem followed by any suffix; places: each city and country.
    """
    patterns: list[dict] = [
        {
            "label": "PERSON",
            "pattern": [{"ORTH": {"IN": list(FIRST_NAMES)}}, {"ORTH": {"IN": list(SURNAMES)}}],
        },
        {"label": "PERSON", "pattern": [{"ORTH": {"IN": list(SURNAMES)}}]},
        {
            "label": "ORG",
            "pattern": [{"ORTH": {"IN": list(ORG_STEMS)}}, {"ORTH": {"IN": list(ORG_SUFFIXES)}}],
        },
    ]
    for place in CITIES + COUNTRIES:
        patterns.append({"label": "GPE", "pattern": [{"ORTH": word} for word in place.split()]})
    return patterns


def build_ruler_pipeline() -> Language:
    """``spacy.blank("en")`` with an ``entity_ruler`` that tags the generator's names.

    It recognises every name the generator can write (whatever the seed), with the labels
    PERSON, GPE and ORG, including surname-only mentions of people. The demo uses it when no
    statistical spaCy model is installed. The ruler component is named ``ner``.
    """
    import spacy
    from spacy.pipeline import EntityRuler

    nlp = spacy.blank("en")
    # Named "ner" so that the toolkit's NER-only loader (corpus.pipeline.load_pipeline)
    # accepts it, e.g. saved with ``nlp.to_disk(DIR)`` and passed as ``--spacy-model DIR``.
    ruler = nlp.add_pipe("entity_ruler", name="ner")
    assert isinstance(ruler, EntityRuler)
    ruler.add_patterns(ruler_patterns())
    return nlp
