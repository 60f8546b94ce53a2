"""The one normalization of an article's text, however it arrives: a ``.story`` file, a
Hugging Face row, or a document given to ``answer``, ``Reader.answer`` or ``serve``.

A paragraph is a non-blank line (the ``.story`` format's rule); each is stripped and gets a
full stop when it ends no sentence (``close_paragraph``), and the paragraphs are joined by
blank lines. So one article reads the same, and is anonymized the same, from each source.
"""

from __future__ import annotations

# How a paragraph may end and still close its sentence: the list of the reference CNN /
# Daily Mail script (See et al. 2017, ``make_datafiles.py``), which Hugging Face's
# ``cnn_dailymail`` articles follow too.
SENTENCE_ENDS = (".", "!", "?", "...", "'", "`", '"', "\u2019", "\u201d", ")")


def close_paragraph(line: str) -> str:
    """A paragraph with a full stop (``" ."``) added when it ends without one.

    A photo caption or a heading is a line of its own in a ``.story`` file, most often
    without a full stop; joined to the next paragraph it would run on into it ("defeat at
    Crystal Palace" + "Manchester City captain Vincent Kompany looks dejected"), and NER
    and the grouping would read the two as one sentence. The reference script adds the
    stop, and the Hugging Face articles carry it, so a story reads the same from either.

    >>> close_paragraph("Goodison Park"), close_paragraph("He said: 'No.'")
    ('Goodison Park .', "He said: 'No.'")
    """
    return line if line.endswith(SENTENCE_ENDS) else line + " ."


def normalize_article(text: str) -> str:
    """An article's text as every source gives it to NER: one paragraph a non-blank line,
    stripped and closed (``close_paragraph``), joined by blank lines; ``""`` for blank text.

    >>> normalize_article("  Goodison Park\\r\\n\\n\\nRooney scored.  ")
    'Goodison Park .\\n\\nRooney scored.'
    """
    return "\n\n".join(close_paragraph(line.strip()) for line in text.splitlines() if line.strip())
