"""Preparing a document and a query for a reader, as the training data was prepared.

The document/query side of ``attentive_reader.api`` (the query's one blank is found by
``common.query.parse_query``, which loads nothing): ``document_text`` normalizes the
article as preprocessing does and drops a ``.story`` text's highlights, ``cut_document``
cuts the article to the training data's context cap and ``cloze_example`` anonymizes the
document and the query with ``corpus.cloze.make_examples`` (the query passed as a highlight,
its blank a token that is no name). ``load_nlp`` loads the spaCy pipeline a checkpoint's
training data was preprocessed with, and warns (``PipelineWarning``) when the installed one
differs.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from pathlib import Path

import spacy
from spacy.language import Language
from spacy.tokens import Doc

from attentive_reader.common.errors import UserError
from attentive_reader.common.markers import PLACEHOLDER
from attentive_reader.common.query import ParsedQuery
from attentive_reader.corpus.anonymize import EntitySpan, anonymize
from attentive_reader.corpus.article import normalize_article
from attentive_reader.corpus.cloze import ClozeOptions, count_tokens, make_examples
from attentive_reader.corpus.entities import find_mentions
from attentive_reader.corpus.pipeline import load_pipeline, pipeline_info
from attentive_reader.corpus.records import ClozeExample, Skip, Story
from attentive_reader.corpus.sources import parse_story

# The blank's token while the query goes through make_examples: never in tokenized text
# (a NUL byte cannot be typed into a query; ``parse_query`` refuses one).
_SENTINEL = "\x00blank\x00"


class PipelineWarning(UserWarning):
    """The installed spaCy pipeline or the options differ from the training data's."""


def document_text(document: str) -> str:
    """The article of a document, normalized as a preprocessed article is
    (``corpus.article.normalize_article``); a ``.story`` text loses its ``@highlight`` blocks.

    Raises:
        UserError: an empty document, or a ``.story`` text with no article before its
            highlights.
    """
    if not isinstance(document, str) or not document.strip():
        raise UserError("the document is empty: give the article's text", code="empty_document")
    if re.search(r"^\s*@highlight\s*$", document, flags=re.MULTILINE):
        # parse_story wants highlight text after the markers; they are dropped anyway.
        story = parse_story(document + "\n@highlight\nx", story_id="document", source="document")
        if isinstance(story, Skip):
            raise UserError(f"the document is a .story text with {story.detail}", code="bad_story")
        return story.article
    return normalize_article(document)


def cut_document(nlp: Language, article: str, cap: int | None) -> tuple[Doc, tuple[str, ...]]:
    """The article's tokenizer Doc, cut to the training data's context cap.

    Args:
        nlp: the NER pipeline (only its tokenizer runs here).
        article: the document's article text.
        cap: the training data's context cap in tokens (``None``: none).

    Returns:
        The Doc (its first ``cap`` tokens) and the notices to show (one when it was cut).
    """
    doc = nlp.make_doc(article)
    length = count_tokens(doc)
    if cap is None or length <= cap:
        return doc, ()
    words = [t.i for t in doc if not t.is_space]
    doc = doc[: words[cap - 1] + 1].as_doc()
    return doc, (
        f"the document has {length} tokens, over the {cap}-token context cap of the "
        f"training data (longer stories were left out of it): only its first {cap} "
        "tokens were read",
    )


