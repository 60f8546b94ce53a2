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

``Reader.provenance`` says what the reader was trained on (``models/provenance.py``), and
``Reader.load`` warns in one line (``ProvenanceWarning``) when that was the built-in
synthetic corpus or the reader validates below its data's exclusive-frequency baseline.

``Reader.load([a, b, ...])`` loads several checkpoints of one vocabulary and entity range as
an ensemble (``models/ensemble.py``): each question is anonymized once and answered by the
mean of the readers' probabilities; its attention is the mean of theirs. Checkpoints that
read differently are refused in one line naming the difference (``eval/ensemble.py``).

Steps 1 and 2, and loading the recorded pipeline, are ``attentive_reader.api_prepare``.

Example::

    from attentive_reader import Reader

    reader = Reader.load("reader.ckpt")
    answer = reader.answer(open("article.txt").read(), "@placeholder signed the deal")
    print(answer.filled, answer.prediction.probability)
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import torch
from spacy.language import Language
from spacy.tokens import Doc

from attentive_reader.api_prepare import cloze_example, cut_document, document_text, load_nlp
from attentive_reader.common.checkpoint_file import read_checkpoint
from attentive_reader.common.checks import check_positive
from attentive_reader.common.errors import UserError
from attentive_reader.common.markers import PLACEHOLDER, entity_index
from attentive_reader.common.query import ParsedQuery, parse_query
from attentive_reader.corpus.cloze import ClozeOptions
from attentive_reader.corpus.entities import DEFAULT_LABELS
from attentive_reader.corpus.records import ClozeExample
from attentive_reader.data.batching import EncodedExample, collate
from attentive_reader.data.entity_block import EntityFit, fit_encoded, stored_ids
from attentive_reader.data.vocab import Vocabulary
from attentive_reader.data.vocab_sources import datamodule_state
from attentive_reader.eval.ensemble import MemberData, check_members
from attentive_reader.eval.inference import DeviceName, resolve_device
from attentive_reader.models.base import ClozeReader
from attentive_reader.models.ensemble import Ensemble
from attentive_reader.models.loading import reader_from_checkpoint
from attentive_reader.models.predictions import Prediction
from attentive_reader.models.provenance import Provenance
from attentive_reader.viz.heatmap import HeatmapExample

OnError = Literal["raise", "return"]


