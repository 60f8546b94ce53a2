#!/usr/bin/env python
"""Preprocess news stories into an anonymized cloze dataset.

A thin wrapper around ``attentive-reader preprocess`` (same arguments), for those who run
scripts from a checkout::

    python scripts/preprocess.py cnn/stories --output data/cnn --url-lists cnn/url_lists --num-proc 4

Run ``python scripts/preprocess.py --help`` for every option.
"""

import sys

from attentive_reader.cli import main

if __name__ == "__main__":
    sys.exit(main(["preprocess", *sys.argv[1:]]))
