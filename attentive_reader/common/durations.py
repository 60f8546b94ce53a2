"""Durations as a progress line writes them: ``45 s``, ``12.5 min``, ``3.2 h``."""

from __future__ import annotations


def duration(seconds: float) -> str:
    """Seconds under 90 s, minutes under 120 min, else hours."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = seconds / 60
    return f"{minutes:.1f} min" if minutes < 120 else f"{minutes / 60:.1f} h"
