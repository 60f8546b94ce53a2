"""PNG: the heatmap of one example as a figure (matplotlib's Agg canvas, no pyplot state)."""

from __future__ import annotations

import unicodedata
import warnings
from pathlib import Path
from typing import Any

from attentive_reader.viz.heatmap import RGB, HeatmapExample, Scale, format_probability
from attentive_reader.viz.tokens import TokenView, context_views, shading


def render_png(
    ex: HeatmapExample,
    path: str | Path,
    *,
    scale: Scale = "linear",
    clip: float = 10.0,
    width_chars: int = 110,
    dpi: int = 110,
) -> None:
    """A PNG figure of the example: the query, then the context shaded by attention.

    For the Impatient Reader a second panel shows the weights as an image, one row per
    query token; for the Gated-Attention Reader one shows, one row per gated hop, the
    attention each query token received, averaged over the context (``hop_query_attention``).
    Uses matplotlib's Agg canvas directly (no global pyplot state). Tokens are outlined as
    the HTML pages mark them (``viz/tokens.py``).

    Args:
        ex: the example.
        path: the output file.
        scale: as in ``render_html``.
        clip: as in ``render_html``.
        width_chars: the line width of the text, in characters.
        dpi: resolution.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    _, alphas = shading(ex, scale, clip)
    views = context_views(ex, alphas or [0.0] * len(ex.context), names=False)
    layout, n_lines = _layout(ex, width_chars)
    char_w, line_h = 0.075, 0.21  # inches per character / per line at 9 pt
    text_h = (n_lines + _HEADER) * line_h + 0.3
    grid = ex.hop_query_attention  # (K - 1, m)
    panel_h = 0.18 * len(ex.attention_rows) + 0.8 if ex.per_query_token else 0.0
    hop_h = 0.25 * len(grid) + 1.1 if grid else 0.0
    total_h = text_h + panel_h + hop_h
    fig = Figure(figsize=(width_chars * char_w + 0.4, total_h), dpi=dpi)
    FigureCanvasAgg(fig)
    top_frac = text_h / total_h
    ax = fig.add_axes((0.02, 1 - top_frac, 0.96, top_frac * 0.98))
    ax.set_xlim(-0.5, width_chars + 0.5)
    ax.set_ylim(n_lines + _HEADER, 0)
    ax.axis("off")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # missing glyphs for rare scripts are not fatal
        _text_panel(ax, ex, layout, views, width_chars, n_lines)
        if ex.per_query_token:
            bottom = (hop_h + 0.45) / total_h
            _rows_panel(fig.add_axes((0.14, bottom, 0.84, (panel_h - 0.75) / total_h)), ex)
        if grid:
            _hops_panel(fig.add_axes((0.14, 0.55 / total_h, 0.84, (hop_h - 1.0) / total_h)), ex)
        fig.savefig(str(path), dpi=dpi)


_HEADER = 3  # text lines above the context: the id, the prediction, the query
_TEXT = {"family": "monospace", "fontsize": 9, "va": "center", "ha": "left", "parse_math": False}


def _layout(ex: HeatmapExample, width_chars: int) -> tuple[list[tuple[int, int, str, int]], int]:
    """The context tokens in lines of at most ``width_chars`` monospace columns: (line,
    column, text, columns) per token, and the number of lines (one more when truncated)."""
    layout = []
    line, col = 0, 0
    for token in ex.context:
        text = token if len(token) <= width_chars // 2 else token[: width_chars // 2 - 1] + "~"
        span = _columns(text)  # wide CJK characters take two columns
        if col and col + span > width_chars:
            line, col = line + 1, 0
        layout.append((line, col, text, span))
        col += span + 1
    return layout, line + 1 + int(ex.truncated)


def _text_panel(
    ax: Any,
    ex: HeatmapExample,
    layout: list[tuple[int, int, str, int]],
    views: list[TokenView],
    width_chars: int,
    n_lines: int,
) -> None:
    """The header lines and the context, each token shaded and outlined."""
    from matplotlib.collections import PatchCollection
    from matplotlib.patches import Rectangle

    verdict = {None: "no gold answer", True: "correct", False: "wrong"}[ex.correct]
    p_pred = format_probability(ex.probabilities.get(ex.prediction))
    gold = ""
    if ex.answer is not None:
        p_gold = format_probability(ex.probabilities.get(ex.answer))
        gold = f"   gold {ex.answer} ({ex.name(ex.answer)}) p={p_gold}"
    ax.text(0, 0.5, f"{ex.id}  [{verdict}]", weight="bold", **_TEXT)
    ax.text(
        0, 1.5, f"prediction {ex.prediction} ({ex.name(ex.prediction)}) p={p_pred}{gold}", **_TEXT
    )
    ax.text(0, 2.5, "query: " + " ".join(ex.query)[: width_chars - 7], **_TEXT)
    patches, faces, edges, widths = [], [], [], []
    for (ln, c, text, span), view in zip(layout, views):
        edge, lw = view.outline or ("none", 0.0)
        y = ln + _HEADER + 0.5
        patches.append(Rectangle((c - 0.1, y - 0.42), span + 0.2, 0.84))
        faces.append(tuple(v / 255 for v in RGB) + (view.alpha or 0.0,))
        edges.append(edge)
        widths.append(lw)
        ax.text(c, y, text, **_TEXT)
    ax.add_collection(
        PatchCollection(patches, facecolors=faces, edgecolors=edges, linewidths=widths)
    )
    if ex.truncated:
        ax.text(
            0,
            n_lines + _HEADER - 0.5,
            f"[truncated: the reader saw {len(ex.context)} of {ex.context_length} tokens]",
            color="#a40e26",
            **_TEXT,
        )


def _rows_panel(pax: Any, ex: HeatmapExample) -> None:
    """Impatient Reader: the weights as an image, one row per query token."""
    pax.imshow(ex.attention_rows, aspect="auto", cmap="Oranges", interpolation="nearest")
    pax.set_yticks(range(len(ex.query)))
    pax.set_yticklabels(ex.query, fontsize=7)
    for label in pax.get_yticklabels():
        label.set_parse_math(False)
    pax.set_xlabel("context position", fontsize=8)
    pax.tick_params(axis="x", labelsize=7)


def _hops_panel(hax: Any, ex: HeatmapExample) -> None:
    """Gated-Attention Reader: the query attention of each gated hop, one row per hop."""
    grid = ex.hop_query_attention  # (K - 1, m)
    grid_top = max((max(r) for r in grid if r), default=0.0) or 1.0
    hax.imshow(grid, aspect="auto", cmap="Oranges", interpolation="nearest", vmin=0, vmax=grid_top)
    if len(ex.query) <= 40:  # the weights themselves, where they fit
        for k, row in enumerate(grid):
            for i, w in enumerate(row):
                colour = "white" if w > 0.6 * grid_top else "black"
                hax.text(i, k, f"{w:.2f}", ha="center", va="center", fontsize=6, color=colour)
    hax.set_yticks(range(len(grid)))
    hax.set_yticklabels([f"hop {k + 1}" for k in range(len(grid))], fontsize=7)
    hax.set_xticks(range(len(ex.query)))
    hax.set_xticklabels(ex.query, fontsize=7, rotation=30, ha="right")
    for label in [*hax.get_xticklabels(), *hax.get_yticklabels()]:
        label.set_parse_math(False)
    hax.set_title(
        "query attention per hop (mean over the context tokens; full colour = the largest)",
        fontsize=8,
        loc="left",
    )


def _columns(text: str) -> int:
    """Monospace columns of ``text``: East Asian wide and full-width characters take two."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)
