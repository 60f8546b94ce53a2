"""Readers of raw news stories: ``.story`` directories and archives, Hugging Face datasets.

Every reader is a generator that yields ``Story`` records, or ``Skip`` records for inputs it
could not use, one at a time: nothing reads a whole directory, archive or dataset into
memory. The order is deterministic (sorted paths, archive member order, dataset row order).

Input kinds (see ``detect_kind``):

* ``stories``: a directory searched recursively for ``*.story`` files, or one ``.story`` file.
  The story id is the file stem (CNN / Daily Mail name their files by the SHA-1 of the url).
* ``archive``: a ``.tgz`` / ``.tar.gz`` archive of ``.story`` files, read as a stream.
* ``hf_files``: a local ``.json`` / ``.jsonl`` / ``.csv`` / ``.parquet`` file with the columns
  ``article``, ``highlights`` (one highlight per line), optional ``id`` and ``url``. Its rows go
  to the ``train`` split unless the input is written ``SPLIT=PATH`` (``validation=val.csv``).
* ``questions``: a directory of DeepMind ``.question`` files (read by ``corpus.questions``).
* ``question_archive``: a ``.tgz`` / ``.tar.gz`` archive of ``.question`` files (DeepMind's
  ``cnn.tgz``), read as a stream by ``corpus.questions``; told from a story archive by its
  first members.
* ``hf_hub``: anything that does not exist locally is a Hugging Face hub dataset name
  (``cnn_dailymail`` with config ``3.0.0``), read split by split.

Splits of ``.story`` inputs are assigned later, by ``UrlLists`` or ``hash_split``.

The package's rooms: ``splits.py`` (story ids, ``hash_split``, ``UrlLists``), ``inputs.py``
(``detect_kind``, ``split_input``, the suffixes of each kind), ``archives.py`` (tar archives
read as a stream), ``stories.py`` (``.story``
files and archives, ``decode_text``, ``parse_story``), ``huggingface.py`` (local data files
and hub datasets) and ``read.py`` (``iter_stories``, the entry point).
"""

from attentive_reader.corpus.sources.archives import iter_members
from attentive_reader.corpus.sources.huggingface import check_hub, hub_reachable
from attentive_reader.corpus.sources.inputs import (
    ARCHIVE_SUFFIXES,
    HF_FILE_BUILDERS,
    QUESTION_KINDS,
    QUESTION_SUFFIX,
    STORY_SUFFIX,
    InputKind,
    detect_kind,
    split_input,
    walk_files,
)
from attentive_reader.corpus.sources.read import iter_stories
from attentive_reader.corpus.sources.splits import (
    PUBLISHER_DOMAINS,
    URL_LIST_FILES,
    Publisher,
    UrlLists,
    hash_split,
    publisher_of_url,
    text_sha1,
    url_sha1,
)
from attentive_reader.corpus.sources.stories import HIGHLIGHT_MARKER, decode_text, parse_story

__all__ = [
    "ARCHIVE_SUFFIXES",
    "HF_FILE_BUILDERS",
    "HIGHLIGHT_MARKER",
    "PUBLISHER_DOMAINS",
    "QUESTION_KINDS",
    "QUESTION_SUFFIX",
    "STORY_SUFFIX",
    "URL_LIST_FILES",
    "InputKind",
    "Publisher",
    "UrlLists",
    "decode_text",
    "detect_kind",
    "hash_split",
    "check_hub",
    "hub_reachable",
    "iter_members",
    "iter_stories",
    "parse_story",
    "publisher_of_url",
    "split_input",
    "text_sha1",
    "url_sha1",
    "walk_files",
]
