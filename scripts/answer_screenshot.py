#!/usr/bin/env python
"""A screenshot of the ``attentive-reader serve`` page answering one question.

Starts the page on a free local port, asks the question in headless Chromium (Selenium,
Debian ``chromium`` + ``chromium-driver``) and saves the screenshot (``docs/answering.png``
is made this way).

    python scripts/answer_screenshot.py --ckpt CKPT --document article.txt \\
        --query "@placeholder signed a deal" --out docs/answering.png
"""

from __future__ import annotations

import argparse
import shutil
import socket
import tempfile
import threading
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ckpt", required=True)
    parser.add_argument("--spacy-model", help="instead of the checkpoint's recorded pipeline")
    parser.add_argument("--document", required=True, type=Path, help="a UTF-8 text file")
    parser.add_argument("--query", required=True)
    parser.add_argument("--out", required=True, type=Path, help="the PNG to write")
    parser.add_argument("--size", default="1200,1500", help="window width,height")
    args = parser.parse_args()

    import uvicorn
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    from attentive_reader import Reader
    from attentive_reader.serve.app import create_app

    reader = Reader.load(args.ckpt, spacy_model=args.spacy_model, warn=print)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(create_app(reader), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or shutil.which("chromium-browser")
    with tempfile.TemporaryDirectory() as profile:
        for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
            options.add_argument(flag)
        options.add_argument(f"--window-size={args.size}")
        options.add_argument(f"--user-data-dir={profile}")
        driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
        try:
            driver.get(f"http://127.0.0.1:{port}/")
            driver.find_element(By.ID, "document").send_keys(
                args.document.read_text(encoding="utf-8")
            )
            driver.find_element(By.ID, "query").send_keys(args.query)
            driver.find_element(By.ID, "ask").click()
            driver.find_element(By.ID, "filled")
            driver.save_screenshot(str(args.out))
        finally:
            driver.quit()
    server.should_exit = True
    thread.join(timeout=10)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
