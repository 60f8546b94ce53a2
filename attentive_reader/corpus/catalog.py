"""The public corpora ``attentive-reader download`` fetches, as a table: every file with its
URLs, its size and SHA-256 where published, and who published them.

The sizes and checksums are copied from the projects that verify these files when they
download them; each entry names its source. DeepMind's question sets and the story archives
live on Google Drive (the ids of the DMQA page, https://cs.nyu.edu/~kcho/DMQA/); the story
archives also have a copy on the Hugging Face hub with the same size and SHA-256, tried when
Drive fails.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

DMQA_PAGE = "https://cs.nyu.edu/~kcho/DMQA/"
URL_LISTS_PAGE = "https://github.com/abisee/cnn-dailymail/tree/master/url_lists"

# Repository facebookresearch/ParlAI, parlai/tasks/qacnn/build.py and
# parlai/tasks/qadailymail/build.py (DownloadableFile: the Drive id, a file name, the SHA-256
# ParlAI checks after its download; no size).
PARLAI_CNN = "ParlAI, parlai/tasks/qacnn/build.py"
PARLAI_DAILYMAIL = "ParlAI, parlai/tasks/qadailymail/build.py"
# Repository tensorflow/datasets, tensorflow_datasets/url_checksums/cnn_dailymail.txt (URL,
# size, SHA-256 of each file); the same figures for the same files in huggingface/datasets,
# datasets/cnn_dailymail/dataset_infos.json ("download_checksums").
TFDS = "TensorFlow Datasets, url_checksums/cnn_dailymail.txt"

# The Hugging Face copy of the story archives that the hub's cnn_dailymail script downloads
# (huggingface/datasets, datasets/cnn_dailymail/cnn_dailymail.py, _DL_URLS); its
# dataset_infos.json gives them TFDS's sizes and SHA-256.
_HUB_STORIES = (
    "https://huggingface.co/datasets/cnn_dailymail/resolve/"
    "11343c3752184397d56efc19a8a7cceb68089318/data/"
)
_URL_LISTS = "https://raw.githubusercontent.com/abisee/cnn-dailymail/master/url_lists/"


def drive_url(file_id: str) -> str:
    """The download URL of a Google Drive file (a confirm page comes first for large files)."""
    return f"https://drive.google.com/uc?export=download&id={file_id}"


@dataclass(frozen=True)
class RemoteFile:
    """One file to download.

    Attributes:
        path: where it goes, relative to the destination folder (``cnn.tgz``,
            ``url_lists/all_train.txt``).
        urls: where it is fetched from, tried in order.
        size: its size in bytes where published, else ``None``.
        sha256: its SHA-256 (hex) where published, else ``None`` (the command prints the
            digest of what it fetched, for the user to compare).
        source: who published the size and checksum.
    """

    path: str
    urls: tuple[str, ...]
    size: int | None = None
    sha256: str | None = None
    source: str = ""

    @property
    def name(self) -> str:
        """The file name (the last part of ``path``), also its name on a mirror."""
        return PurePosixPath(self.path).name


@dataclass(frozen=True)
class Corpus:
    """A name of ``attentive-reader download`` and its files.

    Attributes:
        name: the name on the command line.
        description: what it is, in a few words.
        files: its files.
        page: where a person can fetch the files by hand.
        use: how ``preprocess`` reads it, ``{dest}`` standing for the destination folder.
    """

    name: str
    description: str
    files: tuple[RemoteFile, ...]
    page: str
    use: str


CATALOG: dict[str, Corpus] = {
    "cnn": Corpus(
        "cnn",
        "DeepMind's CNN questions (.question files: the paper's anonymized data)",
        (
            RemoteFile(
                "cnn.tgz",
                (drive_url("0BwmD_VLjROrfTTljRDVZMFJnVWM"),),
                sha256="9405beb90c9267e7769c86fa42720b7e479bcf38c64217c0d3f456ce8cd122ce",
                source=PARLAI_CNN,
            ),
        ),
        DMQA_PAGE,
        "attentive-reader preprocess {dest}/cnn.tgz --output DIR",
    ),
    "dailymail": Corpus(
        "dailymail",
        "DeepMind's Daily Mail questions (.question files)",
        (
            RemoteFile(
                "dailymail.tgz",
                (drive_url("0BwmD_VLjROrfN0xhTDVteGQ3eG8"),),
                sha256="77bfe0d91dbc9774991bbce59895743adfc984eafffc328a7b1d34a89e2b5646",
                source=PARLAI_DAILYMAIL,
            ),
        ),
        DMQA_PAGE,
        "attentive-reader preprocess {dest}/dailymail.tgz --output DIR",
    ),
    "cnn_stories": Corpus(
        "cnn_stories",
        "the CNN stories (.story files, not anonymized)",
        (
            RemoteFile(
                "cnn_stories.tgz",
                (drive_url("0BwmD_VLjROrfTHk4NFg2SndKcjQ"), _HUB_STORIES + "cnn_stories.tgz"),
                size=158_577_824,
                sha256="e8fbc0027e54e0a916abd9c969eb35f708ed1467d7ef4e3b17a56739d65cb200",
                source=TFDS,
            ),
        ),
        DMQA_PAGE,
        "attentive-reader preprocess {dest}/cnn_stories.tgz --url-lists {dest}/url_lists "
        "--output DIR",
    ),
    "dailymail_stories": Corpus(
        "dailymail_stories",
        "the Daily Mail stories (.story files, not anonymized)",
        (
            RemoteFile(
                "dailymail_stories.tgz",
                (
                    drive_url("0BwmD_VLjROrfM1BxdkxVaTY2bWs"),
                    _HUB_STORIES + "dailymail_stories.tgz",
                ),
                size=375_893_739,
                sha256="ad69010002210b7c406718248ee66e65868b9f6820f163aa966369878d14147e",
                source=TFDS,
            ),
        ),
        DMQA_PAGE,
        "attentive-reader preprocess {dest}/dailymail_stories.tgz --url-lists {dest}/url_lists "
        "--output DIR",
    ),
    "url_lists": Corpus(
        "url_lists",
        "the url lists that define the train / validation / test splits of the stories",
        (
            RemoteFile(
                "url_lists/all_train.txt",
                (_URL_LISTS + "all_train.txt",),
                size=46_424_688,
                sha256="a5cee49f3a6c862c26ce29308236d2a99625ab6c86a43be22d5206b2790d8029",
                source=TFDS,
            ),
            RemoteFile(
                "url_lists/all_val.txt",
                (_URL_LISTS + "all_val.txt",),
                size=2_433_674,
                sha256="81887e982b045083409c6ee838aede8ff4b97291605bcfb21bffc456a16991db",
                source=TFDS,
            ),
            RemoteFile(
                "url_lists/all_test.txt",
                (_URL_LISTS + "all_test.txt",),
                size=2_109_547,
                sha256="c4f5efb5ec2126430a5c156efbd13d0e9c4cb490169e552c38b4a51981a009bd",
                source=TFDS,
            ),
        ),
        URL_LISTS_PAGE,
        "attentive-reader preprocess ... --url-lists {dest}/url_lists",
    ),
}
