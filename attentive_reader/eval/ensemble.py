"""What the readers of an ensemble must share, checked where their checkpoints are read.

An ensemble (``models/ensemble.py``) averages its members' probabilities over entity ids for
one batch of token ids, so every member must read the same ids the same way: one vocabulary
(the same words at the same ids), one entity block, text anonymized by the same pipeline and
rules (``corpus.manifest.identity_difference``; ``Reader`` anonymizes a new document once,
for every member), and contexts cut at the same cap. The readers themselves may differ in
anything else (class, sizes, scorer, seed). ``check_members`` raises a one-line error naming
the first difference and the two files.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from attentive_reader.common.errors import UserError
from attentive_reader.corpus.manifest import identity_difference
from attentive_reader.data.vocab import Vocabulary
from attentive_reader.data.vocab_sources import checkpoint_state

if TYPE_CHECKING:
    from pathlib import Path

    from attentive_reader.eval.inference import LoadedCheckpoint


@dataclass(frozen=True)
class MemberData:
    """What a checkpoint's reader reads, as far as the readers of an ensemble must share it.

    Attributes:
        path: the checkpoint, as given (named in errors).
        vocab: its vocabulary (words and entity block).
        pipeline: the preprocessing identity of its training data (``None``: not recorded).
        max_context_tokens: the data module's context cap (``None``: none).
    """

    path: str
    vocab: Vocabulary
    pipeline: dict | None
    max_context_tokens: int | None

    @classmethod
    def of_checkpoint(cls, checkpoint: dict, path: str | Path) -> MemberData:
        """From a loaded checkpoint (``checkpoint_file.read_checkpoint``).

        Raises:
            UserError: the checkpoint holds no vocabulary.
        """
        from pathlib import Path

        state = checkpoint_state(checkpoint, Path(path))
        arguments = checkpoint.get("datamodule_hyper_parameters") or {}
        return cls(
            str(path),
            Vocabulary.from_dict(state["vocab"]),
            state.get("pipeline"),
            arguments.get("max_context_tokens"),
        )

    @classmethod
    def of_loaded(cls, loaded: LoadedCheckpoint, path: str | Path) -> MemberData:
        """From a checkpoint read for evaluation (its data module has its vocabulary)."""
        datamodule = loaded.datamodule
        return cls(str(path), datamodule.vocab, loaded.pipeline, datamodule.max_context_tokens)


def check_members(members: Sequence[MemberData]) -> None:
    """Raise a one-line ``UserError`` when the checkpoints cannot be one ensemble.

    Raises:
        UserError: no member, or a member that differs from the first (named with it).
    """
    if not members:
        raise UserError("an ensemble needs at least one checkpoint")
    first = members[0]
    for other in members[1:]:
        difference = member_difference(first, other)
        if difference is not None:
            raise UserError(
                f"{first.path} and {other.path} cannot answer as one ensemble: {difference}; "
                "an ensemble's readers must be trained on the same preprocessed data"
            )


def member_difference(a: MemberData, b: MemberData) -> str | None:
    """The first thing ``a`` and ``b`` read differently, in words, or ``None``."""
    if a.vocab.num_entities != b.vocab.num_entities:
        return (
            f"their entity ranges differ ({a.vocab.num_entities} and "
            f"{b.vocab.num_entities} entity ids)"
        )
    if len(a.vocab.words) != len(b.vocab.words):
        return f"their vocabularies differ ({len(a.vocab.words)} and {len(b.vocab.words)} words)"
    if a.vocab.words != b.vocab.words:
        index = next(i for i, (x, y) in enumerate(zip(a.vocab.words, b.vocab.words)) if x != y)
        token_id = index + len(a.vocab) - len(a.vocab.words)
        return (
            f"their vocabularies differ (token id {token_id} is {a.vocab.words[index]!r} in "
            f"one and {b.vocab.words[index]!r} in the other)"
        )
    if (a.pipeline is None) != (b.pipeline is None):
        recorded = a.path if a.pipeline is not None else b.path
        return (
            f"only {recorded} records how its training data was anonymized (the other predates "
            "the record or was trained on data without a manifest)"
        )
    anonymized = identity_difference(a.pipeline, b.pipeline)
    if anonymized is not None:
        ours, theirs = anonymized
        return f"their training data was anonymized differently ({ours} against {theirs})"
    if a.max_context_tokens != b.max_context_tokens:
        return (
            f"they cut contexts differently (max_context_tokens {a.max_context_tokens} and "
            f"{b.max_context_tokens})"
        )
    return None
