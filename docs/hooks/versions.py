"""MkDocs hook: the grouping rules' current version, written once, in the code.

A page writes ``{{ rules_version }}``; the hook puts in ``GROUPING_RULES_VERSION`` as
``attentive_reader/corpus/grouping.py`` assigns it (read as text: building the docs loads no
spaCy). Figures measured with an older version say so beside them.
"""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.exceptions import PluginError

GROUPING = Path(__file__).resolve().parents[2] / "attentive_reader" / "corpus" / "grouping.py"
PLACEHOLDER = "{{ rules_version }}"


def rules_version() -> str:
    """``GROUPING_RULES_VERSION`` as the code assigns it.

    Raises:
        PluginError: the assignment is not found (renamed or moved).
    """
    found = re.search(r"^GROUPING_RULES_VERSION\s*=\s*(\d+)", GROUPING.read_text("utf-8"), re.M)
    if found is None:
        raise PluginError(
            f"no GROUPING_RULES_VERSION = N in {GROUPING}; update docs/hooks/versions.py"
        )
    return found.group(1)


def on_page_markdown(markdown: str, **kwargs: object) -> str:
    return markdown.replace(PLACEHOLDER, rules_version())