class ProvenanceWarning(UserWarning):
    """The reader was trained on made-up stories, or validates below its data's
    exclusive-frequency baseline: its answers deserve no trust."""


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
        """The answer as the heatmap pages' plain data (``viz.html.render_html``).

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
class _Prepared:
    """A question anonymized and encoded, ready for the reader."""

    example: ClozeExample
    encoded: EncodedExample
    fit: EntityFit
    filled: ParsedQuery | None
    notices: tuple[str, ...]


class Reader:
    """A trained reader that answers cloze queries about raw documents.

    Build one with ``Reader.load``. Attributes are read-only by convention.

    Args:
        model: the reader, in eval mode, or an ``Ensemble`` of readers.
        vocab: its vocabulary (from the checkpoint).
        nlp: the spaCy NER pipeline (``corpus.pipeline.load_pipeline``).
        options: how stories become cloze examples (labels, lowercasing, the document cap).
        max_encoded_tokens: the data module's cap on the anonymized context (``None``: none).
        pipeline: the checkpoint's preprocessing identity (``None`` for old checkpoints).
        path: the checkpoint, for messages and page headers (an ensemble's: its members'
            joined with `` + ``).
        batch_size: examples per forward pass in ``answer_many``.
        provenance: what the reader was trained on (``Provenance.of(checkpoint)``; unknown
            when not given; an ensemble's: its first member's).
        members: an ensemble's checkpoints with what each was trained on (empty for one
            reader).
    """

    def __init__(
        self,
        model: ClozeReader | Ensemble,
        vocab: Vocabulary,
        nlp: Language,
        options: ClozeOptions,
        *,
        max_encoded_tokens: int | None = None,
        pipeline: dict | None = None,
        path: str = "",
        batch_size: int = 32,
        provenance: Provenance | None = None,
        members: Sequence[tuple[str, Provenance]] = (),
    ) -> None:
        if vocab.num_entities != model.num_entities:
            raise UserError(
                f"{path}: the reader has {model.num_entities} entity ids but its vocabulary "
                f"has {vocab.num_entities}; the checkpoint is inconsistent"
            )
        check_positive(batch_size=batch_size)
        self.model = model.eval()
        self.vocab = vocab
        self.nlp = nlp
        self.options = options
        self.max_encoded_tokens = max_encoded_tokens
        self.pipeline = pipeline
        self.path = path
        self.batch_size = batch_size
        self.members = tuple(members)
        self.provenance = provenance or (self.members[0][1] if self.members else Provenance())
        # make_examples caps nothing here: a long document is cut to the cap instead.
        self._cloze = dataclasses.replace(options, max_context_tokens=None)

    @classmethod
    def load(
        cls,
        ckpt: str | Path | Sequence[str | Path],
        *,
        spacy_model: str | None = None,
        device: DeviceName | str = "cpu",
        batch_size: int = 32,
        warn: Callable[[str], None] | None = None,
    ) -> Reader:
        """Load a checkpoint (or an ensemble of them) and the spaCy pipeline its training data
        was preprocessed with.

        Args:
            ckpt: a reader checkpoint trained with ``ClozeDataModule``, or a list of them to
                answer as an ensemble (by the mean of their probabilities; one vocabulary,
                entity range, preprocessing and context cap; a list of one is that reader).
            spacy_model: a spaCy pipeline (name or directory) to use instead of the recorded
                one; needed for checkpoints trained on DeepMind ``.question`` data.
            device: ``cpu``, ``cuda``, ``cuda:N`` or ``auto``.
            batch_size: examples per forward pass in ``answer_many``.
            warn: called with each warning's message instead of issuing a
                ``PipelineWarning`` or ``ProvenanceWarning`` (the commands print it in one
                line).

        Raises:
            UserError: a missing or unreadable checkpoint, a pipeline that is not installed,
                or an ensemble's checkpoints that read differently (the message names the
                difference and the two files).

        Warns:
            PipelineWarning: the installed pipeline differs from the recorded one, or the
                checkpoint records none (trained before the identity was recorded).
            ProvenanceWarning: the reader (an ensemble: a member, named) was trained on the
                built-in synthetic corpus (or other generated data), or validates below its
                data's exclusive-frequency baseline (``Provenance.warning``).
        """
        paths = [Path(ckpt)] if isinstance(ckpt, (str, Path)) else [Path(p) for p in ckpt]
        if not paths:
            raise UserError("Reader.load needs a checkpoint (or a list of them for an ensemble)")
        where = resolve_device(device)
        loaded = [_load_member(path, where) for path in paths]  # each file read once
        check_members([data for _, _, data in loaded])
        checkpoint, _, first = loaded[0]
        arguments = checkpoint.get("datamodule_hyper_parameters") or {}
        nlp = load_nlp(paths[0], first.pipeline, spacy_model, warn)
        members = [
            (str(path), Provenance.of(member)) for path, (member, _, _) in zip(paths, loaded)
        ]
        for path, provenance in members:
            caution = provenance.warning()
            if caution is not None:
                (warn or _provenance_warning)(caution if len(paths) == 1 else f"{path}: {caution}")
        models = [model for _, model, _ in loaded]
        return cls(
            models[0] if len(models) == 1 else Ensemble(models),
            first.vocab,
            nlp,
            _cloze_options(first.pipeline),
            max_encoded_tokens=arguments.get("max_context_tokens"),
            pipeline=first.pipeline,
            path=" + ".join(str(path) for path in paths),
            batch_size=batch_size,
            provenance=members[0][1],
            members=members if len(members) > 1 else (),
        )

    # --- what it was trained on ------------------------------------------------------------

    def describe(self, folder: bool = True) -> str:
        """One line: what the reader was trained on (an ensemble: each member, by its file).

        Args:
            folder: name the dataset's (and the members') whole folder; ``False``: the last
                part only (for a page that must not show the server's folders).
        """
        if not self.members:
            return self.provenance.describe(folder)
        described = [
            f"{path if folder else Path(path).name}: {provenance.describe(folder)}"
            for path, provenance in self.members
        ]
        return (
            f"an ensemble of {len(self.members)} readers (the mean of their probabilities): "
            + " | ".join(described)
        )

    def caution(self) -> str | None:
        """The one-line warning about what the reader (or a member) was trained on, or None."""
        if not self.members:
            return self.provenance.warning()
        warned = [
            f"{Path(path).name}: {warning}"
            for path, provenance in self.members
            if (warning := provenance.warning()) is not None
        ]
        return " | ".join(warned) or None

    def provenance_json(self, folder: bool = True) -> dict[str, Any]:
        """What the reader was trained on, as JSON (``Provenance.to_json``); an ensemble's:
        ``{"ensemble": [{"checkpoint": path, ...its member's record}, ...]}``.

        Args:
            folder: whole folders; ``False``: the last part only (what a server sends).
        """
        if not self.members:
            return self.provenance.to_json(folder)
        return {
            "ensemble": [
                {"checkpoint": path if folder else Path(path).name, **provenance.to_json(folder)}
                for path, provenance in self.members
            ]
        }

    # --- answering -----------------------------------------------------------------------

    def answer(self, document: str, query: str) -> Answer:
        """Answer one cloze query about one document.

        Args:
            document: the raw article text (a ``.story`` text also works).
            query: a sentence with real names and one blank (``@placeholder``, ``___`` or
                ``XXX``).

        A document with more entities than the reader's block is read with the most frequent
        ones (``data/entity_block.py``); the answer's notices say so.

        Raises:
            UserError: an empty document, a query without exactly one blank, or a document
                without an entity.
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
        return self._predict([_Prepared(example, *self._encode(example), None, ())])[0]

    # --- internals -----------------------------------------------------------------------

    def _prepare_all(self, pairs: Sequence[tuple[str, str]]) -> list[_Prepared | UserError]:
        """Anonymize every pair (NER through one ``nlp.pipe``)."""
        staged: list[tuple[ParsedQuery, Doc, tuple[str, ...]] | UserError] = []
        for document, query in pairs:
            try:
                parsed = parse_query(query)
                article = document_text(document)
                cap = self.options.max_context_tokens
                staged.append((parsed, *cut_document(self.nlp, article, cap)))
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
                example = cloze_example(self.nlp, next(docs), parsed, f"q{number}", self._cloze)
                out.append(_Prepared(example, *self._encode(example), parsed, notices))
            except UserError as error:
                out.append(error)
        return out

    def _encode(self, example: ClozeExample) -> tuple[EncodedExample, EntityFit]:
        """The example as ids, fitted into the reader's entity block, and its fit."""
        stored = EncodedExample(
            id=example.id,
            context=stored_ids(example.context, self.vocab),  # (n,)
            query=stored_ids(example.query, self.vocab),  # (m,)
            answer=entity_index(example.answer),
            candidates=[entity_index(m) for m in example.candidates],
        )
        encoded, fit = fit_encoded(stored, self.vocab.num_entities, self.vocab.entity_offset)
        cap = self.max_encoded_tokens
        if cap is not None and len(encoded.context) > cap:
            encoded = dataclasses.replace(encoded, context=encoded.context[:cap], truncated=True)
        return encoded, fit

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
        return [_answer(item, record) for item, record in zip(items, output.records())]


def _load_member(path: Path, device: torch.device) -> tuple[dict, ClozeReader, MemberData]:
    """A checkpoint read once: its content, its reader and its vocabulary and preprocessing.

    Raises:
        UserError: a missing or unreadable checkpoint, or one without a vocabulary.
    """
    checkpoint = read_checkpoint(path, map_location=device)
    model = reader_from_checkpoint(checkpoint, path, map_location=device)
    if datamodule_state(checkpoint) is None:
        raise UserError(
            f"{path} holds no vocabulary (it was not trained with ClozeDataModule); "
            "Reader.load needs a checkpoint written by 'attentive-reader fit'"
        )
    return checkpoint, model, MemberData.of_checkpoint(checkpoint, path)


def _answer(item: _Prepared, record: Prediction) -> Answer:
    """The answer of one prepared question from the reader's prediction record."""
    example = item.example
    n = min(record.context_length, len(example.context))
    m = min(record.query_length, len(example.query))
    read = {c: item.fit.reader_number(entity_index(c)) for c in example.candidates}
    probabilities = {c: float(record.probs[r]) for c, r in read.items() if r is not None}
    ranked = sorted(probabilities, key=lambda c: (-probabilities[c], example.candidates.index(c)))
    candidates = tuple(Candidate(c, example.entities.get(c, c), probabilities[c]) for c in ranked)
    name = candidates[0].name
    if item.filled is not None:
        query, filled = item.filled.text, item.filled.filled(name)
    else:  # a stored example: its query with real names
        query = " ".join(example.entities.get(t, t) for t in example.query)
        filled = " ".join(
            name if t == PLACEHOLDER else example.entities.get(t, t) for t in example.query
        )
    notices = item.notices + _block_notice(item.fit, len(record.probs))
    if n < len(example.context):
        notices += (
            f"the anonymized document has {len(example.context)} tokens: the reader "
            f"read its first {n} (its training cap)",
        )
    return Answer(
        id="document" if item.filled is not None else example.id,
        query=query,
        filled=filled,
        candidates=candidates,
        context=tuple(example.context[:n]),
        question=tuple(example.query[:m]),
        entities=dict(example.entities),
        attention=record.weights(n, m),
        selected=record.selected_positions(n),
        context_length=len(example.context),
        notices=notices,
    )


def _block_notice(fit: EntityFit, num_entities: int) -> tuple[str, ...]:
    """The notice of a document with more entities than the reader's block (else none)."""
    if not fit.dropped:
        return ()
    total = len(fit.mapping or ()) + fit.dropped
    return (
        f"the document has {total} entities, more than the reader's {num_entities} entity ids: "
        f"the {fit.dropped} named least often were read as unknown words and cannot be the answer",
    )


def _cloze_options(pipeline: dict | None) -> ClozeOptions:
    """How the training stories became cloze examples, from the preprocessing identity."""
    if pipeline is None:
        return ClozeOptions()
    return ClozeOptions(
        labels=tuple(pipeline.get("labels") or DEFAULT_LABELS),
        lowercase=bool(pipeline.get("lowercase", True)),
        max_context_tokens=pipeline.get("max_context_tokens"),
    )


def _provenance_warning(message: str) -> None:
    warnings.warn(message, ProvenanceWarning, stacklevel=3)  # at the caller of Reader.load
