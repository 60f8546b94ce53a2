"""The shipped YAML configs, found by name wherever the toolkit is installed.

A checkout has them in ``configs/``; an install (``pip install attentive-reader``) copies them
to ``<prefix>/share/attentive-reader/configs``. ``--config attentive_reader`` and
``--config trainer/ddp_gpu`` name a shipped config (``configs/<name>.yaml``); a value with a
``.yaml`` / ``.yml`` suffix, or a file that exists, is a path, and ``configs/NAME.yaml`` (as
the docs write it) is the shipped one when there is no such file in the working folder. No imports beyond
the standard library and ``errors``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from attentive_reader.common.errors import UserError

CONFIG_SUFFIXES = (".yaml", ".yml")


def configs_dir() -> Path:
    """The shipped ``configs/`` directory (a checkout, or the copy an install puts in ``share/``).

    Raises:
        UserError: neither is there (a broken install).
    """
    candidates = [
        Path(__file__).resolve().parents[2] / "configs",
        Path(sys.prefix) / "share" / "attentive-reader" / "configs",
    ]
    for candidate in candidates:
        if (candidate / "attentive_reader.yaml").is_file():
            return candidate
    raise UserError(
        "cannot find the shipped configs/ directory; reinstall attentive-reader (the configs "
        "are installed under share/attentive-reader/configs) or pass the path of a YAML config"
    )


def shipped_configs() -> list[str]:
    """The names of every shipped config, ``attentive_reader`` or ``trainer/ddp_gpu``."""
    root = configs_dir()
    return sorted(p.relative_to(root).with_suffix("").as_posix() for p in root.rglob("*.yaml"))


def shipped_readers() -> list[str]:
    """The names of the shipped reader configs (``configs/<name>.yaml``, no folder)."""
    return [name for name in shipped_configs() if "/" not in name]


def is_config_name(value: str) -> bool:
    """Whether ``value`` names a shipped config rather than a file: no YAML suffix, and no
    file of that name here."""
    return not value.lower().endswith(CONFIG_SUFFIXES) and not Path(value).is_file()


def config_path(value: str) -> Path:
    """The YAML file of ``--config value``: a shipped config's name or a path.

    Raises:
        UserError: a path that does not exist, or a name that no shipped config has.
    """
    if not is_config_name(value):
        path = Path(value)
        if not path.is_file():
            shipped = _shipped_copy(path)
            if shipped is not None:
                return shipped
            raise UserError(
                f"config {value} does not exist; fix the path, or name a shipped config "
                "(attentive-reader configs lists them)"
            )
        return path
    shipped = configs_dir() / f"{value}.yaml"
    if not shipped.is_file():
        raise UserError(
            f"no shipped config is called {value!r}; 'attentive-reader configs' lists them "
            "(e.g. attentive_reader, trainer/cpu_debug), or pass the path of a YAML file"
        )
    return shipped


def _shipped_copy(path: Path) -> Path | None:
    """The shipped config a checkout-relative path names (``configs/trainer/ddp_gpu.yaml``,
    as the docs write them) when there is no such file here; else ``None``."""
    parts = path.parts
    if len(parts) < 2 or parts[0] != "configs" or path.suffix.lower() not in CONFIG_SUFFIXES:
        return None
    shipped = configs_dir().joinpath(*parts[1:]).with_suffix(".yaml")
    return shipped if shipped.is_file() else None


def summary(path: Path, width: int = 90) -> str:
    """The start of a config's header comment, at most ``width`` characters, cut at a word
    (empty when it has none)."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        text = line.lstrip("#").strip()
        if not text:
            break
        lines.append(text)
    text = " ".join(lines)
    if len(text) <= width:
        return text
    return text[: width - 1].rsplit(" ", 1)[0].rstrip(",;:") + "…"


def config_option_help() -> str:
    """The help of ``--config``: what it takes, with the shipped configs' names."""
    try:
        names = shipped_configs()
    except UserError:  # a broken install: the names cannot be listed
        names = []
    readers = [name for name in names if "/" not in name]
    pieces = [name for name in names if "/" in name and not name.startswith("real_news/")]
    real_news = (
        " and real_news/READER for real news" if "real_news/attentive_reader" in names else ""
    )
    listed = f" ({', '.join(readers)}; the pieces {', '.join(pieces)}{real_news})" if names else ""
    return (
        f"a shipped config's name{listed}, or a YAML file's path; give several, later ones "
        "win ('attentive-reader configs' lists them with what each is for)"
    )
