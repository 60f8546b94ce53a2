"""Attention heatmaps: ``checkpoint_heatmaps(...)`` computes the pages' data, ``write_heatmaps``
writes HTML pages, PNGs, JSON sidecars and ``index.html``.

``heatmap.py`` holds the plain data and the shading, ``html.py`` and ``png.py`` the rendering,
``files.py`` the writers, ``checkpoint.py`` the reading of a checkpoint and ``callback.py``
the Lightning prediction writer (imported on its own: it loads Lightning). ``curves.py`` (with
``curve_data.py``, which reads the figures, and ``curve_tables.py``) holds the curves of
``attentive-reader curves``: runs' validation curves, accuracy over training-set size, learning
curves.
"""

from attentive_reader.viz.checkpoint import checkpoint_heatmaps
from attentive_reader.viz.files import write_example, write_heatmaps, write_index
from attentive_reader.viz.heatmap import SCALES, HeatmapExample, Scale, heatmap_examples
from attentive_reader.viz.html import render_html, render_index
from attentive_reader.viz.png import render_png

__all__ = [
    "SCALES",
    "HeatmapExample",
    "Scale",
    "checkpoint_heatmaps",
    "heatmap_examples",
    "render_html",
    "render_index",
    "render_png",
    "write_example",
    "write_heatmaps",
    "write_index",
]
