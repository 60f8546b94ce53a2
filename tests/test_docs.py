"""The user documentation: the MkDocs site builds strictly, every page is reachable, and the
README and the site speak to users only."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _user_pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]


def test_site_builds_strictly(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs", reason="the docs extra is part of the test extra")
    run = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert (tmp_path / "site" / "index.html").is_file()
    # the API reference was generated from docstrings, not left empty
    api = (tmp_path / "site" / "api" / "index.html").read_text(encoding="utf-8")
    assert "AttentiveReader" in api and "masked_softmax" in api


def test_every_page_is_in_the_navigation() -> None:
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    listed = set(re.findall(r":\s*([\w-]+\.md)\s*$", config, flags=re.M))
    pages = {p.name for p in DOCS.glob("*.md")}
    assert pages - listed == set(), "add these pages to mkdocs.yml's nav"
    assert listed - pages == set(), "mkdocs.yml's nav names pages that do not exist"


def test_readme_links_resolve() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme)
    assert links, "the README links into the guide"
    missing = [link for link in links if not (ROOT / link).exists()]
    assert missing == []


@pytest.mark.parametrize("page", _user_pages(), ids=lambda p: p.name)
def test_user_documentation_never_names_our_machines(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    assert "../shared" not in text and "/work/" not in text
