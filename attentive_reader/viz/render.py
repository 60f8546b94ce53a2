"""The one set of autoescaped Jinja templates (``viz/templates/``) of every HTML view: the
static heatmap pages (``viz/html.py``) and the local page of ``attentive-reader serve``.

Every text is escaped by the environment (``autoescape``): tokens and names are untrusted
news text. The templates draw tokens through one macro (``_tokens.html``) from
``viz/tokens.py``'s ``TokenView``, and the marks' colours from ``tokens.OUTLINES``.
"""

from __future__ import annotations

import functools

from jinja2 import Environment, PackageLoader, select_autoescape

from attentive_reader.viz.heatmap import colour, format_probability
from attentive_reader.viz.tokens import OUTLINES


@functools.cache
def environment() -> Environment:
    """The templates' environment (built once; its globals: ``outlines``, ``shade``,
    ``probability``)."""
    env = Environment(
        loader=PackageLoader("attentive_reader.viz", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals.update(outlines=OUTLINES, shade=colour, probability=format_probability)
    return env


def render(template: str, **context: object) -> str:
    """``template`` rendered with ``context``."""
    return environment().get_template(template).render(**context)
