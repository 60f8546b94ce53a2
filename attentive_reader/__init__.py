"""attentive-reader: machine reading comprehension with the attentive readers of Hermann et al. 2015.

``from attentive_reader import Reader`` is the Python API (``attentive_reader.api``); it is
imported on first use, so that importing the package stays cheap (no torch, no spaCy).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from attentive_reader.version import __version__

__all__ = ["Answer", "Candidate", "Reader", "__version__"]

if TYPE_CHECKING:
    from attentive_reader.api import Answer, Candidate, Reader


def __getattr__(name: str) -> Any:
    if name in ("Answer", "Candidate", "Reader"):
        from attentive_reader import api

        return getattr(api, name)
    raise AttributeError(f"module 'attentive_reader' has no attribute {name!r}")
