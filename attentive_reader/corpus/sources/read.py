"""The entry point: ``iter_stories`` streams the stories of any input kind."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

from attentive_reader.common.errors import UserError
from attentive_reader.corpus.records import Skip, Story
from attentive_reader.corpus.sources.huggingface import iter_hf_file, iter_hub
from attentive_reader.corpus.sources.inputs import detect_kind
from attentive_reader.corpus.sources.stories import iter_archive, iter_story_files

_STRICT_HINT = "(--strict stops at the first bad input; leave it out to count and skip it)"


def _strict(items: Iterator[Story | Skip]) -> Iterator[Story | Skip]:
    for item in items:
        if isinstance(item, Skip):
            raise UserError(f"{item.source}: {item.detail} [{item.reason}] {_STRICT_HINT}")
        yield item


def iter_stories(
    input: str,
    *,
    hf_config: str | None = None,
    hf_splits: Sequence[str] | None = None,
    strict: bool = False,
) -> Iterator[Story | Skip]:
    """Stream the stories of one input, in a deterministic order.

    Args:
        input: a ``.story`` folder or file, a ``.tgz``/``.tar.gz`` archive, a local
            json/jsonl/csv/parquet file (optionally ``SPLIT=PATH``), or a hub dataset name.
        hf_config: the hub dataset's config (``3.0.0`` for ``cnn_dailymail``).
        hf_splits: the hub dataset's splits to read (default: those of train, validation,
            test it has).
        strict: raise ``UserError`` at the first bad story instead of yielding a ``Skip``.

    Yields:
        ``Story`` records (``split`` set for Hugging Face sources, ``None`` otherwise) and
        ``Skip`` records for unusable stories and files.

    Raises:
        UserError: for inputs that cannot be read at all (see ``detect_kind``), a data file
            without ``article``/``highlights`` columns, an unreachable hub, and under
            ``strict`` any bad story.
    """
    kind = detect_kind(input)
    items: Iterator[Story | Skip]
    if kind == "stories":
        items = iter_story_files(Path(input))
    elif kind == "archive":
        items = iter_archive(Path(input))
    elif kind == "hf_files":
        items = iter_hf_file(input)
    elif kind == "hf_hub":
        items = iter_hub(input, hf_config, hf_splits)
    else:  # questions, question_archive
        raise UserError(
            f"{input} holds DeepMind .question files: they are read as examples, not stories"
        )
    return _strict(items) if strict else items
