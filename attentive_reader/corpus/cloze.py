"""Highlights -> anonymized cloze examples (pure and deterministic).

For one story, ``make_examples``:

1. skips the story (``Skip(reason="too_long")``) when its article has more than
   ``max_context_tokens`` tokens, counted as spaCy tokens of the raw article without
   whitespace tokens, i.e. *before* anonymization (so the cap depends on the tokenizer only
   and a driver may apply it before running NER);
2. finds the article's entities (``entities.find_mentions`` + ``grouping.group_mentions``),
   or skips the story (``"no_entities"``) when there is none. Their names found elsewhere in the
   article where NER missed them (``aliases.find_aliases``, the same matching as for
   highlights in 3) are mentions too, so a name is anonymized everywhere. Markers follow
   the first occurrence in the article, and the context is the anonymized article;
3. finds entities in each highlight by matching the article's entity names
   (``aliases.alias_table``: every surface form and the unambiguous trailing sub-spans of
   person names), case-insensitively, longest match first. When the highlight Docs went
   through NER too, their entities that match no article entity become extra entities,
   numbered after the article's (they can never be answered from the context);
4. makes one example per entity occurrence in a highlight: the query is the anonymized
   highlight with that occurrence replaced by ``@placeholder`` (other occurrences keep
   their markers), the answer is its marker, the candidates are the distinct markers of
   the context by first occurrence, and the entity map covers the markers of the context
   and the query. With ``require_answer_in_context`` (the default) an occurrence whose
   entity is not in the context gives no example;
5. skips the story (``"no_questions"``) when no highlight gives an example.

Example ids are ``<story id>_<highlight index>_<occurrence index>`` (indices from 0, the
occurrence counted among all entity occurrences of that highlight), with characters outside
``[A-Za-z0-9_.-]`` of the story id replaced by ``-`` so that ids are safe file names.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from spacy.tokens import Doc

from attentive_reader.common.checks import check_positive_or_none
from attentive_reader.common.markers import entity_marker, is_entity_marker
from attentive_reader.corpus.aliases import Alias, alias_table, find_aliases
from attentive_reader.corpus.anonymize import (
    EntitySpan,
    anonymize,
    assign_markers,
    entity_map,
    is_whitespace,
    normalize_name,
)
from attentive_reader.corpus.entities import DEFAULT_LABELS, Entity, Key, find_mentions
from attentive_reader.corpus.grouping import group_mentions
from attentive_reader.corpus.records import ClozeExample, Skip, Story, safe_id


@dataclass(frozen=True)
class ClozeOptions:
    """How stories become cloze examples (defaults as in the DeepMind data).

    Attributes:
        labels: the spaCy NER labels that count as entities (default: names, not dates or
            numbers).
        lowercase: lowercase the context and query words (markers never are; the entity map
            keeps the original case).
        max_context_tokens: skip stories whose article has more tokens than this (spaCy
            tokens, whitespace excluded, before anonymization); ``None`` for no cap.
        require_answer_in_context: make no example whose answer is not in the context.
    """

    labels: tuple[str, ...] = DEFAULT_LABELS
    lowercase: bool = True
    max_context_tokens: int | None = 2000
    require_answer_in_context: bool = True

    def __post_init__(self) -> None:
        if isinstance(self.labels, str) or not all(isinstance(x, str) for x in self.labels):
            raise ValueError(
                f"labels must be a sequence of spaCy label names such as ('PERSON', 'ORG'), "
                f"got {self.labels!r}"
            )
        if not self.labels:
            raise ValueError("labels is empty: give at least one spaCy NER label, e.g. PERSON")
        object.__setattr__(self, "labels", tuple(self.labels))
        check_positive_or_none(max_context_tokens=self.max_context_tokens)  # None: no cap


def count_tokens(doc: Doc) -> int:
    """The length that ``max_context_tokens`` caps: tokens that are not whitespace."""
    return sum(1 for token in doc if not is_whitespace(token.text))


def make_examples(
    story: Story,
    article_doc: Doc,
    highlight_docs: Sequence[Doc],
    options: ClozeOptions | None = None,
) -> list[ClozeExample] | Skip:
    """The cloze examples of one story (rules in the module docstring).

    Args:
        story: the story (its id, url and source name the examples and skips).
        article_doc: the article after the NER pipeline.
        highlight_docs: one Doc per highlight, in order; tokenizer-only Docs
            (``nlp.make_doc``) are enough, Docs with entities add highlight-only entities.
        options: the options; ``ClozeOptions()`` when ``None``.

    Returns:
        The examples (at least one), or a ``Skip`` with reason ``too_long``,
        ``no_entities`` or ``no_questions``.

    Raises:
        ValueError: ``highlight_docs`` does not have one Doc per highlight of ``story``.
    """
    options = options or ClozeOptions()
    if len(highlight_docs) != len(story.highlights):
        raise ValueError(
            f"story {story.id}: got {len(highlight_docs)} highlight Docs for "
            f"{len(story.highlights)} highlights; pass one Doc per highlight"
        )
    source = story.source or story.id
    length = count_tokens(article_doc)
    if options.max_context_tokens is not None and length > options.max_context_tokens:
        return Skip(
            source,
            "too_long",
            f"story {story.id}: the article has {length} tokens, over the cap of "
            f"{options.max_context_tokens}",
        )
    entities = group_mentions(find_mentions(article_doc, options.labels))
    if not entities:
        return Skip(
            source,
            "no_entities",
            f"story {story.id}: the article has no entity with a label among "
            f"{', '.join(options.labels)}",
        )
    article = _anonymized_article(article_doc, entities, options)
    highlight_spans = _highlight_entities(highlight_docs, article, len(entities), options)
    examples = _examples(story, highlight_docs, highlight_spans, article, options)
    if not examples:
        return Skip(
            source,
            "no_questions",
            f"story {story.id}: no highlight mentions an entity of the article",
        )
    return examples


@dataclass
class _Article:
    """The anonymized article of one story, as the highlights' questions need it.

    Attributes:
        table: the names of its entities (``alias_table``).
        markers: entity id -> marker (the highlights' own entities are added after).
        names: marker -> surface name (likewise).
        context: the anonymized article tokens.
        candidates: the markers in the context, by first occurrence.
    """

    table: dict[Key, Alias]
    markers: dict[int, str]
    names: dict[str, str]
    context: tuple[str, ...]
    candidates: tuple[str, ...]


def _anonymized_article(
    article_doc: Doc, entities: Sequence[Entity], options: ClozeOptions
) -> _Article:
    """The article with every name of its entities replaced by its marker: the NER mentions
    and the names NER missed (``find_aliases``)."""
    table = alias_table(entities)
    ner_spans = [
        EntitySpan(m.start, m.end, entity.id, m.text)
        for entity in entities
        for m in entity.mentions
    ]
    covered = [i for span in ner_spans for i in range(span.start, span.end)]
    article_spans = ner_spans + [
        EntitySpan(start, end, entity, normalize_name(article_doc[start:end].text))
        for start, end, entity in find_aliases(article_doc, table, covered)
    ]
    markers = assign_markers(article_spans)
    context = tuple(
        anonymize(
            [t.text for t in article_doc], article_spans, markers, lowercase=options.lowercase
        )
    )
    candidates = tuple(dict.fromkeys(t for t in context if is_entity_marker(t)))
    return _Article(table, markers, entity_map(ner_spans, markers), context, candidates)


def _highlight_entities(
    highlight_docs: Sequence[Doc], article: _Article, num_entities: int, options: ClozeOptions
) -> list[list[EntitySpan]]:
    """The entity spans of each highlight; an entity only a highlight names gets a marker
    after the article's (and its longest name), in ``article.markers`` / ``names``."""
    markers, names = article.markers, article.names
    extra: dict[Key, int] = {}  # highlight-only entities (NER'd highlights): key -> id
    highlight_spans = []
    for doc in highlight_docs:
        spans = _highlight_spans(doc, article.table, extra, num_entities, options)
        highlight_spans.append(spans)
        for span in spans:
            if span.entity not in markers:
                markers[span.entity] = entity_marker(len(markers))
                names[markers[span.entity]] = ""
            marker = markers[span.entity]
            if span.entity >= num_entities and len(span.text) > len(names[marker]):
                names[marker] = span.text
    return highlight_spans


def _examples(
    story: Story,
    highlight_docs: Sequence[Doc],
    highlight_spans: list[list[EntitySpan]],
    article: _Article,
    options: ClozeOptions,
) -> list[ClozeExample]:
    """One example per entity span of a highlight (whose answer is in the context, unless
    ``require_answer_in_context`` is off), its entity map cut to the markers it uses."""
    in_context = set(article.candidates)
    examples = []
    story_key = safe_id(story.id)
    for h, (doc, spans) in enumerate(zip(highlight_docs, highlight_spans)):
        tokens = [t.text for t in doc]
        for j, span in enumerate(spans):
            answer = article.markers[span.entity]
            if options.require_answer_in_context and answer not in in_context:
                continue
            query = tuple(
                anonymize(
                    tokens, spans, article.markers, lowercase=options.lowercase, placeholder=j
                )
            )
            used = in_context | {t for t in query if is_entity_marker(t)} | {answer}
            examples.append(
                ClozeExample(
                    id=f"{story_key}_{h}_{j}",
                    story_id=story.id,
                    context=article.context,
                    query=query,
                    answer=answer,
                    candidates=article.candidates,
                    entities={m: n for m, n in article.names.items() if m in used},
                    url=story.url,
                )
            )
    return examples


def _highlight_spans(
    doc: Doc,
    table: dict[Key, Alias],
    extra: dict[Key, int],
    first_extra: int,
    options: ClozeOptions,
) -> list[EntitySpan]:
    """Entity spans of one highlight, in order: article names first, then its own NER."""
    spans = [
        EntitySpan(start, end, entity, normalize_name(doc[start:end].text))
        for start, end, entity in find_aliases(doc, table)
    ]
    taken = {i for span in spans for i in range(span.start, span.end)}
    for mention in find_mentions(doc, options.labels):
        if any(i in taken for i in range(mention.start, mention.end)):
            continue
        alias = table.get(mention.key)
        if alias is not None:
            entity = alias.entity
        else:
            entity = extra.setdefault(mention.key, first_extra + len(extra))
        spans.append(EntitySpan(mention.start, mention.end, entity, mention.text))
        taken.update(range(mention.start, mention.end))
    return sorted(spans, key=lambda s: s.start)
