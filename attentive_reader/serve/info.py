"""What ``attentive-reader serve`` tells about its reader: the page header and the health check
(``model_info``), and the ``reader`` block of the API's answers (``reader_record``).

One description for the page and the health check, so a fact added here shows in both
places. Both name the checkpoint's file and the dataset folder's last part only, never the
server's folders.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from attentive_reader.corpus.pipeline import pipeline_info
from attentive_reader.version import __version__

if TYPE_CHECKING:
    from attentive_reader.api import Reader


def model_info(reader: Reader) -> dict[str, Any]:
    """The served reader: ``model`` (the checkpoint's file name; an ensemble's: its members'
    joined with `` + ``), ``reader`` (its class; an ensemble's: ``Ensemble`` and its members'
    classes), ``provenance`` (what it was trained on, without folders:
    ``models/provenance.py``), ``caution`` (the one-line warning about that, or ``None``),
    ``pipeline`` (the spaCy pipeline's name and version), ``version`` (the toolkit's)."""
    from attentive_reader.models.ensemble import Ensemble

    pipeline = pipeline_info(reader.nlp)
    paths = [path for path, _ in reader.members] or [reader.path]
    classes = ""
    if isinstance(reader.model, Ensemble):
        classes = f" of {', '.join(type(member).__name__ for member in reader.model.members)}"
    return {
        "model": " + ".join(Path(path).name for path in paths),
        "reader": type(reader.model).__name__ + classes,
        "provenance": reader.describe(folder=False),
        "caution": reader.caution(),
        "pipeline": {"name": pipeline["name"], "version": pipeline["version"]},
        "version": __version__,
    }


def reader_record(reader: Reader) -> dict[str, Any]:
    """The ``reader`` block of ``attentive-reader answer --json`` (``Reader.provenance_json``),
    as the API sends it: the last part of each folder only."""
    return reader.provenance_json(folder=False)
