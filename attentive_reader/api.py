"""Ask a trained reader about any document: ``Reader`` and ``Answer``.

A reader only makes sense on text anonymized the way its training data was, so a checkpoint
carries its dataset's preprocessing identity (``corpus.manifest.preprocessing_identity``:
the spaCy pipeline, the NER labels, lowercasing, the context cap). ``Reader.load`` loads the
same pipeline, and ``Reader.answer(document, query)``:

1. reads the document (a ``.story`` text loses its highlights) and cuts it to the context
   cap of the training data (the stories over it were skipped there), with a notice;
2. runs NER exactly as ``preprocess`` does and makes the cloze example with
   ``corpus.cloze.make_examples``: the query, written with real names and one blank
   (``@placeholder``, ``___`` or ``XXX``), is passed as a highlight, so its names are
   anonymized with the document's own entity grouping ("Obama" is the article's "Barack
   Obama") and the blank becomes ``@placeholder``;
3. encodes the example with the checkpoint's vocabulary and reads the reader's ranked
   candidates, attention and (hard attention) selected positions.

Example::

    from attentive_reader import Reader

    reader = Reader.load("reader.ckpt")
    answer = reader.answer(open("article.txt").read(), "@placeholder signed the deal")
    print(answer.filled, answer.prediction.probability)
"""

from __future__ import annotations

import dataclasses
import re
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import spacy
import torch
from spacy.language import Language
from spacy.tokens import Doc

from attentive_reader.corpus.anonymize import EntitySpan, anonymize
from attentive_reader.corpus.cloze import ClozeOptions, count_tokens, make_examples
from attentive_reader.corpus.entities import (
    DEFAULT_LABELS,
    find_mentions,
    load_pipeline,
    pipeline_info,
)
from attentive_reader.corpus.records import PLACEHOLDER, ClozeExample, Skip, Story, entity_index
from attentive_reader.corpus.sources import parse_story
from attentive_reader.data.batching import EncodedExample, collate
from attentive_reader.data.vocab import EntityOutOfRange, Vocabulary
from attentive_reader.errors import UserError
from attentive_reader.eval.inference import DeviceName, resolve_device
from attentive_reader.models.base import ClozeReader
from attentive_reader.models.loading import load_reader
from attentive_reader.viz.heatmap import HeatmapExample, heatmap_examples

# How a query may write its one blank: the DeepMind marker, three or more underscores, XXX.
BLANK = re.compile(r"@placeholder|_{3,}|\bXXX\b")
# The blank's token while the query goes through make_examples: never in tokenized text
# (a NUL byte cannot be typed into a query; ``parse_query`` refuses one).
_SENTINEL = "\x00blank\x00"
OnError = Literal["raise", "return"]


class PipelineWarning(UserWarning):
    """The installed spaCy pipeline or the options differ from the training data's."""


@dataclass(frozen=True)
class Candidate:
    """One possible answer.

    Attributes:
        marker: the entity marker (``@entity3``).
        name: the entity's real name in the document.
        probability: the reader's probability for it.
    """

    marker: str
    name: str
    probability: float


