"""The user documentation: the MkDocs site builds strictly, every page is reachable, and the
README and the site speak to users only."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _user_pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site, built once with ``mkdocs build --strict`` (offline: nothing is fetched)."""
    pytest.importorskip("mkdocs", reason="the docs extra is part of the test extra")
    out = tmp_path_factory.mktemp("docs") / "site"
    run = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    return out


@pytest.mark.slow
def test_site_builds_strictly(site: Path) -> None:
    assert (site / "index.html").is_file()
    # the API reference was generated from docstrings, not left empty
    api = (site / "api" / "index.html").read_text(encoding="utf-8")
    assert "AttentiveReader" in api and "masked_softmax" in api
    # the site carries its own MathJax, and the pages mark their equations for it
    assert (site / "javascripts" / "mathjax" / "tex-svg.js").stat().st_size > 1_000_000
    readers = (site / "readers" / "index.html").read_text(encoding="utf-8")
    assert "javascripts/mathjax/tex-svg.js" in readers and "cdn" not in readers.lower()
    assert r'<span class="arithmatex">\(g = \tanh(W_{rg} r + W_{ug} u)\)</span>' in readers
    assert not (site / "hooks").exists()  # the build's hook is not published


EQUATION_PAGES = ("readers", "hard-attention", "glimpse-readers", "training")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None or CHROMEDRIVER is None, reason="no chromium/chromedriver")
def test_equations_render_in_a_browser_from_the_sites_own_files(site: Path, tmp_path: Path):
    """Every marked equation becomes an SVG (a broken one stays text), none holds a TeX error
    or an unknown macro, and every script the pages run is a file of the site (the browser
    opens them from disk, with no network)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.support.ui import WebDriverWait

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path / 'profile'}")
    browser = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        for page in EQUATION_PAGES:
            html = (site / page / "index.html").read_text(encoding="utf-8")
            marked = html.count('class="arithmatex"')
            assert marked >= 2, page
            browser.get((site / page / "index.html").as_uri())
            WebDriverWait(browser, 60).until(lambda b, n=marked: b.execute_script(_RENDERED) >= n)
            assert browser.execute_script(_RENDERED) == marked, page
            assert browser.execute_script(_ERRORS) == 0, page
            scripts = browser.execute_script(_SCRIPTS)
            assert scripts and all(url.startswith("file://") for url in scripts), scripts
    finally:
        browser.quit()


_RENDERED = "return document.querySelectorAll('.arithmatex mjx-container svg').length"
# A TeX error, or an unknown macro (MathJax shows it in red).
_ERRORS = (
    "return document.querySelectorAll("
    "'[data-mml-node=merror], [data-mml-node=mtext][fill=red]').length"
)
_SCRIPTS = "return Array.from(document.scripts).filter(s => s.src).map(s => s.src)"


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


def test_the_docs_hold_no_template_and_the_code_s_rules_version() -> None:
    """The pages read the same on the repository as on the site: no ``{{ ... }}`` left for a
    build step to fill in; the grouping rules' current version written where a page says it,
    equal to the code's (a new version fails here until the docs say it)."""
    from attentive_reader.corpus.grouping import GROUPING_RULES_VERSION

    pages = {page.name: page.read_text(encoding="utf-8") for page in _user_pages()}
    assert {name: re.findall(r"\{\{.*?\}\}|\{%.*?%\}", text) for name, text in pages.items()} == {
        name: [] for name in pages
    }
    said = [
        (name, int(number))
        for name, text in pages.items()
        for number in re.findall(r"current version is\s+(\d+)|\"rules_version\": (\d+)", text)
        for number in number
        if number
    ]
    assert {"anonymization.md", "evaluation.md", "preprocessing.md"} <= {name for name, _ in said}
    assert {number for _, number in said} == {GROUPING_RULES_VERSION}, said
