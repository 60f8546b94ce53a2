"""A spaCy component for the cluster tests: it stops one worker in the middle of a shard.

``test_block_once`` leaves every document as it is. The first time any process sees a
document containing ``word`` while ``flag`` does not exist, it creates ``flag``, writes its
process id there and sleeps, so that the test can SIGKILL it mid-shard; every later document
(in a retried shard, or in a run where ``flag`` exists) passes. The test's Dask workers import
this module at start-up (``preload``) so that they can load a pipeline saved with it.
"""

from __future__ import annotations

import os
import time

from spacy.language import Language
from spacy.tokens import Doc

BLOCK_SECONDS = 300  # far longer than a test waits: the test kills the process first


class BlockOnce:
    """The component: see the module docstring."""

    def __init__(self, flag: str, word: str) -> None:
        self.flag, self.word = flag, word

    def __call__(self, doc: Doc) -> Doc:
        if self.word in doc.text:
            try:
                fd = os.open(self.flag, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                return doc
            os.write(fd, f"{os.getpid()}\n".encode())
            os.close(fd)
            time.sleep(BLOCK_SECONDS)
        return doc


@Language.factory("test_block_once", default_config={"flag": "", "word": ""})
def make_block_once(nlp: Language, name: str, flag: str, word: str) -> BlockOnce:
    return BlockOnce(flag, word)