@dataclass(frozen=True)
class Answer:
    """What a reader answered about one document and query.

    Attributes:
        id: a name for the question (``document`` for ``answer``, the example id for a stored
            example).
        query: the query as given (real names, one blank).
        filled: the query with the blank replaced by the predicted entity's name.
        candidates: every entity of the document, most probable first.
        context: the anonymized document tokens the reader read (after any truncation).
        question: the anonymized query tokens, with ``@placeholder``.
        entities: marker -> real name, for every marker in ``context`` and ``question``.
        attention: the reader's weights over ``context``: one weight per token, one row per
            query token (Impatient Reader), or ``None`` (no attention, e.g. Deep LSTM).
        selected: the context positions a hard-attention reader selected (else empty).
        context_length: the anonymized document's length before the vocabulary's cap.
        notices: what the reader should know (a truncated document, ...).
    """

    id: str
    query: str
    filled: str
    candidates: tuple[Candidate, ...]
    context: tuple[str, ...]
    question: tuple[str, ...]
    entities: dict[str, str] = field(default_factory=dict)
    attention: tuple[float, ...] | tuple[tuple[float, ...], ...] | None = None
    selected: tuple[int, ...] = ()
    context_length: int = 0
    notices: tuple[str, ...] = ()

    @property
    def prediction(self) -> Candidate:
        """The most probable candidate."""
        return self.candidates[0]

    def to_json(self, top: int | None = None) -> dict[str, Any]:
        """The answer as JSON (``top``: only the ``top`` most probable candidates)."""
        shown = self.candidates if top is None else self.candidates[:top]
        return {
            "id": self.id,
            "query": self.query,
            "filled": self.filled,
            "prediction": dataclasses.asdict(self.prediction),
            "candidates": [dataclasses.asdict(c) for c in shown],
            "notices": list(self.notices),
        }

    def heatmap(self, model: str = "") -> HeatmapExample:
        """The answer as the heatmap pages' plain data (``viz.heatmap.render_html``).

        A document has no gold answer: the page shows the prediction without a verdict.
        """
        probabilities = {c.marker: c.probability for c in self.candidates}
        return HeatmapExample(
            id=self.id,
            context=self.context,
            query=self.question,
            answer=None,
            prediction=self.prediction.marker,
            probabilities=probabilities,
            candidates=tuple(sorted(probabilities, key=entity_index)),
            entities=dict(self.entities),
            attention=self.attention,
            selected=self.selected,
            context_length=max(self.context_length, len(self.context)),
            model=model,
        )


@dataclass(frozen=True)
class ParsedQuery:
    """A query split at its one blank.

    Attributes:
        text: the query as given.
        before: the text before the blank.
        after: the text after it.
    """

    text: str
    before: str
    after: str

    def filled(self, name: str) -> str:
        """The query with ``name`` in the blank."""
        return f"{self.before}{name}{self.after}"


def parse_query(query: str) -> ParsedQuery:
    """Find the one blank (``@placeholder``, ``___`` or ``XXX``) of a query.

    Raises:
        UserError: no blank, more than one, or an empty query.
    """
    if not isinstance(query, str) or not query.strip():
        raise UserError("the query is empty: write a sentence with one blank (@placeholder)")
    if "\x00" in query:
        raise UserError("the query holds a NUL character; remove it")
    blanks = list(BLANK.finditer(query))
    if not blanks:
        raise UserError(
            f"the query {_short(query)!r} has no blank: write @placeholder (or ___ or XXX) "
            "where the answer goes"
        )
    if len(blanks) > 1:
        shown = ", ".join(repr(b.group()) for b in blanks)
        raise UserError(
            f"the query {_short(query)!r} has {len(blanks)} blanks ({shown}); a cloze query "
            "has exactly one"
        )
    blank = blanks[0]
    return ParsedQuery(query, query[: blank.start()], query[blank.end() :])


def document_text(document: str) -> str:
    """The article of a document: a ``.story`` text loses its ``@highlight`` blocks.

    Raises:
        UserError: an empty document, or a ``.story`` text with no article before its
            highlights.
    """
    if not isinstance(document, str) or not document.strip():
        raise UserError("the document is empty: give the article's text")
    if re.search(r"^\s*@highlight\s*$", document, flags=re.MULTILINE):
        # parse_story wants highlight text after the markers; they are dropped anyway.
        story = parse_story(document + "\n@highlight\nx", story_id="document", source="document")
        if isinstance(story, Skip):
            raise UserError(f"the document is a .story text with {story.detail}")
        return story.article
    return document


def _short(text: str, size: int = 60) -> str:
    return text if len(text) <= size else text[: size - 3] + "..."


@dataclass(frozen=True)
class _Prepared:
    """A question anonymized and encoded, ready for the reader."""

    example: ClozeExample
    encoded: EncodedExample
    filled: ParsedQuery | None
    notices: tuple[str, ...]


