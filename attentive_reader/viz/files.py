"""Writing a heatmap folder: each example's page, sidecar and PNG, then ``index.html``.

Each file is written beside its final name and renamed into place, so that a full disk never
leaves a truncated page; ``write_heatmaps`` removes an older index first, so that a folder
whose run failed never looks complete.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from attentive_reader.common.faults import writing
from attentive_reader.common.fileio import replacing
from attentive_reader.viz.heatmap import HeatmapExample, Scale
from attentive_reader.viz.html import IndexEntry, render_html, render_index
from attentive_reader.viz.png import render_png


def file_stem(example_id: str) -> str:
    """A safe, unique file name stem for an example id (ids may hold ``:`` or ``/``)."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", example_id).strip("._")[:60] or "example"
    return f"{slug}-{hashlib.sha1(example_id.encode()).hexdigest()[:8]}"


INDEX_FILES = ("index.html", "index.json")


def write_example(
    ex: HeatmapExample,
    out_dir: str | Path,
    *,
    scale: Scale = "linear",
    clip: float = 10.0,
    png: bool = True,
) -> IndexEntry:
    """Write the HTML page, JSON sidecar and (optionally) PNG of one example.

    Returns:
        The example's ``index.html`` entry.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stem = file_stem(ex.id)
    with replacing(out / f"{stem}.html") as tmp:
        tmp.write_text(render_html(ex, scale=scale, clip=clip), encoding="utf-8")
    with replacing(out / f"{stem}.json") as tmp:
        tmp.write_text(json.dumps(ex.to_json(), ensure_ascii=False, indent=1), encoding="utf-8")
    if png:
        with replacing(out / f"{stem}.png") as tmp:
            render_png(ex, tmp, scale=scale, clip=clip)
    return IndexEntry(
        id=ex.id,
        page=f"{stem}.html",
        correct=ex.correct,
        prediction=ex.prediction,
        answer=ex.answer,
        confidence=ex.probabilities.get(ex.prediction),
        gold_probability=ex.probabilities.get(ex.answer),
        png=f"{stem}.png" if png else None,
        sidecar=f"{stem}.json",
        prediction_name=ex.entities.get(ex.prediction),
        answer_name=ex.entities.get(ex.answer) if ex.answer is not None else None,
    )


def write_index(entries: Sequence[IndexEntry], out_dir: str | Path, *, title: str = "") -> Path:
    """Write ``index.json`` (the list as data), then ``index.html``, into ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with replacing(out / "index.json") as tmp:
        tmp.write_text(
            json.dumps([e.__dict__ for e in entries], ensure_ascii=False, indent=1),
            encoding="utf-8",
        )
    path = out / "index.html"
    with replacing(path) as tmp:
        tmp.write_text(render_index(entries, title=title or "Attention heatmaps"), encoding="utf-8")
    return path


def write_heatmaps(
    examples: Iterable[HeatmapExample],
    out_dir: str | Path,
    *,
    scale: Scale = "linear",
    clip: float = 10.0,
    png: bool = True,
    title: str = "",
) -> list[IndexEntry]:
    """Write every example's files and, last, ``index.html`` into ``out_dir``.

    Holds the folder's lock (a second run on it fails at once). A previous index is removed
    first, so that a run that fails (a full disk, a read-only folder) never looks complete;
    the same call then writes the whole folder again.

    Raises:
        OutputInUse: another run writes ``out_dir``.
        OutputError: the disk is full, the folder read-only, ...
    """
    with writing(out_dir, "heatmap"):
        for name in INDEX_FILES:
            (Path(out_dir) / name).unlink(missing_ok=True)
        entries = [write_example(ex, out_dir, scale=scale, clip=clip, png=png) for ex in examples]
        write_index(entries, out_dir, title=title)
    return entries