def cloze_example(
    nlp: Language, article_doc: Doc, parsed: ParsedQuery, key: str, options: ClozeOptions
) -> ClozeExample:
    """The cloze example of a document (after NER) and a query, as ``preprocess`` makes
    it: the query is a highlight whose blank is a token that is no name.

    Args:
        nlp: the NER pipeline that made ``article_doc``.
        article_doc: the document after NER (``cut_document``, then ``nlp``).
        parsed: the query (``parse_query``).
        key: the example's id.
        options: the training data's cloze options, without a context cap (the document
            was cut to it already).

    Raises:
        UserError: the document has no entity.
    """
    query_doc = _query_doc(nlp, parsed)
    mentions = find_mentions(article_doc, options.labels)
    if not mentions:
        raise UserError(
            "the document has no entity (no name labelled "
            f"{', '.join(options.labels)} by the NER pipeline); a reader answers "
            "with one of the document's entities",
            code="no_entity",
        )
    # A second highlight that surely names an entity, in case the query names none:
    # its example gives the context, candidates and entity map.
    first = mentions[0]
    probes = [
        Doc(nlp.vocab, words=[t.text for t in article_doc[first.start : first.end]]),
        article_doc,
    ]
    sentinel = _SENTINEL.lower() if options.lowercase else _SENTINEL
    for probe in probes:
        story = Story(id=key, article=article_doc.text, highlights=("query", "probe"))
        made = make_examples(story, article_doc, [query_doc, probe], options)
        if isinstance(made, Skip):
            if made.reason == "no_entities":
                raise UserError(f"the document has no entity: {made.detail}", code="no_entity")
            continue
        from_query = [e for e in made if e.id.startswith(f"{key}_0_")]
        if from_query:
            # The query's other names made these examples: in the first, put the name
            # back where its @placeholder is and the @placeholder where the blank is.
            made_query = from_query[0]
            query = list(made_query.query)
            query[query.index(PLACEHOLDER)] = made_query.answer
            query[query.index(sentinel)] = PLACEHOLDER
            entities = made_query.entities
        else:
            # The query names no entity: only its blank becomes a marker.
            blank = [t.i for t in query_doc if t.text == _SENTINEL][0]
            query = anonymize(
                [t.text for t in query_doc],
                [EntitySpan(blank, blank + 1, -1)],
                {-1: PLACEHOLDER},
                lowercase=options.lowercase,
                placeholder=0,
            )
            entities = made[0].entities
        context = made[0].context
        return ClozeExample(
            id=key,
            story_id=key,
            context=context,
            query=tuple(query),
            answer=made[0].candidates[0],
            candidates=made[0].candidates,
            entities={m: n for m, n in entities.items() if m in context or m in query},
        )
    raise UserError(
        "the document's entities could not be matched again; please report it",
        code="unmatched_entities",
    )


def _query_doc(nlp: Language, parsed: ParsedQuery) -> Doc:
    """The query tokenized as a highlight, its blank one token that is no name.

    The text on each side of the blank is tokenized on its own, so the blank's neighbours
    are tokenized as they are around a name (``@placeholder's`` -> blank, ``'s``).
    """
    before = nlp.make_doc(parsed.before.rstrip())
    after = nlp.make_doc(parsed.after.lstrip())
    words = [t.text for t in before] + [_SENTINEL] + [t.text for t in after]
    spaces = [bool(t.whitespace_) for t in before] + [parsed.after[:1].isspace()]
    spaces += [bool(t.whitespace_) for t in after]
    if len(before):
        spaces[len(before) - 1] = parsed.before[-1:].isspace()
    return Doc(nlp.vocab, words=words, spaces=spaces)


def _installed(name: str) -> bool:
    return Path(name).is_dir() or spacy.util.is_package(name)


def _warn(message: str) -> None:
    warnings.warn(message, PipelineWarning, stacklevel=4)


def load_nlp(
    path: Path,
    pipeline: dict | None,
    spacy_model: str | None,
    warn: Callable[[str], None] | None = None,
) -> Language:
    """The NER pipeline for a checkpoint: ``spacy_model`` or the recorded one.

    Args:
        path: the checkpoint, for messages.
        pipeline: its preprocessing identity (``None`` for old checkpoints).
        spacy_model: a pipeline to use instead of the recorded one.
        warn: called with each warning's message (default: a ``PipelineWarning``).

    Raises:
        UserError: the recorded pipeline is not installed, or none is recorded for
            ``.question`` data and ``spacy_model`` is not given.
    """
    warn = warn or _warn
    recorded = None if pipeline is None else pipeline.get("spacy")
    if spacy_model is None:
        if pipeline is not None and recorded is None:
            raise UserError(
                f"{path} was trained on DeepMind .question data, which records no spaCy "
                "pipeline: name the one to anonymize documents with, --spacy-model NAME "
                "(e.g. en_core_web_sm)"
            )
        if pipeline is not None:
            assert recorded is not None
            name = pipeline.get("spacy_model") or recorded["name"]
            if not _installed(name):
                raise UserError(
                    f"the spaCy pipeline {recorded['name']} {recorded['version']} that "
                    f"preprocessed {path}'s training data is not installed: install it "
                    f"(python -m spacy download {recorded['name']}, or pip install "
                    f"{recorded['name'].replace('_', '-')}=={recorded['version']}) or name "
                    "another with --spacy-model"
                )
            spacy_model = name
    if pipeline is None:
        warn(
            f"{path} records no preprocessing identity (trained before it was recorded): "
            "using the default options of preprocess"
            + ("" if spacy_model else " and the installed default spaCy pipeline")
        )
    nlp = load_pipeline(spacy_model)
    if recorded is not None:
        info = pipeline_info(nlp)
        if (info["name"], info["version"]) != (recorded["name"], recorded["version"]):
            warn(
                f"the spaCy pipeline {info['name']} {info['version']} differs from the one "
                f"that preprocessed the training data ({recorded['name']} "
                f"{recorded['version']}): entities may be found differently"
            )
    return nlp