class Reader:
    """A trained reader that answers cloze queries about raw documents.

    Build one with ``Reader.load``. Attributes are read-only by convention.

    Args:
        model: the reader, in eval mode.
        vocab: its vocabulary (from the checkpoint).
        nlp: the spaCy NER pipeline (``corpus.entities.load_pipeline``).
        options: how stories become cloze examples (labels, lowercasing, the document cap).
        max_encoded_tokens: the data module's cap on the anonymized context (``None``: none).
        pipeline: the checkpoint's preprocessing identity (``None`` for old checkpoints).
        path: the checkpoint, for messages and page headers.
        batch_size: examples per forward pass in ``answer_many``.
    """

    def __init__(
        self,
        model: ClozeReader,
        vocab: Vocabulary,
        nlp: Language,
        options: ClozeOptions,
        *,
        max_encoded_tokens: int | None = None,
        pipeline: dict | None = None,
        path: str = "",
        batch_size: int = 32,
    ) -> None:
        if vocab.num_entities != model.num_entities:
            raise UserError(
                f"{path}: the reader has {model.num_entities} entity ids but its vocabulary "
                f"has {vocab.num_entities}; the checkpoint is inconsistent"
            )
        if batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        self.model = model.eval()
        self.vocab = vocab
        self.nlp = nlp
        self.options = options
        self.max_encoded_tokens = max_encoded_tokens
        self.pipeline = pipeline
        self.path = path
        self.batch_size = batch_size
        # make_examples caps nothing here: a long document is cut to the cap instead.
        self._cloze = dataclasses.replace(options, max_context_tokens=None)

    @classmethod
    def load(
        cls,
        ckpt: str | Path,
        *,
        spacy_model: str | None = None,
        device: DeviceName | str = "cpu",
        batch_size: int = 32,
        warn: Callable[[str], None] | None = None,
    ) -> Reader:
        """Load a checkpoint and the spaCy pipeline its training data was preprocessed with.

        Args:
            ckpt: a reader checkpoint trained with ``ClozeDataModule``.
            spacy_model: a spaCy pipeline (name or directory) to use instead of the recorded
                one; needed for checkpoints trained on DeepMind ``.question`` data.
            device: ``cpu``, ``cuda``, ``cuda:N`` or ``auto``.
            batch_size: examples per forward pass in ``answer_many``.
            warn: called with each pipeline warning's message instead of issuing a
                ``PipelineWarning`` (the commands print it in one line).

        Raises:
            UserError: a missing or unreadable checkpoint, or a pipeline that is not
                installed.

        Warns:
            PipelineWarning: the installed pipeline differs from the recorded one, or the
                checkpoint records none (trained before the identity was recorded).
        """
        path = Path(ckpt)
        where = resolve_device(device)
        model = load_reader(path, map_location=where)
        checkpoint = torch.load(path, map_location="cpu", weights_only=True)
        state = _datamodule_state(checkpoint)
        if state is None:
            raise UserError(
                f"{path} holds no vocabulary (it was not trained with ClozeDataModule); "
                "Reader.load needs a checkpoint written by 'attentive-reader fit'"
            )
        vocab = Vocabulary.from_dict(state["vocab"])
        pipeline = state.get("pipeline")
        arguments = checkpoint.get("datamodule_hyper_parameters") or {}
        nlp = _load_nlp(path, pipeline, spacy_model, warn or _warn)
        if pipeline is None:
            options = ClozeOptions()
        else:
            options = ClozeOptions(
                labels=tuple(pipeline.get("labels") or DEFAULT_LABELS),
                lowercase=bool(pipeline.get("lowercase", True)),
                max_context_tokens=pipeline.get("max_context_tokens"),
            )
        return cls(
            model,
            vocab,
            nlp,
            options,
            max_encoded_tokens=arguments.get("max_context_tokens"),
            pipeline=pipeline,
            path=str(path),
            batch_size=batch_size,
        )

    # --- answering -----------------------------------------------------------------------

    def answer(self, document: str, query: str) -> Answer:
        """Answer one cloze query about one document.

        Args:
            document: the raw article text (a ``.story`` text also works).
            query: a sentence with real names and one blank (``@placeholder``, ``___`` or
                ``XXX``).

        Raises:
            UserError: an empty document, a query without exactly one blank, a document
                without an entity, or more entities than the reader's answer space.
        """
        (result,) = self.answer_many([(document, query)])
        assert isinstance(result, Answer)  # errors="raise": a bad pair has raised
        return result

    def answer_many(
        self,
        pairs: Iterable[tuple[str, str]],
        *,
        errors: OnError = "raise",
    ) -> list[Answer | UserError]:
        """Answer many ``(document, query)`` pairs: NER with ``nlp.pipe``, the reader in
        batches of ``batch_size``.

        Args:
            pairs: ``(document, query)`` pairs.
            errors: ``raise`` the first bad pair's ``UserError``, or ``return`` it in that
                pair's place and answer the others.
        """
        if errors not in ("raise", "return"):
            raise ValueError(f"errors must be 'raise' or 'return', got {errors!r}")
        prepared = self._prepare_all(list(pairs))
        results: list[Answer | UserError | None] = [None] * len(prepared)
        pending: list[tuple[int, _Prepared]] = []
        for index, item in enumerate(prepared):
            if isinstance(item, UserError):
                if errors == "raise":
                    raise item
                results[index] = item
            else:
                pending.append((index, item))
        for start in range(0, len(pending), self.batch_size):
            chunk = pending[start : start + self.batch_size]
            for (index, _), answer in zip(chunk, self._predict([p for _, p in chunk])):
                results[index] = answer
        return [result for result in results if result is not None]

    def answer_example(self, example: ClozeExample) -> Answer:
        """Answer a stored (already anonymized) example, e.g. a row of a processed dataset."""
        return self._predict([_Prepared(example, self._encode(example), None, ())])[0]

    # --- internals -----------------------------------------------------------------------

    def _prepare_all(self, pairs: Sequence[tuple[str, str]]) -> list[_Prepared | UserError]:
        """Anonymize every pair (NER through one ``nlp.pipe``)."""
        staged: list[tuple[ParsedQuery, Doc, tuple[str, ...]] | UserError] = []
        for document, query in pairs:
            try:
                parsed = parse_query(query)
                staged.append((parsed, *self._cut(document_text(document))))
            except UserError as error:
                staged.append(error)
        docs: Iterator[Doc] = self.nlp.pipe(
            (item[1] for item in staged if not isinstance(item, UserError)),
            batch_size=self.batch_size,
        )
        out: list[_Prepared | UserError] = []
        for number, item in enumerate(staged):
            if isinstance(item, UserError):
                out.append(item)
                continue
            parsed, _, notices = item
            try:
                example = self._example(next(docs), parsed, f"q{number}")
                out.append(_Prepared(example, self._encode(example), parsed, notices))
            except UserError as error:
                out.append(error)
        return out

    def _cut(self, article: str) -> tuple[Doc, tuple[str, ...]]:
        """The article's tokenizer Doc, cut to the training data's context cap."""
        doc = self.nlp.make_doc(article)
        cap = self.options.max_context_tokens
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

    def _example(self, article_doc: Doc, parsed: ParsedQuery, key: str) -> ClozeExample:
        """The cloze example of a document (after NER) and a query, as ``preprocess`` makes
        it: the query is a highlight whose blank is a token that is no name."""
        query_doc = _query_doc(self.nlp, parsed)
        mentions = find_mentions(article_doc, self.options.labels)
        if not mentions:
            raise UserError(
                "the document has no entity (no name labelled "
                f"{', '.join(self.options.labels)} by the NER pipeline); a reader answers "
                "with one of the document's entities"
            )
        # A second highlight that surely names an entity, in case the query names none:
        # its example gives the context, candidates and entity map.
        first = mentions[0]
        probes = [
            Doc(self.nlp.vocab, words=[t.text for t in article_doc[first.start : first.end]]),
            article_doc,
        ]
        sentinel = _SENTINEL.lower() if self.options.lowercase else _SENTINEL
        for probe in probes:
            story = Story(id=key, article=article_doc.text, highlights=("query", "probe"))
            made = make_examples(story, article_doc, [query_doc, probe], self._cloze)
            if isinstance(made, Skip):
                if made.reason == "no_entities":
                    raise UserError(f"the document has no entity: {made.detail}")
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
                    lowercase=self.options.lowercase,
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
        raise UserError("the document's entities could not be matched again; please report it")

    def _encode(self, example: ClozeExample) -> EncodedExample:
        """The example as ids (``UserError`` when its entities overflow the answer space)."""
        try:
            context = self.vocab.encode(example.context)
            query = self.vocab.encode(example.query)
            candidates = [entity_index(m) for m in example.candidates]
            for k in candidates:
                self.vocab.entity_id(k)
        except EntityOutOfRange:
            raise UserError(
                f"the document has {len(example.candidates)} entities but the reader "
                f"{self.path} answers over {self.vocab.num_entities} entity ids; shorten the "
                "document or train with a larger --data.num_entities"
            ) from None
        cap = self.max_encoded_tokens
        truncated = cap is not None and len(context) > cap
        return EncodedExample(
            id=example.id,
            context=context[:cap] if truncated else context,
            query=query,
            answer=entity_index(example.answer),
            candidates=candidates,
            truncated=truncated,
        )

    def _predict(self, items: Sequence[_Prepared]) -> list[Answer]:
        """One forward pass over prepared questions."""
        batch = collate([item.encoded for item in items], num_entities=self.vocab.num_entities)
        device = next(self.model.parameters()).device
        batch = dataclasses.replace(
            batch,
            **{
                name: getattr(batch, name).to(device)
                for name in ("context", "context_mask", "query", "query_mask", "candidates")
            },
            answer=batch.answer.to(device),
            truncated=batch.truncated.to(device),
        )
        with torch.inference_mode():
            output = self.model.predict_step(batch, 0)
        rows = {item.example.id: item.example for item in items}
        pages = heatmap_examples(output, rows)
        answers = []
        for item, page in zip(items, pages):
            example = item.example
            ranked = sorted(
                example.candidates,
                key=lambda m: (-page.probabilities[m], example.candidates.index(m)),
            )
            candidates = tuple(
                Candidate(m, example.entities.get(m, m), page.probabilities[m]) for m in ranked
            )
            name = candidates[0].name
            if item.filled is not None:
                query, filled = item.filled.text, item.filled.filled(name)
            else:  # a stored example: its query with real names
                query = " ".join(example.entities.get(t, t) for t in example.query)
                filled = " ".join(
                    name if t == PLACEHOLDER else example.entities.get(t, t) for t in example.query
                )
            notices = item.notices
            if page.truncated:
                notices += (
                    f"the anonymized document has {len(example.context)} tokens: the reader "
                    f"read its first {len(page.context)} (its training cap)",
                )
            answers.append(
                Answer(
                    id="document" if item.filled is not None else example.id,
                    query=query,
                    filled=filled,
                    candidates=candidates,
                    context=page.context,
                    question=page.query,
                    entities=dict(example.entities),
                    attention=page.attention,
                    selected=page.selected,
                    context_length=len(example.context),
                    notices=notices,
                )
            )
        return answers


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


def _datamodule_state(checkpoint: dict) -> dict | None:
    """The ``ClozeDataModule`` state a checkpoint holds (vocabulary, pipeline), or ``None``."""
    states = [checkpoint.get("ClozeDataModule"), *checkpoint.values()]
    for state in states:
        if isinstance(state, dict) and isinstance(state.get("vocab"), dict):
            return state
    return None


def _installed(name: str) -> bool:
    return Path(name).is_dir() or spacy.util.is_package(name)


def _warn(message: str) -> None:
    warnings.warn(message, PipelineWarning, stacklevel=4)


def _load_nlp(
    path: Path, pipeline: dict | None, spacy_model: str | None, warn: Callable[[str], None]
) -> Language:
    """The NER pipeline for a checkpoint: ``spacy_model`` or the recorded one."""
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
