"""The synthetic corpus on disk (CNN ``.story`` files, url lists, the ``synthetic.json`` mark)
and its entity ruler; ``synthetic_origin`` recognises it among preprocessing inputs."""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from attentive_reader.common.errors import UserError
from attentive_reader.corpus.records import Story
from attentive_reader.corpus.sources.inputs import split_input
from attentive_reader.corpus.synthetic.shapes import (
    DEFAULT_SHAPE,
    URL_PREFIX,
    StoryShape,
    SyntheticStory,
)
from attentive_reader.corpus.synthetic.story import generate_corpus
from attentive_reader.corpus.synthetic.words import (
    CITIES,
    COUNTRIES,
    FIRST_NAMES,
    ORG_STEMS,
    ORG_SUFFIXES,
    SURNAMES,
)

if TYPE_CHECKING:
    from spacy.language import Language

GENERATOR_VERSION = 1
URL_LIST_FILES = {"train": "all_train.txt", "validation": "all_val.txt", "test": "all_test.txt"}
# What ``write_corpus`` writes beside ``stories/`` and ``url_lists/``: the corpus's mark.
MARKER_FILE = "synthetic.json"
# The module path of the generator before it became a package: kept in the mark, so that the
# corpus files stay byte-identical.
GENERATOR = "attentive_reader.corpus.synthetic"


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
        "generator": GENERATOR,
        "generator_version": GENERATOR_VERSION,
        "seed": seed,
        "stories": len(stories),
        "splits": {split: len(urls[split]) for split in URL_LIST_FILES},
    }
    if shape != DEFAULT_SHAPE:
        info["shape"] = shape.name
    (out / MARKER_FILE).write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    return info


def synthetic_origin(inputs: Sequence[str], url_lists: str | None = None) -> dict | None:
    """The mark of the built-in synthetic corpus that preprocessing ``inputs`` come from, or
    ``None`` when nothing says they do.

    ``write_corpus`` (``attentive-reader synth``, the demo) writes ``OUT_DIR/synthetic.json``
    beside ``OUT_DIR/stories/`` and ``OUT_DIR/url_lists/``: an input folder (or the folder of
    an input file) holding that mark, or whose parent holds it, is the synthetic corpus, and so
    is the url-list folder or its parent. Url lists whose urls are the generator's made-up ones
    (``URL_PREFIX``) say so too, when the mark was not copied along.

    Args:
        inputs: the inputs as given to ``preprocess`` (``SPLIT=`` prefixes allowed; hub names
            and missing paths are passed over).
        url_lists: the ``--url-lists`` folder or file, if any.

    Returns:
        The mark's content (generator, version, seed, counts), with ``"found"`` saying where
        it was found; ``None`` for any other corpus.
    """
    folders: list[Path] = []
    for item in [*inputs, *([url_lists] if url_lists else [])]:
        path = Path(split_input(item)[1])
        if path.exists():
            folder = path if path.is_dir() else path.parent
            folders += [folder, folder.parent]
    for folder in folders:
        mark = _read_mark(folder / MARKER_FILE)
        if mark is not None:
            return {**mark, "found": str((folder / MARKER_FILE).resolve())}
    if url_lists and _has_generated_urls(Path(url_lists)):
        return {"generator": GENERATOR, "found": f"the urls of {Path(url_lists).resolve()}"}
    return None


def _read_mark(path: Path) -> dict | None:
    try:
        mark = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return mark if isinstance(mark, dict) and mark.get("generator") == GENERATOR else None


def _has_generated_urls(url_lists: Path) -> bool:
    """Whether the first url of a url-list file (or of any ``.txt`` in the folder) is one of
    the generator's."""
    files = sorted(url_lists.glob("*.txt")) if url_lists.is_dir() else [url_lists]
    for path in files:
        try:
            with path.open(encoding="utf-8", errors="replace") as handle:
                first = next((line.strip() for line in handle if line.strip()), "")
        except OSError:
            continue
        if first.startswith(URL_PREFIX + "/"):
            return True
    return False


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
        shape: ``DEFAULT_SHAPE``, ``COMPACT_SHAPE`` or ``LONG_SHAPE``.
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
