"""``attentive-reader serve`` in a real browser: uvicorn on a free port, headless Chromium
driven by Selenium (Debian ``chromium`` + ``chromium-driver``; skipped where absent)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.serve.live import running

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
# Set to a path to keep the screenshot (docs/answering.png is made this way).
SCREENSHOT = os.environ.get("ATTENTIVE_READER_SCREENSHOT")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        CHROMIUM is None or CHROMEDRIVER is None, reason="chromium / chromedriver not on PATH"
    ),
]

ARTICLE = (
    "Shares in Greystone Bank rose on Monday after Susan Kennedy, its chief executive, flew "
    "to Lisbon to sign a deal with Alderton Pharmaceuticals.\n\n"
    "Kennedy said the agreement would bring new jobs to Lisbon. <script>alert('x')</script> "
    "Analysts at Dunmore Bank called the move bold, and shares of Alderton Pharmaceuticals "
    "rose too."
)
QUERY = "@placeholder signed a deal with Alderton Pharmaceuticals in Lisbon"


@pytest.fixture(scope="module")
def server(trained):
    from attentive_reader import Reader
    from attentive_reader.serve.app import create_app

    reader = Reader.load(trained.ckpt)
    with running(create_app(reader, data=trained.data)) as url:
        yield url, reader


@pytest.fixture
def browser(tmp_path):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1200,1700",
        f"--user-data-dir={tmp_path / 'profile'}",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def _wait_for(browser, element_id: str, seconds: float = 60):
    """The element with ``element_id`` once the page that holds it has loaded (a click that
    submits a form returns before the next page is there, and a busy machine is slow)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(browser, seconds).until(
        expected_conditions.presence_of_element_located((By.ID, element_id))
    )


def test_ask_in_a_browser(server, browser, tmp_path):
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.by import By

    url, reader = server
    browser.get(url + "/")
    browser.find_element(By.ID, "document").send_keys(ARTICLE)
    browser.find_element(By.ID, "query").send_keys(QUERY)
    browser.find_element(By.ID, "ask").click()
    filled = _wait_for(browser, "filled").text  # the form's answer page, once it has loaded
    expected = reader.answer(ARTICLE, QUERY)
    assert filled == expected.filled
    names = [
        row.find_elements(By.TAG_NAME, "td")[1].text
        for row in browser.find_elements(By.CSS_SELECTOR, "#candidates tr")[1:]
    ]
    assert names == [c.name for c in expected.candidates]
    # The <script> of the document is shown as text and never ran.
    assert "<script>" not in browser.page_source.split("<textarea")[0]
    names_view = browser.find_element(By.ID, "names-view")
    assert names_view.is_displayed() and "Susan Kennedy" in names_view.text
    tokens = [t.text for t in names_view.find_elements(By.CSS_SELECTOR, ".doc .t")]
    assert "<" in tokens and "script" in tokens
    with pytest.raises(NoAlertPresentException):  # alert('x') never ran
        _ = browser.switch_to.alert.text
    # Switch to the markers view: CSS only, no script.
    markers_view = browser.find_element(By.ID, "markers-view")
    assert not markers_view.is_displayed()
    browser.find_element(By.CSS_SELECTOR, "label[for=view-markers]").click()
    assert markers_view.is_displayed() and not names_view.is_displayed()
    assert "@entity1" in markers_view.text
    browser.find_element(By.CSS_SELECTOR, "label[for=view-names]").click()
    shot = Path(SCREENSHOT) if SCREENSHOT else tmp_path / "page.png"
    assert browser.save_screenshot(str(shot))
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


def test_browse_dataset_examples(server, browser):
    from selenium.webdriver.common.by import By

    url, _ = server
    browser.get(url + "/examples?split=test")
    links = browser.find_elements(By.CSS_SELECTOR, "a[href^='/examples/test/']")
    assert links
    links[0].click()
    assert _wait_for(browser, "gold").text
    assert browser.find_element(By.ID, "filled").text
