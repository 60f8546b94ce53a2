"""spaCy pipelines for the corpus tests: ``spacy.blank("en")`` with an ``entity_ruler``, so no
model is downloaded, and the grouping of the mentions they find.

``ruler`` for the entity, grouping and cloze tests; ``save_pipeline``, ``preprocess_options``
and ``dataset_rows`` for the preprocessing tests, which name the saved folder with
``--spacy-model``.
"""

from __future__ import annotations

import time
from pathlib import Path

import datasets
import spacy
from spacy.language import Language
from spacy.tokens import Doc, Span

from attentive_reader.corpus import entities as ent
from attentive_reader.corpus.entities import find_mentions
from attentive_reader.corpus.grouping import group_mentions
from attentive_reader.corpus.pipeline import split_glued_parentheses
from attentive_reader.corpus.preprocess import PreprocessOptions
from attentive_reader.corpus.records import SPLITS

LABELS = ent.DEFAULT_LABELS

# The names of the preprocessing tests' stories (``fixtures.write_corpus``) and their labels.
PEOPLE = ["Alice Smith", "Bob Jones", "Carol White", "Dan Brown", "Eve Black"]
PLACES = ["Paris", "Berlin", "Madrid", "Rome"]
ORGS = ["Acme Corp", "Globex"]


def ruler(*patterns: tuple[str, str | list[dict]], split_glued: bool = False) -> Language:
    """A blank English pipeline whose entity_ruler tags the given (label, pattern) pairs;
    with ``split_glued``, tokenized as ``load_pipeline`` does (``split_glued_parentheses``)."""
    nlp = spacy.blank("en")
    if split_glued:
        nlp = split_glued_parentheses(nlp)
    nlp.add_pipe("entity_ruler").add_patterns(
        [{"label": label, "pattern": pattern} for label, pattern in patterns]
    )
    return nlp


def groups(nlp: Language, text: str) -> list[list[str]]:
    """The entities of ``text`` as lists of their mention texts, in entity order."""
    return [[m.text for m in e.mentions] for e in group_mentions(find_mentions(nlp(text), LABELS))]


def labelled_groups(text: str, spans: list[tuple[int, int, str]]) -> list[list[str]]:
    """Groups of a whitespace-tokenized text whose entities are given as token spans."""
    doc = Doc(spacy.blank("en").vocab, words=text.split())
    doc.ents = [Span(doc, start, end, label=label) for start, end, label in spans]
    return [[m.text for m in e.mentions] for e in group_mentions(find_mentions(doc, LABELS))]


def corpus_patterns() -> list[dict]:
    """The entity_ruler patterns of ``PEOPLE``, ``PLACES`` and ``ORGS``."""
    patterns = [{"label": "PERSON", "pattern": name} for name in PEOPLE]
    patterns += [{"label": "GPE", "pattern": name} for name in PLACES]
    patterns += [{"label": "ORG", "pattern": name} for name in ORGS]
    return patterns


@Language.component("test_slow_down")
def _slow_down(doc):  # lets the resume test kill a run in the middle
    # ~0.45 s a shard: a test process descheduled for a while on a loaded machine still
    # sends its signal long before the last of the 12 shards is done.
    time.sleep(0.15)
    return doc


def save_pipeline(path: Path, *, slow: bool = False) -> str:
    """Save the ``corpus_patterns`` ruler (named ``ner``) to ``path``; ``slow`` adds
    ``test_slow_down`` (0.15 s a story)."""
    nlp = spacy.blank("en")
    nlp.add_pipe("entity_ruler", name="ner").add_patterns(corpus_patterns())
    if slow:
        nlp.add_pipe("test_slow_down")
    nlp.to_disk(path)
    return str(path)


def preprocess_options(model: str | None, **overrides) -> PreprocessOptions:
    """The preprocessing tests' options: ``model``, a cap of 200 tokens, shards of 4 stories."""
    values = {"spacy_model": model, "max_context_tokens": 200, "shard_size": 4}
    return PreprocessOptions(**{**values, **overrides})


def dataset_rows(directory: Path) -> dict[str, list[dict]]:
    """Each split's rows of the processed dataset in ``directory``, in order."""
    loaded = datasets.load_from_disk(str(directory))
    return {split: loaded[split].to_list() for split in SPLITS}
