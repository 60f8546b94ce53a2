"""HTML: one self-contained page per example, and ``index.html`` linking them.

Every page is one file with inline CSS only: no JavaScript, no external URL, every token and
name HTML-escaped (the text is untrusted news text). Tooltips are ``title`` attributes. The
pages are the templates ``heatmap.html`` and ``heatmap_index.html`` (``viz/render.py``: the
one autoescaped set, shared with ``attentive-reader serve``); their tokens come from
``viz/tokens.py``, the one token classification.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from attentive_reader.viz.heatmap import SCALES, HeatmapExample, Scale, intensities
from attentive_reader.viz.render import render
from attentive_reader.viz.tokens import TokenView, context_views, query_views, shading


def render_html(
    ex: HeatmapExample, *, scale: Scale = "linear", clip: float = 10.0, caution: str | None = None
) -> str:
    """One self-contained HTML page for one example.

    Args:
        ex: the example.
        scale: ``"linear"`` or ``"normalized"`` (see ``intensities``).
        clip: the full-colour multiple of the uniform weight on the normalized scale.
        caution: a warning shown above the answer (``Provenance.warning()``: a reader whose
            answers deserve no trust), or ``None``.

    Returns:
        The page: inline CSS only, no script, no external reference, every text escaped.
    """
    if scale not in SCALES:
        raise ValueError(f"unknown scale {scale!r}; choose one of {', '.join(SCALES)}")
    top, alphas = shading(ex, scale, clip)
    n = len(ex.context)
    if scale == "linear":
        legend = {"right": f"{top:.4f}", "what": "linear scale: full colour = the largest weight"}
    else:
        what = f"length-normalised scale: weight x {n} tokens (1 = uniform), clipped at {clip:g}"
        legend = {"right": f"\u2265{clip:g}x uniform", "what": what}
    return render(
        "heatmap.html",
        title=f"attention: {ex.id}",
        ex=ex,
        caution=caution,
        legend=legend,
        query=query_views(ex, names=False),
        context=context_views(ex, alphas, names=False),
        named_query=query_views(ex, names=True),
        named_context=context_views(ex, alphas, names=True),
        ranked=_ranked(ex),
        rows=_rows(ex, scale, top, clip) if ex.per_query_token else [],
        hops=_hops(ex) if ex.hop_attention else None,
    )


def _ranked(ex: HeatmapExample) -> list[dict[str, Any]]:
    """The candidates, most probable first, with their tags."""
    ranked = sorted(ex.probabilities.items(), key=lambda kv: -kv[1])
    return [
        {
            "marker": marker,
            "name": ex.name(marker),
            "p": p,
            "width": max(1, round(200 * p)),
            "tags": [
                tag
                for tag, m in (("gold", ex.answer), ("prediction", ex.prediction))
                if m == marker
            ],
        }
        for marker, p in ranked
    ]


def _rows(ex: HeatmapExample, scale: Scale, top: float, clip: float) -> list[dict[str, Any]]:
    """Impatient Reader: one line of context weights per query token."""
    rows = []
    for q, row in zip(ex.query, ex.attention_rows):
        alphas = intensities(row, scale, top=top, clip=clip)
        views = [
            TokenView(t, f"#{i} after {q}: {w:.4f}", a)
            for i, (t, w, a) in enumerate(zip(ex.context, row, alphas))
        ]
        rows.append({"query": q, "tokens": views})
    return rows


def _hops(ex: HeatmapExample) -> dict[str, Any]:
    """Gated-Attention Reader: a query grid per gated hop and one document row per hop."""
    grid = ex.hop_query_attention  # (K - 1, m)
    top = max((max(r) for r in grid if r), default=0.0)
    cells = [
        [
            {"weight": w, "alpha": a, "title": f"hop {k + 1}: {q} {w:.4f}"}
            for q, w, a in zip(ex.query, row, intensities(row, "linear", top=top))
        ]
        for k, row in enumerate(grid)
    ]
    lines = []
    for k, hop in enumerate(ex.hop_attention or ()):
        views = []
        for t, (token, weights) in enumerate(zip(ex.context, hop)):
            ranked = sorted(zip(weights, ex.query), key=lambda wq: -wq[0])
            best, best_token = ranked[0] if ranked else (0.0, "")
            shown = ", ".join(f"{q} {w:.2f}" for w, q in ranked[:3])
            title = f"#{t} hop {k + 1}: most on {best_token} ({best:.3f}) | {shown}"
            views.append(TokenView(token, title, min(1.0, max(0.0, best))))
        lines.append(views)
    return {"grid": cells, "rows": lines}


@dataclass(frozen=True)
class IndexEntry:
    """One line of ``index.html``: an example and the file names of its outputs; the
    prediction's and the gold answer's real names when the entity map has them."""

    id: str
    page: str
    correct: bool | None
    prediction: str
    answer: str | None
    confidence: float | None
    gold_probability: float | None
    png: str | None = None
    sidecar: str | None = None
    prediction_name: str | None = None
    answer_name: str | None = None


def render_index(entries: Sequence[IndexEntry], *, title: str = "Attention heatmaps") -> str:
    """``index.html``: the examples (correct / wrong, confidence) with links to their pages."""
    graded = [e for e in entries if e.correct is not None]
    return render(
        "heatmap_index.html",
        title=title,
        entries=entries,
        graded=len(graded),
        right=sum(bool(e.correct) for e in graded),
        href=_href,
    )


def _href(file_name: str) -> str:
    """A relative link to a file in the same folder (never a scheme or a host)."""
    return "./" + urllib.parse.quote(file_name)
