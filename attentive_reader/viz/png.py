"""PNG: the heatmap of one example as a figure (matplotlib's Agg canvas, no pyplot state)."""

from __future__ import annotations

import unicodedata
import warnings
from pathlib import Path

from attentive_reader.viz.heatmap import (
    RGB,
    HeatmapExample,
    Scale,
    format_probability,
    intensities,
)


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
    attention each query token received, averaged over the context (``hop_query_attention``). Uses matplotlib's Agg canvas directly (no global pyplot state).

    Args:
        ex: the example.
        path: the output file.
        scale: as in ``render_html``.
        clip: as in ``render_html``.
        width_chars: the line width of the text, in characters.
        dpi: resolution.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.collections import PatchCollection
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    weights = ex.weights
    rows = ex.attention_rows
    top = max((max(r) for r in rows if r), default=0.0)
    alphas = (
        [0.0] * len(ex.context)
        if weights is None
        else intensities(weights, scale, top=top, clip=clip)
    )
    # Lay the tokens out in lines of at most width_chars characters (monospace units).
    layout: list[tuple[int, int, str]] = []  # (line, column, text) per context token
    line, col = 0, 0
    spans: list[int] = []  # columns each token takes (wide CJK characters take two)
    for token in ex.context:
        text = token if len(token) <= width_chars // 2 else token[: width_chars // 2 - 1] + "~"
        span = _columns(text)
        if col and col + span > width_chars:
            line, col = line + 1, 0
        layout.append((line, col, text))
        spans.append(span)
        col += span + 1
    n_lines = line + 1 + int(ex.truncated)  # one more line for the truncation marker
    header = 3
    char_w, line_h = 0.075, 0.21  # inches per character / per line at 9 pt
    text_h = (n_lines + header) * line_h + 0.3
    grid = ex.hop_query_attention  # (K - 1, m)
    panel_h = 0.18 * len(rows) + 0.8 if ex.per_query_token else 0.0
    hop_h = 0.25 * len(grid) + 1.1 if grid else 0.0
    total_h = text_h + panel_h + hop_h
    fig = Figure(figsize=(width_chars * char_w + 0.4, total_h), dpi=dpi)
    FigureCanvasAgg(fig)
    top_frac = text_h / total_h
    ax = fig.add_axes((0.02, 1 - top_frac, 0.96, top_frac * 0.98))
    ax.set_xlim(-0.5, width_chars + 0.5)
    ax.set_ylim(n_lines + header, 0)
    ax.axis("off")
    kw = {"family": "monospace", "fontsize": 9, "va": "center", "ha": "left", "parse_math": False}
    verdict = {None: "no gold answer", True: "correct", False: "wrong"}[ex.correct]
    p_pred = ex.probabilities.get(ex.prediction)
    p_gold = ex.probabilities.get(ex.answer)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # missing glyphs for rare scripts are not fatal
        ax.text(0, 0.5, f"{ex.id}  [{verdict}]", weight="bold", **kw)
        ax.text(
            0,
            1.5,
            f"prediction {ex.prediction} ({ex.name(ex.prediction)}) p={format_probability(p_pred)}"
            + (
                ""
                if ex.answer is None
                else f"   gold {ex.answer} ({ex.name(ex.answer)}) p={format_probability(p_gold)}"
            ),
            **kw,
        )
        ax.text(0, 2.5, "query: " + " ".join(ex.query)[: width_chars - 7], **kw)
        patches, faces, edges, widths = [], [], [], []
        for i, ((ln, c, text), alpha) in enumerate(zip(layout, alphas)):
            token = ex.context[i]
            edge, lw = "none", 0.0
            if ex.answer is not None and token == ex.answer:
                edge, lw = "#1a7f37", 1.4
            elif token == ex.prediction:
                edge, lw = "#cf222e", 1.4
            elif token in ex.candidates:
                edge, lw = "#6e7781", 0.6
            if i in ex.selected:
                edge, lw = "#8250df", 2.0
            patches.append(Rectangle((c - 0.1, ln + header + 0.5 - 0.42), spans[i] + 0.2, 0.84))
            faces.append(tuple(v / 255 for v in RGB) + (alpha,))
            edges.append(edge)
            widths.append(lw)
            ax.text(c, ln + header + 0.5, text, **kw)
        ax.add_collection(
            PatchCollection(patches, facecolors=faces, edgecolors=edges, linewidths=widths)
        )
        if ex.truncated:
            ax.text(
                0,
                n_lines + header - 0.5,
                f"[truncated: the reader saw {len(ex.context)} of {ex.context_length} tokens]",
                color="#a40e26",
                **kw,
            )
        if ex.per_query_token:
            bottom = (hop_h + 0.45) / total_h
            pax = fig.add_axes((0.14, bottom, 0.84, (panel_h - 0.75) / total_h))
            pax.imshow(rows, aspect="auto", cmap="Oranges", interpolation="nearest")
            pax.set_yticks(range(len(ex.query)))
            pax.set_yticklabels(ex.query, fontsize=7)
            for label in pax.get_yticklabels():
                label.set_parse_math(False)
            pax.set_xlabel("context position", fontsize=8)
            pax.tick_params(axis="x", labelsize=7)
        if grid:
            hax = fig.add_axes((0.14, 0.55 / total_h, 0.84, (hop_h - 1.0) / total_h))
            grid_top = max((max(r) for r in grid if r), default=0.0) or 1.0
            hax.imshow(
                grid, aspect="auto", cmap="Oranges", interpolation="nearest", vmin=0, vmax=grid_top
            )
            if len(ex.query) <= 40:  # the weights themselves, where they fit
                for k, row in enumerate(grid):
                    for i, w in enumerate(row):
                        colour = "white" if w > 0.6 * grid_top else "black"
                        hax.text(
                            i, k, f"{w:.2f}", ha="center", va="center", fontsize=6, color=colour
                        )
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
        fig.savefig(str(path), dpi=dpi)


def _columns(text: str) -> int:
    """Monospace columns of ``text``: East Asian wide and full-width characters take two."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)
